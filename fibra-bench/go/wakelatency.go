package main

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// The wake-latency constants, the same as the Rust rows'
// (fibra-bench/src/workloads/wake_latency.rs).
const (
	// threadGap is the thread waker's pause before each wake.
	threadGap = 200 * time.Microsecond
	// timerSleep is the timer waker's sleep.
	timerSleep = time.Millisecond
	// busyChunk is how long the busy goroutine computes between yields.
	busyChunk = 2 * time.Millisecond
	// busyCapPerWake: the busy goroutine stops after this much time per
	// iteration in all.
	busyCapPerWake = 10 * time.Millisecond
)

// wake-latency: the main goroutine is the waiter; it waits `iterations`
// times and, each time it runs again, takes the latency from a stamp
// taken just before the wake. Figures: p50_us and p99_us of the
// latencies. Result: the wakes observed in order.
//
// -waker=thread: a goroutine locked to its OS thread pauses threadGap,
// stamps the time and sends (sequence, stamp) on a chan of capacity 1; the
// waiter acknowledges on another chan. -waker=timer: the waiter sleeps
// timerSleep (time.Sleep); the stamp is the deadline.
//
// -variant=busy: a second goroutine computes for busyChunk at a time, then
// calls runtime.Gosched, until the waiter is done (at most busyCapPerWake
// per iteration in all); the waiter starts once it runs. -variant=idle:
// nothing else runs.
func wakeLatency(args []string) {
	fs, runs := newFlags("wake-latency")
	variant := fs.String("variant", "idle", "idle or busy")
	waker := fs.String("waker", "thread", "thread or timer")
	iterations := fs.Int("iterations", 1000, "wakes per run")
	fs.Parse(args)
	if (*variant != "idle" && *variant != "busy") || (*waker != "thread" && *waker != "timer") {
		fmt.Fprintf(os.Stderr, "wake-latency: bad -variant=%s or -waker=%s\n", *variant, *waker)
		os.Exit(2)
	}
	n := *iterations
	measureFigures(*runs, func() (uint64, []figure) {
		var busy *busyGoroutine
		if *variant == "busy" {
			busy = startBusy(time.Duration(n) * busyCapPerWake)
		}
		latencies := make([]time.Duration, 0, n)
		var wakes uint64
		if *waker == "thread" {
			type stamp struct {
				seq int
				at  time.Time
			}
			stamps := make(chan stamp, 1)
			acks := make(chan struct{})
			go func() {
				runtime.LockOSThread()
				for seq := 0; seq < n; seq++ {
					time.Sleep(threadGap)
					stamps <- stamp{seq, time.Now()}
					<-acks
				}
			}()
			for i := 0; i < n; i++ {
				s := <-stamps
				latency := time.Since(s.at)
				if s.seq == i {
					wakes++
					latencies = append(latencies, latency)
				}
				acks <- struct{}{}
			}
		} else {
			for i := 0; i < n; i++ {
				deadline := time.Now().Add(timerSleep)
				time.Sleep(timerSleep)
				if late := time.Since(deadline); late >= 0 {
					wakes++
					latencies = append(latencies, late)
				}
			}
		}
		if busy != nil {
			busy.finish()
		}
		return wakes, percentileFigures(latencies)
	})
}

// busyGoroutine is the busy variant's computing goroutine.
type busyGoroutine struct {
	stop atomic.Bool
	done chan struct{}
}

// startBusy starts the busy goroutine, which stops when told or after
// `limit`, and returns once it runs.
func startBusy(limit time.Duration) *busyGoroutine {
	b := &busyGoroutine{done: make(chan struct{})}
	var started atomic.Bool
	go func() {
		defer close(b.done)
		begun := time.Now()
		started.Store(true)
		for !b.stop.Load() && time.Since(begun) < limit {
			start := time.Now()
			for time.Since(start) < busyChunk {
			}
			runtime.Gosched()
		}
	}()
	for !started.Load() {
		runtime.Gosched()
	}
	return b
}

// finish stops the busy goroutine and waits for it.
func (b *busyGoroutine) finish() {
	b.stop.Store(true)
	<-b.done
}
