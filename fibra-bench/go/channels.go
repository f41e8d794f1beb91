package main

// The `channels` group: crossbeam-channel's benchmark shapes (see
// fibra-bench/src/workloads/channels/ for the full description). Every
// producer sends 0..messages/producers-1; the result is the sum of every
// value received.
//
// channels-seq: one goroutine sends every message on a channel with room
// for all of them, then receives them all.
// channels-spsc, -mpsc, -mpmc: producers and consumers on one channel
// (the main goroutine is the consumer when there is one).
// channels-select-rx: producer i sends on channel i; the main goroutine
// receives with a select over the channels.
// channels-select-both: producers select a send over the channels,
// consumers a receive. Go's select has a fixed set of cases, so it is
// written out for 2 and 4 channels.

import (
	"fmt"
	"os"
)

// channelsShape is one parameter set of the group.
type channelsShape struct {
	messages, producers, consumers uint64
	capacity, clauses              int
}

// channelsFlags parses the group's flags (every parameter of its rows).
func channelsFlags(name string, args []string) (int, channelsShape) {
	fs, runs := newFlags(name)
	messages := fs.Uint64("messages", 1000000, "messages per run, all producers together")
	capacity := fs.Int("capacity", 0, "channel capacity (0: unbuffered)")
	producers := fs.Uint64("producers", 1, "producer goroutines")
	consumers := fs.Uint64("consumers", 1, "consumer goroutines")
	clauses := fs.Int("clauses", 1, "channels of the select shapes")
	fs.Parse(args)
	s := channelsShape{*messages, *producers, *consumers, *capacity, *clauses}
	if s.producers == 0 || s.consumers == 0 || s.messages%s.producers != 0 || s.messages%s.consumers != 0 {
		fmt.Fprintf(os.Stderr, "%s: messages must split evenly over producers and consumers\n", name)
		os.Exit(2)
	}
	return *runs, s
}

// chanSendAll sends 0..n-1 on c.
func chanSendAll(c chan uint64, n uint64) {
	for i := uint64(0); i < n; i++ {
		c <- i
	}
}

// chanRecvN receives n values from c and returns their sum.
func chanRecvN(c chan uint64, n uint64) uint64 {
	var sum uint64
	for i := uint64(0); i < n; i++ {
		sum += <-c
	}
	return sum
}

func channelsSeq(args []string) {
	runs, s := channelsFlags("channels-seq", args)
	measure(runs, func() uint64 {
		c := make(chan uint64, s.capacity)
		chanSendAll(c, s.messages)
		return chanRecvN(c, s.messages)
	})
}

// chanSides runs the producers (produce(i, n) is producer i) and the
// consumers (consume(n)) and returns the sum of the consumers' results.
// A single consumer is the calling goroutine.
func chanSides(s channelsShape, produce func(i int, n uint64), consume func(n uint64) uint64) uint64 {
	for i := 0; i < int(s.producers); i++ {
		go produce(i, s.messages/s.producers)
	}
	if s.consumers == 1 {
		return consume(s.messages)
	}
	sums := make(chan uint64, s.consumers)
	for i := uint64(0); i < s.consumers; i++ {
		go func() { sums <- consume(s.messages / s.consumers) }()
	}
	var sum uint64
	for i := uint64(0); i < s.consumers; i++ {
		sum += <-sums
	}
	return sum
}

// channelsOne is spsc, mpsc and mpmc: every side on one channel.
func channelsOne(name string) func(args []string) {
	return func(args []string) {
		runs, s := channelsFlags(name, args)
		measure(runs, func() uint64 {
			c := make(chan uint64, s.capacity)
			return chanSides(s,
				func(_ int, n uint64) { chanSendAll(c, n) },
				func(n uint64) uint64 { return chanRecvN(c, n) })
		})
	}
}

// chanMake makes the select shapes' channels: 2 or 4 of them.
func chanMake(s channelsShape) []chan uint64 {
	if s.clauses != 2 && s.clauses != 4 {
		fmt.Fprintf(os.Stderr, "channels: select over %d channels (2 or 4)\n", s.clauses)
		os.Exit(2)
	}
	cs := make([]chan uint64, s.clauses)
	for i := range cs {
		cs[i] = make(chan uint64, s.capacity)
	}
	return cs
}

// chanSendAny sends 0..n-1, each with a select over the channels.
func chanSendAny(c []chan uint64, n uint64) {
	for v := uint64(0); v < n; v++ {
		if len(c) == 2 {
			select {
			case c[0] <- v:
			case c[1] <- v:
			}
		} else {
			select {
			case c[0] <- v:
			case c[1] <- v:
			case c[2] <- v:
			case c[3] <- v:
			}
		}
	}
}

// chanRecvAny receives n values, each with a select over the channels,
// and returns their sum.
func chanRecvAny(c []chan uint64, n uint64) uint64 {
	var sum, v uint64
	for i := uint64(0); i < n; i++ {
		if len(c) == 2 {
			select {
			case v = <-c[0]:
			case v = <-c[1]:
			}
		} else {
			select {
			case v = <-c[0]:
			case v = <-c[1]:
			case v = <-c[2]:
			case v = <-c[3]:
			}
		}
		sum += v
	}
	return sum
}

func channelsSelectRx(args []string) {
	runs, s := channelsFlags("channels-select-rx", args)
	measure(runs, func() uint64 {
		c := chanMake(s)
		return chanSides(s,
			func(i int, n uint64) { chanSendAll(c[i], n) },
			func(n uint64) uint64 { return chanRecvAny(c, n) })
	})
}

func channelsSelectBoth(args []string) {
	runs, s := channelsFlags("channels-select-both", args)
	measure(runs, func() uint64 {
		c := chanMake(s)
		return chanSides(s,
			func(_ int, n uint64) { chanSendAny(c, n) },
			func(n uint64) uint64 { return chanRecvAny(c, n) })
	})
}
