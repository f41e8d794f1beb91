package main

// spsc: one producer goroutine sends 0..messages-1 over a channel of the
// given capacity (0: unbuffered, a rendezvous), then closes it; the consumer
// (the main goroutine) sums until the channel is closed. Result: the sum.
func spsc(args []string) {
	fs, runs := newFlags("spsc")
	messages := fs.Uint64("messages", 1000000, "integers to send")
	capacity := fs.Int("capacity", 0, "channel capacity (0: unbuffered)")
	fs.Parse(args)
	n, c := *messages, *capacity
	measure(*runs, func() uint64 {
		ch := make(chan uint64, c)
		go func() {
			for i := uint64(0); i < n; i++ {
				ch <- i
			}
			close(ch)
		}()
		var sum uint64
		for v := range ch {
			sum += v
		}
		return sum
	})
}
