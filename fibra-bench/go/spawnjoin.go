package main

import "sync"

// spawn-join: the main goroutine starts `tasks` goroutines (goroutine i
// stores i in its slot of a slice: Go has no join handles) and waits for
// them all with a WaitGroup. Result: the sum of the slots.
func spawnJoin(args []string) {
	fs, runs := newFlags("spawn-join")
	tasks := fs.Int("tasks", 1000000, "goroutines to start and join")
	fs.Parse(args)
	n := *tasks
	measure(*runs, func() uint64 {
		results := make([]uint64, n)
		var wg sync.WaitGroup
		wg.Add(n)
		for i := 0; i < n; i++ {
			go func() {
				results[i] = uint64(i)
				wg.Done()
			}()
		}
		wg.Wait()
		var sum uint64
		for _, v := range results {
			sum += v
		}
		return sum
	})
}
