package main

import (
	"fmt"
	"os"
)

// sieve: a generator goroutine sends 2..last over an unbuffered channel
// into a chain of filter goroutines; every number that reaches the main
// goroutine is the next prime, and gets a filter added to the chain. The
// generator closes its channel after `last` (the wanted last prime) and the
// close ripples down the chain. Result: the last prime; a run that finds
// another number of primes than `primes` exits with an error.
func sieve(args []string) {
	fs, runs := newFlags("sieve")
	primes := fs.Int("primes", 2000, "primes to find")
	fs.Parse(args)
	n := *primes
	last := nthPrime(n)
	measure(*runs, func() uint64 {
		gen := make(chan uint64)
		go func() {
			for i := uint64(2); i <= last; i++ {
				gen <- i
			}
			close(gen)
		}()
		end := gen
		found, prime := 0, uint64(0)
		for {
			p, ok := <-end
			if !ok {
				break
			}
			found, prime = found+1, p
			next := make(chan uint64)
			go filter(p, end, next)
			end = next
		}
		if found != n {
			fmt.Fprintf(os.Stderr, "sieve: found %d primes, want %d\n", found, n)
			os.Exit(1)
		}
		return prime
	})
}

func filter(p uint64, in <-chan uint64, out chan<- uint64) {
	for v := range in {
		if v%p != 0 {
			out <- v
		}
	}
	close(out)
}

// nthPrime is the n-th prime (n >= 1), by trial division.
func nthPrime(n int) uint64 {
	found := 0
	for m := uint64(2); ; m++ {
		prime := true
		for d := uint64(2); d*d <= m; d++ {
			if m%d == 0 {
				prime = false
				break
			}
		}
		if prime {
			found++
			if found == n {
				return m
			}
		}
	}
}
