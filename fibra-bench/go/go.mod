module fibrabench

go 1.22
