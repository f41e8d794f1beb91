package main

import (
	"sync"
)

// The `parasites` group: the parasitic-threads paper's workloads. Every
// computation the fibra rows start as a task or a parasite is a goroutine
// here.

// mix is splitmix64's finaliser (the Rust rows have the same).
func mix(x uint64) uint64 {
	z := x + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// lcgSteps steps a linear congruential generator n times from x (the Rust
// rows have the same).
func lcgSteps(x, n uint64) uint64 {
	for i := uint64(0); i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// spawn-cost: `tasks` goroutines each compute mix(i)>>32. join=all: each
// stores its value in its slot of a slice and a WaitGroup joins them all;
// join=each: each sends its value on an unbuffered channel the main
// goroutine receives from right after starting it. Result: the sum.
func spawnCost(args []string) {
	fs, runs := newFlags("spawn-cost")
	tasks := fs.Int("tasks", 200000, "computations to start and join")
	join := fs.String("join", "all", "all or each")
	fs.Parse(args)
	n := *tasks
	switch *join {
	case "all":
		measure(*runs, func() uint64 {
			results := make([]uint64, n)
			var wg sync.WaitGroup
			wg.Add(n)
			for i := 0; i < n; i++ {
				go func() {
					results[i] = mix(uint64(i)) >> 32
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
	case "each":
		measure(*runs, func() uint64 {
			ch := make(chan uint64)
			var sum uint64
			for i := 0; i < n; i++ {
				go func() { ch <- mix(uint64(i)) >> 32 }()
				sum += <-ch
			}
			return sum
		})
	default:
		panic("spawn-cost: join must be all or each")
	}
}

// async-send: a producer sends 0..messages-1 to a consumer on an
// unbuffered channel, itself (variant=sync) or each value from a goroutine
// of its own (variant=async: `go func() { ch <- v }()`). Result: the
// consumer's sum.
func asyncSend(args []string) {
	fs, runs := newFlags("async-send")
	messages := fs.Uint64("messages", 200000, "values to send")
	variant := fs.String("variant", "sync", "sync or async")
	fs.Parse(args)
	m := *messages
	async := false
	switch *variant {
	case "sync":
	case "async":
		async = true
	default:
		panic("async-send: variant must be sync or async")
	}
	measure(*runs, func() uint64 {
		ch := make(chan uint64)
		go func() {
			for i := uint64(0); i < m; i++ {
				if async {
					go func() { ch <- i }()
				} else {
					ch <- i
				}
			}
		}()
		var sum uint64
		for i := uint64(0); i < m; i++ {
			sum += <-ch
		}
		return sum
	})
}

// choose-all: `producers` goroutines each send 0..messages-1 on an
// unbuffered channel of their own; the consumer, round after round,
// receives one value from each channel in turn. Result: the sum.
func chooseAll(args []string) {
	fs, runs := newFlags("choose-all")
	producers := fs.Int("producers", 2, "producers, each on its own channel")
	messages := fs.Uint64("messages", 100000, "values per producer")
	fs.Parse(args)
	p, m := *producers, *messages
	measure(*runs, func() uint64 {
		chans := make([]chan uint64, p)
		for j := range chans {
			ch := make(chan uint64)
			chans[j] = ch
			go func() {
				for i := uint64(0); i < m; i++ {
					ch <- i
				}
			}()
		}
		var sum uint64
		for i := uint64(0); i < m; i++ {
			for _, ch := range chans {
				sum += <-ch
			}
		}
		return sum
	})
}

// inflation: `tasks` goroutines each step the generator `iterations` times
// from their index, in chunks of yield_every (without yielding: Go
// preempts goroutines); a WaitGroup joins them. Result: the sum of the top
// halves of their last values.
func inflation(args []string) {
	fs, runs := newFlags("inflation")
	tasks := fs.Int("tasks", 32, "loops")
	iterations := fs.Uint64("iterations", 4000000, "steps per loop")
	yieldEvery := fs.Uint64("yield_every", 10000, "steps per chunk")
	fs.Parse(args)
	n, iters, chunk := *tasks, *iterations, *yieldEvery
	measure(*runs, func() uint64 {
		results := make([]uint64, n)
		var wg sync.WaitGroup
		wg.Add(n)
		for i := 0; i < n; i++ {
			go func() {
				x, left := uint64(i), iters
				for left > 0 {
					step := min(left, chunk)
					x = lcgSteps(x, step)
					left -= step
				}
				results[i] = x >> 32
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

// parFibCall is the call fib(n), replying on `reply`: n >= 2 starts
// goroutines for n-1 and n-2 replying on a channel of capacity 2.
func parFibCall(n uint64, reply chan<- uint64) {
	if n < 2 {
		reply <- n
		return
	}
	ch := make(chan uint64, 2)
	go parFibCall(n-1, ch)
	go parFibCall(n-2, ch)
	a := <-ch
	reply <- a + <-ch
}

// par-fib: fib(n) with a goroutine per call. Result: fib(n).
func parFib(args []string) {
	fs, runs := newFlags("par-fib")
	n := fs.Uint64("n", 27, "which Fibonacci number")
	fs.Parse(args)
	measure(*runs, func() uint64 {
		ch := make(chan uint64, 1)
		go parFibCall(*n, ch)
		return <-ch
	})
}

// takReply is a call's position among its siblings and its value.
type takReply struct {
	position int
	value    uint64
}

// parTakCall is the call tak(x, y, z), replying on `reply`: y < x starts
// goroutines for the three inner calls (replying on a channel of capacity
// 3), then one for the outer call, which answers the caller.
func parTakCall(x, y, z uint64, reply chan<- takReply, position int) {
	if y >= x {
		reply <- takReply{position, z}
		return
	}
	ch := make(chan takReply, 3)
	go parTakCall(x-1, y, z, ch, 0)
	go parTakCall(y-1, z, x, ch, 1)
	go parTakCall(z-1, x, y, ch, 2)
	var args [3]uint64
	for i := 0; i < 3; i++ {
		r := <-ch
		args[r.position] = r.value
	}
	go parTakCall(args[0], args[1], args[2], reply, position)
}

// par-tak: tak(x, y, z) with a goroutine per call. Result: the value.
func parTak(args []string) {
	fs, runs := newFlags("par-tak")
	x := fs.Uint64("x", 21, "tak's x")
	y := fs.Uint64("y", 14, "tak's y")
	z := fs.Uint64("z", 7, "tak's z")
	fs.Parse(args)
	measure(*runs, func() uint64 {
		ch := make(chan takReply, 1)
		go parTakCall(*x, *y, *z, ch, 0)
		return (<-ch).value
	})
}

// merge merges two sorted runs into a new slice.
func merge(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i] <= b[j] {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// mergesortCall sorts v: each half in a goroutine that sends its sorted
// half on a channel.
func mergesortCall(v []uint32) []uint32 {
	if len(v) <= 1 {
		return v
	}
	mid := len(v) / 2
	left, right := make(chan []uint32, 1), make(chan []uint32, 1)
	go func() { left <- mergesortCall(v[:mid]) }()
	go func() { right <- mergesortCall(v[mid:]) }()
	l := <-left
	return merge(l, <-right)
}

// mergesort: sorts the permutation v[i] = i*999983 mod size with a
// goroutine per half. Result: sum((i+1) * sorted[i]).
func mergesort(args []string) {
	fs, runs := newFlags("mergesort")
	size := fs.Uint64("size", 1000000, "numbers to sort")
	fs.Parse(args)
	n := *size
	measure(*runs, func() uint64 {
		v := make([]uint32, n)
		for i := uint64(0); i < n; i++ {
			v[i] = uint32(i * 999983 % n)
		}
		sorted := mergesortCall(v)
		var sum uint64
		for i, x := range sorted {
			sum += uint64(i+1) * uint64(x)
		}
		return sum
	})
}
