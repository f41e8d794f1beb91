package main

import (
	"math"
	"sort"
	"sync"
	"time"
)

// timers: the main goroutine starts `tasks` goroutines; goroutine i takes
// its deadline as now plus timerSleepMs(i) (1 to 50 ms, the same seeded
// spread as the Rust rows), calls time.Sleep and stores how late it woke
// (actual wake minus deadline) in its slot; a WaitGroup is the join.
// Result: the goroutines that did not wake before their deadline. Figures:
// p50_us and p99_us of the lateness.
func timers(args []string) {
	fs, runs := newFlags("timers")
	tasks := fs.Int("tasks", 100000, "concurrent sleeps")
	fs.Parse(args)
	n := *tasks
	measureFigures(*runs, func() (uint64, []figure) {
		lateness := make([]time.Duration, n)
		var wg sync.WaitGroup
		wg.Add(n)
		for i := 0; i < n; i++ {
			go func() {
				d := time.Duration(timerSleepMs(uint64(i))) * time.Millisecond
				deadline := time.Now().Add(d)
				time.Sleep(d)
				lateness[i] = time.Since(deadline)
				wg.Done()
			}()
		}
		wg.Wait()
		var woken uint64
		late := make([]time.Duration, 0, n)
		for _, l := range lateness {
			if l >= 0 {
				woken++
				late = append(late, l)
			}
		}
		return woken, percentileFigures(late)
	})
}

// timerSleepMs is goroutine i's sleep in milliseconds: 1 to 50, from a
// SplitMix64 hash of i (fibra-bench/src/workloads/timers.rs computes the
// same).
func timerSleepMs(i uint64) uint64 {
	z := i + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return 1 + z%50
}

// percentileFigures gives the nearest-rank p50 and p99 of `samples` in
// microseconds, as the figures p50_us and p99_us.
func percentileFigures(samples []time.Duration) []figure {
	sort.Slice(samples, func(a, b int) bool { return samples[a] < samples[b] })
	at := func(p float64) float64 {
		if len(samples) == 0 {
			return 0
		}
		rank := int(math.Ceil(p / 100 * float64(len(samples))))
		rank = min(max(rank, 1), len(samples))
		return float64(samples[rank-1].Nanoseconds()) / 1e3
	}
	return []figure{{"p50_us", at(50)}, {"p99_us", at(99)}}
}
