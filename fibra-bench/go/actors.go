package main

import "sort"

// The actor workloads (the `erlang` and `savina` groups): goroutines with a
// buffered channel as inbox, each buffer large enough that no send can
// deadlock; the same computations as fibra-bench/src/workloads/actors/kernels.rs.

const hackbenchGroup = 20

func lcg(x uint64) uint64 { return (x*1103515245 + 12345) & 0x7fffffff }

func mandelbrotImage(size uint64) uint64 {
	s := float64(size)
	var total uint64
	for y := uint64(0); y < size; y++ {
		ci := float64(y)*3.0/s - 1.5
		for x := uint64(0); x < size; x++ {
			cr := float64(x)*3.0/s - 2.0
			zr, zi := 0.0, 0.0
			var i uint64
			for i < 255 && zr*zr+zi*zi <= 4.0 {
				nextZr := zr*zr - zi*zi + cr
				zi = 2.0*zr*zi + ci
				zr = nextZr
				i++
			}
			total += i
		}
	}
	return total
}

func randomMiddle(seed, values uint64) uint64 {
	numbers := make([]uint64, values)
	x := seed
	for i := range numbers {
		x = lcg(x)
		numbers[i] = x
	}
	sort.Slice(numbers, func(a, b int) bool { return numbers[a] < numbers[b] })
	upper := numbers[len(numbers)/2:]
	if len(upper) == 0 {
		return 0
	}
	return upper[0]
}

type bang struct {
	ping bool
	from int
}

func bigBang(args []string) {
	fs, runs := newFlags("big-bang")
	n := fs.Int("processes", 500, "processes")
	fs.Parse(args)
	measure(*runs, func() uint64 {
		inboxes := make([]chan bang, *n)
		for i := range inboxes {
			inboxes[i] = make(chan bang, 2**n)
		}
		done := make(chan uint64, *n)
		for me := range inboxes {
			go func() {
				for other, inbox := range inboxes {
					if other != me {
						inbox <- bang{ping: true, from: me}
					}
				}
				pings, pongs := 0, 0
				for pings+1 < *n || pongs+1 < *n {
					m := <-inboxes[me]
					if m.ping {
						inboxes[m.from] <- bang{}
						pings++
					} else {
						pongs++
					}
				}
				done <- uint64(pongs)
			}()
		}
		var total uint64
		for range inboxes {
			total += <-done
		}
		return total
	})
}

func hackbench(args []string) {
	fs, runs := newFlags("hackbench")
	groups := fs.Int("groups", 10, "groups")
	messages := fs.Int("messages", 100, "messages per writer and listener")
	fs.Parse(args)
	measure(*runs, func() uint64 {
		done := make(chan uint64, *groups*hackbenchGroup)
		for g := 0; g < *groups; g++ {
			listeners := make([]chan uint64, hackbenchGroup)
			for i := range listeners {
				listeners[i] = make(chan uint64, hackbenchGroup**messages)
				go func(inbox chan uint64) {
					var sum uint64
					for k := 0; k < hackbenchGroup**messages; k++ {
						sum += <-inbox
					}
					done <- sum
				}(listeners[i])
			}
			for w := 0; w < hackbenchGroup; w++ {
				go func() {
					for m := 0; m < *messages; m++ {
						for _, l := range listeners {
							l <- uint64(m)
						}
					}
				}()
			}
		}
		var total uint64
		for i := 0; i < *groups*hackbenchGroup; i++ {
			total += <-done
		}
		return total
	})
}

// joinInTurn starts `tasks` goroutines running work(i) (i from 1) and
// receives their results in turn, each through its own channel.
func joinInTurn(tasks int, work func(i uint64) uint64) uint64 {
	results := make([]chan uint64, tasks)
	for i := range results {
		results[i] = make(chan uint64, 1)
		go func() { results[i] <- work(uint64(i + 1)) }()
	}
	var total uint64
	for _, r := range results {
		total += <-r
	}
	return total
}

func mandelbrot(args []string) {
	fs, runs := newFlags("mandelbrot")
	size := fs.Uint64("size", 250, "image side")
	tasks := fs.Int("tasks", 16, "tasks")
	fs.Parse(args)
	measure(*runs, func() uint64 {
		return joinInTurn(*tasks, func(uint64) uint64 { return mandelbrotImage(*size) })
	})
}

