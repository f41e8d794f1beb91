package main

// The `cforall` group's future benchmarks (Cforall's waituntil paper; see
// fibra-bench/src/workloads/futures_wait.rs): futures-or, futures-and,
// futures-and-or, futures-or-and, each with -iterations=N rounds.
//
// Each round the client makes three futures A, B and C — a future is a
// channel of capacity 1 that the server writes once — and hands them, with
// the round number r, to the server over an unbuffered channel. The server
// writes r into A, B and C, in that order. The client waits with the
// workload's predicate, checks every value it read, and adds r to its
// result:
//
//   - A or B or C: one select;
//   - A and B and C: receive all three;
//   - (A and B) or C: a select loop; a channel read is set to nil;
//   - (A or B) and C: a select over A and B, then receive C.
//
// Result: the sum of the rounds, 0..N-1.

import "fmt"

// futureRound is one round's futures and the value the server puts in them.
type futureRound struct {
	r       uint64
	a, b, c chan uint64
}

// futureWait waits for a round's predicate and returns the values it read
// (nil where it read nothing) in the order A, B, C.
type futureWait func(rd futureRound) [3]*uint64

func futuresOr(args []string)    { futures("futures-or", args, waitOr) }
func futuresAnd(args []string)   { futures("futures-and", args, waitAnd) }
func futuresAndOr(args []string) { futures("futures-and-or", args, waitAndOr) }
func futuresOrAnd(args []string) { futures("futures-or-and", args, waitOrAnd) }

func waitOr(rd futureRound) (got [3]*uint64) {
	select {
	case v := <-rd.a:
		got[0] = &v
	case v := <-rd.b:
		got[1] = &v
	case v := <-rd.c:
		got[2] = &v
	}
	return got
}

func waitAnd(rd futureRound) (got [3]*uint64) {
	a, b, c := <-rd.a, <-rd.b, <-rd.c
	return [3]*uint64{&a, &b, &c}
}

func waitAndOr(rd futureRound) (got [3]*uint64) {
	a, b, c := rd.a, rd.b, rd.c
	for !((got[0] != nil && got[1] != nil) || got[2] != nil) {
		select {
		case v := <-a:
			got[0], a = &v, nil
		case v := <-b:
			got[1], b = &v, nil
		case v := <-c:
			got[2], c = &v, nil
		}
	}
	return got
}

func waitOrAnd(rd futureRound) (got [3]*uint64) {
	select {
	case v := <-rd.a:
		got[0] = &v
	case v := <-rd.b:
		got[1] = &v
	}
	c := <-rd.c
	got[2] = &c
	return got
}

// futureHolds: whether the futures read satisfy the workload's predicate.
func futureHolds(name string, got [3]*uint64) bool {
	a, b, c := got[0] != nil, got[1] != nil, got[2] != nil
	switch name {
	case "futures-or":
		return a || b || c
	case "futures-and":
		return a && b && c
	case "futures-and-or":
		return (a && b) || c
	default: // futures-or-and
		return (a || b) && c
	}
}

func futures(name string, args []string, wait futureWait) {
	fs, runs := newFlags(name)
	iterations := fs.Uint64("iterations", 100000, "rounds")
	fs.Parse(args)
	n := *iterations
	measure(*runs, func() uint64 {
		requests := make(chan futureRound)
		go func() { // the server
			for rd := range requests {
				rd.a <- rd.r
				rd.b <- rd.r
				rd.c <- rd.r
			}
		}()
		var sum uint64
		for r := uint64(0); r < n; r++ {
			rd := futureRound{r, make(chan uint64, 1), make(chan uint64, 1), make(chan uint64, 1)}
			requests <- rd
			got := wait(rd)
			if !futureHolds(name, got) {
				panic(fmt.Sprintf("%s: woke with %v", name, got))
			}
			for _, v := range got {
				if v != nil && *v != r {
					panic(fmt.Sprintf("%s: a future of another round", name))
				}
			}
			sum += r
		}
		close(requests)
		return sum
	})
}
