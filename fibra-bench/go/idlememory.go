package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// idle-memory: every run in a fresh process (memory freed by one run stays
// with the process and would hide the next run's growth): this subcommand
// re-executes the program as `idle-memory-once` for the warm-up and for
// each timed run, and passes on each line with its warm-up flag.
func idleMemory(args []string) {
	fs, runs := newFlags("idle-memory")
	tasks := fs.Int("tasks", 1000000, "goroutines to park")
	fs.Parse(args)
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "idle-memory: %v\n", err)
		os.Exit(1)
	}
	for i := 0; i <= *runs; i++ {
		cmd := exec.Command(self, "idle-memory-once", fmt.Sprintf("-tasks=%d", *tasks))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			fmt.Fprintf(os.Stderr, "idle-memory: child: %v\n", err)
			os.Exit(1)
		}
		var run map[string]any
		if err := json.Unmarshal(bytes.TrimSpace(out), &run); err != nil {
			fmt.Fprintf(os.Stderr, "idle-memory: child printed %q\n", out)
			os.Exit(1)
		}
		run["warmup"] = i == 0
		line, _ := json.Marshal(run)
		fmt.Println(string(line))
	}
}

// idle-memory-once: one run. Starts `tasks` goroutines, each waiting to
// receive one value on an unbuffered channel of its own; once all have
// started, reads the resident set size again; then sends goroutine i the
// value i and waits for all of them to add it to a sum. Prints
// {"seconds":..,"result":<sum>,"bytes_per_task":..}.
func idleMemoryOnce(args []string) {
	fs, _ := newFlags("idle-memory-once")
	tasks := fs.Int("tasks", 1000000, "goroutines to park")
	fs.Parse(args)
	n := *tasks
	chans := make([]chan uint64, n)
	for i := range chans {
		chans[i] = nil // touch the slice now, so it is not counted
	}
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	var sum atomic.Uint64
	before := residentBytes()
	start := time.Now()
	for i := 0; i < n; i++ {
		ch := make(chan uint64)
		chans[i] = ch
		go func() {
			ready.Done()
			sum.Add(<-ch)
			done.Done()
		}()
	}
	ready.Wait()
	parked := residentBytes()
	for i, ch := range chans {
		ch <- uint64(i)
	}
	done.Wait()
	seconds := time.Since(start).Seconds()
	perTask := (float64(parked) - float64(before)) / float64(max(n, 1))
	fmt.Printf("{\"warmup\":false,\"seconds\":%.9f,\"result\":%d,\"bytes_per_task\":%.3f}\n",
		seconds, sum.Load(), perTask)
}

// residentBytes is the resident set size from /proc/self/statm.
func residentBytes() uint64 {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		fmt.Fprintf(os.Stderr, "idle-memory: %v\n", err)
		os.Exit(1)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	fields := strings.Fields(line)
	if len(fields) < 2 {
		fmt.Fprintf(os.Stderr, "idle-memory: bad statm %q\n", line)
		os.Exit(1)
	}
	pages, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "idle-memory: bad statm %q\n", line)
		os.Exit(1)
	}
	return pages * uint64(os.Getpagesize())
}