func random(args []string) {
	fs, runs := newFlags("random")
	tasks := fs.Int("tasks", 24, "tasks")
	values := fs.Uint64("values", 100000, "numbers per task")
	fs.Parse(args)
	measure(*runs, func() uint64 {
		return joinInTurn(*tasks, func(seed uint64) uint64 { return randomMiddle(seed, *values) })
	})
}

type countMsg struct {
	add   uint64
	reply chan uint64
}

func count(args []string) {
	fs, runs := newFlags("count")
	messages := fs.Uint64("messages", 1000000, "messages")
	fs.Parse(args)
	measure(*runs, func() uint64 {
		counter := make(chan countMsg, 1024)
		go func() {
			var total uint64
			for m := range counter {
				if m.reply != nil {
					m.reply <- total
					return
				}
				total += m.add
			}
		}()
		for i := uint64(0); i < *messages; i++ {
			counter <- countMsg{add: i}
		}
		reply := make(chan uint64, 1)
		counter <- countMsg{reply: reply}
		return <-reply
	})
}

func fjcreate(args []string) {
	fs, runs := newFlags("fjcreate")
	actors := fs.Uint64("actors", 100000, "processes")
	fs.Parse(args)
	measure(*runs, func() uint64 {
		done := make(chan uint64, 1024)
		go func() {
			for i := uint64(0); i < *actors; i++ {
				inbox := make(chan uint64, 1)
				go func() { done <- <-inbox }()
				inbox <- i
			}
		}()
		var total uint64
		for i := uint64(0); i < *actors; i++ {
			total += <-done
		}
		return total
	})
}

func fjthrput(args []string) {
	fs, runs := newFlags("fjthrput")
	actors := fs.Int("actors", 60, "processes")
	messages := fs.Int("messages", 10000, "messages per process")
	fs.Parse(args)
	measure(*runs, func() uint64 {
		done := make(chan uint64, *actors)
		workers := make([]chan uint64, *actors)
		for i := range workers {
			workers[i] = make(chan uint64, 1024)
			go func(inbox chan uint64) {
				var sum uint64
				for k := 0; k < *messages; k++ {
					sum += <-inbox
				}
				done <- sum
			}(workers[i])
		}
		for m := 0; m < *messages; m++ {
			for _, w := range workers {
				w <- uint64(m)
			}
		}
		var total uint64
		for range workers {
			total += <-done
		}
		return total
	})
}

const (
	bigPing = iota
	bigPong
	bigExit
)

type bigMsg struct {
	kind int
	from int
}

func big(args []string) {
	fs, runs := newFlags("big")
	actors := fs.Int("actors", 120, "processes")
	pings := fs.Int("pings", 2000, "pings per process")
	fs.Parse(args)
	n := *actors
	measure(*runs, func() uint64 {
		// At most one ping of each process, one pong and the exit are
		// in an inbox at once.
		inboxes := make([]chan bigMsg, n)
		for i := range inboxes {
			inboxes[i] = make(chan bigMsg, n+2)
		}
		done := make(chan uint64, n)
		for me := range inboxes {
			go func() {
				x := uint64(me + 1)
				ping := func() {
					x = lcg(x)
					inboxes[x%uint64(n)] <- bigMsg{kind: bigPing, from: me}
				}
				ping()
				answered := 0
				for m := range inboxes[me] {
					switch m.kind {
					case bigPing:
						inboxes[m.from] <- bigMsg{kind: bigPong}
					case bigPong:
						answered++
						if answered < *pings {
							ping()
						} else {
							done <- uint64(answered)
						}
					case bigExit:
						return
					}
				}
			}()
		}
		var total uint64
		for range inboxes {
			total += <-done
		}
		for _, inbox := range inboxes {
			inbox <- bigMsg{kind: bigExit}
		}
		return total
	})
}

func fibActor(n uint64, parent chan<- uint64) {
	if n < 2 {
		parent <- n
		return
	}
	inbox := make(chan uint64, 2)
	go fibActor(n-1, inbox)
	go fibActor(n-2, inbox)
	parent <- <-inbox + <-inbox
}

func fib(args []string) {
	fs, runs := newFlags("fib")
	n := fs.Uint64("n", 25, "fib argument")
	fs.Parse(args)
	measure(*runs, func() uint64 {
		result := make(chan uint64, 1)
		go fibActor(*n, result)
		return <-result
	})
}
