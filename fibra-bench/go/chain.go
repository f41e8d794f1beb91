package main

// chain: a sender goroutine sends 0..messages-1 into a chain of `links`
// relay goroutines over unbuffered channels; the main goroutine receives
// from the end and sums. The sender closes its channel when done and every
// relay closes its output when its input is closed. Result: the sum.
func chain(args []string) {
	fs, runs := newFlags("chain")
	links := fs.Int("links", 10, "relay goroutines between sender and receiver")
	messages := fs.Uint64("messages", 20000, "messages to send through the chain")
	fs.Parse(args)
	l, m := *links, *messages
	measure(*runs, func() uint64 {
		first := make(chan uint64)
		end := first
		for i := 0; i < l; i++ {
			next := make(chan uint64)
			go relay(end, next)
			end = next
		}
		go func() {
			for i := uint64(0); i < m; i++ {
				first <- i
			}
			close(first)
		}()
		var sum uint64
		for v := range end {
			sum += v
		}
		return sum
	})
}

func relay(in <-chan uint64, out chan<- uint64) {
	for v := range in {
		out <- v
	}
	close(out)
}
