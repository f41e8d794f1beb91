package main

import "math"

// diagonal: `repeats` times, the collector (the main goroutine) starts one
// goroutine per dimension, which squares its side and sends the square on
// an unbuffered channel; the collector sums the squares and takes the
// square root, truncated. Result: the sum of the roots. Sides as in
// fibra-bench/src/workloads/diagonal.rs.
func diagonal(args []string) {
	fs, runs := newFlags("diagonal")
	dimensions := fs.Uint64("dimensions", 10, "dimensions of the box")
	repeats := fs.Uint64("repeats", 10000, "diagonals to compute")
	fs.Parse(args)
	d, m := *dimensions, *repeats
	measure(*runs, func() uint64 {
		ch := make(chan uint64)
		var total uint64
		for r := uint64(0); r < m; r++ {
			for i := uint64(0); i < d; i++ {
				side := 1 + (r*31+i*7)%100
				go func() { ch <- side * side }()
			}
			var sum uint64
			for i := uint64(0); i < d; i++ {
				sum += <-ch
			}
			total += uint64(math.Sqrt(float64(sum)))
		}
		return total
	})
}
