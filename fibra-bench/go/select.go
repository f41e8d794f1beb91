package main

// The `cforall` group's channel benchmarks (Cforall's waituntil paper; see
// fibra-bench/src/workloads/select/ for the full description).
//
// select-channels: `producers` producer and `consumers` consumer goroutines
// share `clauses` channels of capacity `capacity` (0: unbuffered). Each
// producer sends 0..messages/producers-1, each value with a select over
// one send case per channel; each consumer takes messages/consumers values
// with a select over one receive case per channel. Go's select has a fixed
// set of cases, so it is written out for 2, 4, 8 and 16 clauses (as the
// paper's Go programs do; reflect.Select would measure reflection).
// variant=else adds a default case: a failed attempt calls
// runtime.Gosched() and retries. Result: the sum of the values received.
//
// select-overlap: P1 and C1 select over unbuffered channels A and B, P2 and
// C2 use only B. Go has no priority select: P1 and C1 use a plain select.
// P1 sends 0..messages/2-1, P2 the rest; A is closed when P1 is done, B
// when both are. Result: the sum of the values received.

import (
	"fmt"
	"os"
	"runtime"
	"sync"
)

// sendFn sends v over one of the channels; with spin, it does not block
// but reports whether it sent.
type sendFn func(c []chan uint64, v uint64, spin bool) bool

// recvFn receives from one of the channels; with spin, it does not block
// and ok is false when nothing was ready.
type recvFn func(c []chan uint64, spin bool) (v uint64, ok bool)

func send2(c []chan uint64, v uint64, spin bool) bool {
	if spin {
		select {
		case c[0] <- v:
		case c[1] <- v:
		default:
			return false
		}
		return true
	}
	select {
	case c[0] <- v:
	case c[1] <- v:
	}
	return true
}

func send4(c []chan uint64, v uint64, spin bool) bool {
	if spin {
		select {
		case c[0] <- v:
		case c[1] <- v:
		case c[2] <- v:
		case c[3] <- v:
		default:
			return false
		}
		return true
	}
	select {
	case c[0] <- v:
	case c[1] <- v:
	case c[2] <- v:
	case c[3] <- v:
	}
	return true
}

func send8(c []chan uint64, v uint64, spin bool) bool {
	if spin {
		select {
		case c[0] <- v:
		case c[1] <- v:
		case c[2] <- v:
		case c[3] <- v:
		case c[4] <- v:
		case c[5] <- v:
		case c[6] <- v:
		case c[7] <- v:
		default:
			return false
		}
		return true
	}
	select {
	case c[0] <- v:
	case c[1] <- v:
	case c[2] <- v:
	case c[3] <- v:
	case c[4] <- v:
	case c[5] <- v:
	case c[6] <- v:
	case c[7] <- v:
	}
	return true
}

func send16(c []chan uint64, v uint64, spin bool) bool {
	if spin {
		select {
		case c[0] <- v:
		case c[1] <- v:
		case c[2] <- v:
		case c[3] <- v:
		case c[4] <- v:
		case c[5] <- v:
		case c[6] <- v:
		case c[7] <- v:
		case c[8] <- v:
		case c[9] <- v:
		case c[10] <- v:
		case c[11] <- v:
		case c[12] <- v:
		case c[13] <- v:
		case c[14] <- v:
		case c[15] <- v:
		default:
			return false
		}
		return true
	}
	select {
	case c[0] <- v:
	case c[1] <- v:
	case c[2] <- v:
	case c[3] <- v:
	case c[4] <- v:
	case c[5] <- v:
	case c[6] <- v:
	case c[7] <- v:
	case c[8] <- v:
	case c[9] <- v:
	case c[10] <- v:
	case c[11] <- v:
	case c[12] <- v:
	case c[13] <- v:
	case c[14] <- v:
	case c[15] <- v:
	}
	return true
}

func recv2(c []chan uint64, spin bool) (v uint64, ok bool) {
	if spin {
		select {
		case v = <-c[0]:
		case v = <-c[1]:
		default:
			return 0, false
		}
		return v, true
	}
	select {
	case v = <-c[0]:
	case v = <-c[1]:
	}
	return v, true
}

func recv4(c []chan uint64, spin bool) (v uint64, ok bool) {
	if spin {
		select {
		case v = <-c[0]:
		case v = <-c[1]:
		case v = <-c[2]:
		case v = <-c[3]:
		default:
			return 0, false
		}
		return v, true
	}
	select {
	case v = <-c[0]:
	case v = <-c[1]:
	case v = <-c[2]:
	case v = <-c[3]:
	}
	return v, true
}

func recv8(c []chan uint64, spin bool) (v uint64, ok bool) {
	if spin {
		select {
		case v = <-c[0]:
		case v = <-c[1]:
		case v = <-c[2]:
		case v = <-c[3]:
		case v = <-c[4]:
		case v = <-c[5]:
		case v = <-c[6]:
		case v = <-c[7]:
		default:
			return 0, false
		}
		return v, true
	}
	select {
	case v = <-c[0]:
	case v = <-c[1]:
	case v = <-c[2]:
	case v = <-c[3]:
	case v = <-c[4]:
	case v = <-c[5]:
	case v = <-c[6]:
	case v = <-c[7]:
	}
	return v, true
}

