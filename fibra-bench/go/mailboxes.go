package main

// The `racket` group: Racket's thread-mailbox micro-benchmarks (mbox-test.ss,
// 2008), one subcommand per workload, each with -iterations=N.
//
// Primitives:
//   - semaphore: a `chan struct{}` holding one token per available permit
//     (post = send, wait = receive), the idiomatic Go semaphore; its capacity
//     is large enough that a post never blocks. The other common choice, a
//     sync.Mutex + sync.Cond counting semaphore, is faster on some of the
//     three semaphore workloads and slower on others, so the suite keeps
//     the idiom.
//     Zero-size elements: the channel allocates no buffer.
//   - mailbox and buffered: a buffered channel big enough that a send never
//     blocks (iterations for asymmetric, 1 for symmetric, where at most one
//     message is in flight), standing in for an unbounded queue (a thread's
//     mailbox, Racket's async channel): Go has no unbounded channel, so the
//     two are the same program.
//   - channel: an unbuffered channel (a rendezvous).
//   - switch: runtime.Gosched().
//
// Results: the sum of the values received (asymmetric: 0..N-1; symmetric:
// the replies i+1 to pings i), or a count of the waits done (semaphores),
// or of the yields (switch-baseline: both goroutines, 2N).

import (
	"runtime"
	"sync"
)

// iterationsFlags parses -iterations and -runs.
func iterationsFlags(name string, args []string) (runs int, n uint64) {
	fs, r := newFlags(name)
	iterations := fs.Uint64("iterations", 1000000, "iterations")
	fs.Parse(args)
	return *r, *iterations
}

// semaBaseline: wait then post on a 1-permit semaphore, N times, on one
// goroutine (Racket's `(call-with-semaphore sema void)`).
func semaBaseline(args []string) {
	runs, n := iterationsFlags("sema-baseline", args)
	measure(runs, func() uint64 {
		sema := make(chan struct{}, 1)
		sema <- struct{}{}
		var count uint64
		for i := uint64(0); i < n; i++ {
			<-sema
			count++
			sema <- struct{}{}
		}
		return count
	})
}

// switchBaseline: two goroutines each yield N times.
func switchBaseline(args []string) {
	runs, n := iterationsFlags("switch-baseline", args)
	measure(runs, func() uint64 {
		var wg sync.WaitGroup
		var counts [2]uint64
		for t := range counts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := uint64(0); i < n; i++ {
					runtime.Gosched()
					counts[t]++
				}
			}()
		}
		wg.Wait()
		return counts[0] + counts[1]
	})
}

// asymmetricSema: a producer goroutine posts N times, a consumer goroutine
// waits N times and counts.
func asymmetricSema(args []string) {
	runs, n := iterationsFlags("asymmetric-sema", args)
	measure(runs, func() uint64 {
		sema := make(chan struct{}, n)
		done := make(chan uint64)
		go func() {
			var count uint64
			for i := uint64(0); i < n; i++ {
				<-sema
				count++
			}
			done <- count
		}()
		go func() {
			for i := uint64(0); i < n; i++ {
				sema <- struct{}{}
			}
		}()
		return <-done
	})
}

// symmetricSema: ping-pong over two semaphores; the initiator counts its
// waits.
func symmetricSema(args []string) {
	runs, n := iterationsFlags("symmetric-sema", args)
	measure(runs, func() uint64 {
		ping := make(chan struct{}, 1)
		pong := make(chan struct{}, 1)
		done := make(chan uint64)
		go func() {
			for i := uint64(0); i < n; i++ {
				<-ping
				pong <- struct{}{}
			}
		}()
		go func() {
			var count uint64
			for i := uint64(0); i < n; i++ {
				ping <- struct{}{}
				<-pong
				count++
			}
			done <- count
		}()
		return <-done
	})
}

// asymmetric: a producer goroutine sends 0..N-1 over a channel of capacity
// `capacity`; a consumer goroutine receives N values and sums them.
func asymmetric(name string, args []string, capacity func(n uint64) uint64) {
	runs, n := iterationsFlags(name, args)
	measure(runs, func() uint64 {
		ch := make(chan uint64, capacity(n))
		done := make(chan uint64)
		go func() {
			var sum uint64
			for i := uint64(0); i < n; i++ {
				sum += <-ch
			}
			done <- sum
		}()
		go func() {
			for i := uint64(0); i < n; i++ {
				ch <- i
			}
		}()
		return <-done
	})
}

// symmetric: the initiator sends i for i in 0..N-1 and waits for the reply
// i+1, over two channels of capacity `capacity`; it sums the replies.
func symmetric(name string, args []string, capacity int) {
	runs, n := iterationsFlags(name, args)
	measure(runs, func() uint64 {
		ping := make(chan uint64, capacity)
		pong := make(chan uint64, capacity)
		done := make(chan uint64)
		go func() {
			for i := uint64(0); i < n; i++ {
				pong <- (<-ping) + 1
			}
		}()
		go func() {
			var sum uint64
			for i := uint64(0); i < n; i++ {
				ping <- i
				sum += <-pong
			}
			done <- sum
		}()
		return <-done
	})
}

// neverFull: room for every message of an asymmetric run.
func neverFull(n uint64) uint64 { return n }

// unbuffered: a rendezvous channel.
func unbuffered(uint64) uint64 { return 0 }

func asymmetricMailbox(args []string)  { asymmetric("asymmetric-mailbox", args, neverFull) }
func asymmetricChannel(args []string)  { asymmetric("asymmetric-channel", args, unbuffered) }
func asymmetricBuffered(args []string) { asymmetric("asymmetric-buffered", args, neverFull) }
func symmetricMailbox(args []string)   { symmetric("symmetric-mailbox", args, 1) }
func symmetricChannel(args []string)   { symmetric("symmetric-channel", args, 0) }
func symmetricBuffered(args []string)  { symmetric("symmetric-buffered", args, 1) }
