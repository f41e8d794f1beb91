// Command fibra-bench-go runs the Go peers of fibra's benchmark suite.
//
// Usage: fibra-bench-go <workload> -<param>=<value>... -runs=N
//
// Each workload does one warm-up run and N timed runs and prints one JSON
// line per run: {"warmup":true,"seconds":0.0123,"result":499999500000}.
// The harness (fibra-bench/src/peers/go.rs) checks every result.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"time"
)

// workloads maps a subcommand to its entry point, which parses its own flags.
var workloads = map[string]func(args []string){
	"spsc":             spsc,
	"chain":            chain,
	"ping-pong":        pingPong,
	"fan-out":          fanOut,
	"diagonal":         diagonal,
	"sieve":            sieve,
	"spawn-join":       spawnJoin,
	"idle-memory":      idleMemory,
	"idle-memory-once": idleMemoryOnce,
	// The `racket` group (mailboxes.go).
	"sema-baseline":       semaBaseline,
	"switch-baseline":     switchBaseline,
	"asymmetric-sema":     asymmetricSema,
	"asymmetric-mailbox":  asymmetricMailbox,
	"asymmetric-channel":  asymmetricChannel,
	"asymmetric-buffered": asymmetricBuffered,
	"symmetric-sema":      symmetricSema,
	"symmetric-mailbox":   symmetricMailbox,
	"symmetric-channel":   symmetricChannel,
	"symmetric-buffered":  symmetricBuffered,
	// The `cforall` group (select.go, futures.go).
	"select-channels": selectChannels,
	"select-overlap":  selectOverlap,
	"futures-or":      futuresOr,
	"futures-and":     futuresAnd,
	"futures-and-or":  futuresAndOr,
	"futures-or-and":  futuresOrAnd,
	// The `parasites` group (parasites.go).
	"spawn-cost": spawnCost,
	"async-send": asyncSend,
	"choose-all": chooseAll,
	"inflation":  inflation,
	"par-fib":    parFib,
	"par-tak":    parTak,
	"mergesort":  mergesort,
	// The `general` group's timing workloads (timers.go, wakelatency.go).
	"timers":       timers,
	"wake-latency": wakeLatency,
	// The `erlang` and `savina` groups (actors.go).
	"big-bang":   bigBang,
	"hackbench":  hackbench,
	"mandelbrot": mandelbrot,
	"random":     random,
	"count":      count,
	"fjcreate":   fjcreate,
	"fjthrput":   fjthrput,
	"big":        big,
	"fib":        fib,
	// The `io` group (io.go): tcp-echo reports its runs; http-server is
	// the server fibra-bench drives with wrk.
	"tcp-echo":    tcpEcho,
	"http-server": httpServer,
	// The `channels` group (channels.go).
	"channels-seq":         channelsSeq,
	"channels-spsc":        channelsOne("channels-spsc"),
	"channels-mpsc":        channelsOne("channels-mpsc"),
	"channels-mpmc":        channelsOne("channels-mpmc"),
	"channels-select-rx":   channelsSelectRx,
	"channels-select-both": channelsSelectBoth,
}

func main() {
	if len(os.Args) < 2 || workloads[os.Args[1]] == nil {
		names := make([]string, 0, len(workloads))
		for name := range workloads {
			names = append(names, name)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: fibra-bench-go <workload> [flags]; workloads: %v\n", names)
		os.Exit(2)
	}
	workloads[os.Args[1]](os.Args[2:])
}

// newFlags returns a flag set for a workload with the common -runs flag.
func newFlags(name string) (*flag.FlagSet, *int) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	runs := fs.Int("runs", 5, "timed runs after one warm-up run")
	return fs, runs
}

// measure does one warm-up run and `runs` timed runs of `run`, printing one
// JSON line per run with its duration and its result.
func measure(runs int, run func() uint64) {
	for i := 0; i <= runs; i++ {
		start := time.Now()
		result := run()
		seconds := time.Since(start).Seconds()
		fmt.Printf("{\"warmup\":%t,\"seconds\":%.9f,\"result\":%d}\n", i == 0, seconds, result)
	}
}

// figure is a number a run measured besides its time and result, printed
// as one more field of its JSON line (e.g. "p99_us").
type figure struct {
	name  string
	value float64
}

// measureFigures is measure for runs that also report figures.
func measureFigures(runs int, run func() (uint64, []figure)) {
	for i := 0; i <= runs; i++ {
		start := time.Now()
		result, figures := run()
		seconds := time.Since(start).Seconds()
		fmt.Printf("{\"warmup\":%t,\"seconds\":%.9f,\"result\":%d", i == 0, seconds, result)
		for _, f := range figures {
			fmt.Printf(",\"%s\":%.3f", f.name, f.value)
		}
		fmt.Println("}")
	}
}