func recv16(c []chan uint64, spin bool) (v uint64, ok bool) {
	if spin {
		select {
		case v = <-c[0]:
		case v = <-c[1]:
		case v = <-c[2]:
		case v = <-c[3]:
		case v = <-c[4]:
		case v = <-c[5]:
		case v = <-c[6]:
		case v = <-c[7]:
		case v = <-c[8]:
		case v = <-c[9]:
		case v = <-c[10]:
		case v = <-c[11]:
		case v = <-c[12]:
		case v = <-c[13]:
		case v = <-c[14]:
		case v = <-c[15]:
		default:
			return 0, false
		}
		return v, true
	}
	select {
	case v = <-c[0]:
	case v = <-c[1]:
	case v = <-c[2]:
	case v = <-c[3]:
	case v = <-c[4]:
	case v = <-c[5]:
	case v = <-c[6]:
	case v = <-c[7]:
	case v = <-c[8]:
	case v = <-c[9]:
	case v = <-c[10]:
	case v = <-c[11]:
	case v = <-c[12]:
	case v = <-c[13]:
	case v = <-c[14]:
	case v = <-c[15]:
	}
	return v, true
}

func selectChannels(args []string) {
	fs, runs := newFlags("select-channels")
	clauses := fs.Int("clauses", 2, "channels, one per select clause (2, 4, 8 or 16)")
	variant := fs.String("variant", "blocking", "blocking, or else (a default case)")
	producers := fs.Uint64("producers", 1, "producer goroutines")
	consumers := fs.Uint64("consumers", 1, "consumer goroutines")
	messages := fs.Uint64("messages", 100000, "values sent, all producers together")
	capacity := fs.Int("capacity", 0, "channel capacity (0: unbuffered)")
	fs.Parse(args)
	var send sendFn
	var recv recvFn
	switch *clauses {
	case 2:
		send, recv = send2, recv2
	case 4:
		send, recv = send4, recv4
	case 8:
		send, recv = send8, recv8
	case 16:
		send, recv = send16, recv16
	default:
		fmt.Fprintf(os.Stderr, "select-channels: -clauses must be 2, 4, 8 or 16\n")
		os.Exit(2)
	}
	if *variant != "blocking" && *variant != "else" {
		fmt.Fprintf(os.Stderr, "select-channels: -variant must be blocking or else\n")
		os.Exit(2)
	}
	spin := *variant == "else"
	c, p, q := *clauses, *producers, *consumers
	perProducer, perConsumer := *messages/p, *messages/q
	measure(*runs, func() uint64 {
		chans := make([]chan uint64, c)
		for i := range chans {
			chans[i] = make(chan uint64, *capacity)
		}
		sums := make([]uint64, q)
		var wg sync.WaitGroup
		for k := uint64(0); k < q; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var sum uint64
				for i := uint64(0); i < perConsumer; i++ {
					v, ok := recv(chans, spin)
					for !ok {
						runtime.Gosched()
						v, ok = recv(chans, spin)
					}
					sum += v
				}
				sums[k] = sum
			}()
		}
		for k := uint64(0); k < p; k++ {
			go func() {
				for v := uint64(0); v < perProducer; v++ {
					for !send(chans, v, spin) {
						runtime.Gosched()
					}
				}
			}()
		}
		wg.Wait()
		var total uint64
		for _, s := range sums {
			total += s
		}
		return total
	})
}

func selectOverlap(args []string) {
	fs, runs := newFlags("select-overlap")
	messages := fs.Uint64("messages", 100000, "values sent, both producers together")
	capacity := fs.Int("capacity", 0, "channel capacity (0: unbuffered)")
	fs.Parse(args)
	half, n := *messages/2, *messages
	measure(*runs, func() uint64 {
		a := make(chan uint64, *capacity)
		b := make(chan uint64, *capacity)
		var producers sync.WaitGroup
		producers.Add(2)
		go func() { // P1
			defer producers.Done()
			for v := uint64(0); v < half; v++ {
				select {
				case a <- v:
				case b <- v:
				}
			}
			close(a)
		}()
		go func() { // P2
			defer producers.Done()
			for v := half; v < n; v++ {
				b <- v
			}
		}()
		go func() {
			producers.Wait()
			close(b)
		}()
		sums := make(chan uint64, 2)
		go func() { // C1
			var sum uint64
			ca, cb := a, b
			for ca != nil || cb != nil {
				select {
				case v, ok := <-ca:
					if !ok {
						ca = nil
						continue
					}
					sum += v
				case v, ok := <-cb:
					if !ok {
						cb = nil
						continue
					}
					sum += v
				}
			}
			sums <- sum
		}()
		go func() { // C2
			var sum uint64
			for v := range b {
				sum += v
			}
			sums <- sum
		}()
		return <-sums + <-sums
	})
}
