package main

// ping-pong: `pairs` pairs of goroutines; in each, the pinger sends i for i
// in 0..round_trips-1 and waits for the ponger's reply i+1, over two
// unbuffered channels. Result: the sum of all replies.
func pingPong(args []string) {
	fs, runs := newFlags("ping-pong")
	pairs := fs.Int("pairs", 1, "pairs of goroutines")
	roundTrips := fs.Uint64("round_trips", 100000, "round trips per pair")
	fs.Parse(args)
	p, m := *pairs, *roundTrips
	measure(*runs, func() uint64 {
		sums := make(chan uint64, p)
		for i := 0; i < p; i++ {
			ping := make(chan uint64)
			pong := make(chan uint64)
			go func() {
				for v := range ping {
					pong <- v + 1
				}
			}()
			go func() {
				var sum uint64
				for i := uint64(0); i < m; i++ {
					ping <- i
					sum += <-pong
				}
				close(ping)
				sums <- sum
			}()
		}
		var total uint64
		for i := 0; i < p; i++ {
			total += <-sums
		}
		return total
	})
}
