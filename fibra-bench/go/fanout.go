package main

// fan-out: one producer goroutine sends 0..messages-1 on one unbuffered
// channel, then closes it; `consumers` goroutines compete to receive and
// each sums what it gets. Result: the total.
func fanOut(args []string) {
	fs, runs := newFlags("fan-out")
	consumers := fs.Int("consumers", 10, "consumer goroutines")
	messages := fs.Uint64("messages", 100000, "messages to send")
	fs.Parse(args)
	d, m := *consumers, *messages
	measure(*runs, func() uint64 {
		ch := make(chan uint64)
		sums := make(chan uint64, d)
		for i := 0; i < d; i++ {
			go func() {
				var sum uint64
				for v := range ch {
					sum += v
				}
				sums <- sum
			}()
		}
		go func() {
			for i := uint64(0); i < m; i++ {
				ch <- i
			}
			close(ch)
		}()
		var total uint64
		for i := 0; i < d; i++ {
			total += <-sums
		}
		return total
	})
}
