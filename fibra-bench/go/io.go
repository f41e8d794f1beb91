package main

// The `io` group: TCP and HTTP over loopback with Go's `net` and `net/http`.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
)

// tcp-echo: a server echoes every byte it reads (a goroutine per
// connection); `connections` clients (a goroutine each) each connect, then
// `round_trips` times write a `size`-byte message and read its echo, which
// must equal the message. The listener is set up once, before the warm-up;
// every run connects its clients anew. Result: the bytes echoed correctly.
func tcpEcho(args []string) {
	fs, runs := newFlags("tcp-echo")
	conns := fs.Int("connections", 1, "client connections")
	roundTrips := fs.Int("round_trips", 10000, "round trips per connection")
	size := fs.Int("size", 64, "bytes per message")
	fs.Parse(args)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("tcp-echo: listen: %v", err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go echo(c)
		}
	}()
	addr := ln.Addr().String()
	measure(*runs, func() uint64 {
		counts := make(chan uint64, *conns)
		for k := 0; k < *conns; k++ {
			go func(k int) { counts <- echoClient(addr, k, *roundTrips, *size) }(k)
		}
		var total uint64
		for k := 0; k < *conns; k++ {
			total += <-counts
		}
		return total
	})
}

// echo writes back what it reads until the peer closes (Go sets
// TCP_NODELAY on every TCP connection).
func echo(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// echoClient is client k of a run: the bytes of its echoes, every one
// checked against its message.
func echoClient(addr string, k, roundTrips, size int) uint64 {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fail("tcp-echo: connect: %v", err)
	}
	defer c.Close()
	msg := make([]byte, size)
	reply := make([]byte, size)
	var total uint64
	for i := 0; i < roundTrips; i++ {
		fillMessage(msg, k, i)
		if _, err := c.Write(msg); err != nil {
			fail("tcp-echo: write: %v", err)
		}
		if _, err := io.ReadFull(c, reply); err != nil {
			fail("tcp-echo: read: %v", err)
		}
		if !bytes.Equal(msg, reply) {
			fail("tcp-echo: client %d, round trip %d: the echo differs from the message", k, i)
		}
		total += uint64(size)
	}
	return total
}

// fillMessage writes message i of client k: the same bytes as the Rust rows
// send (fibra-bench/src/workloads/tcp_echo.rs).
func fillMessage(msg []byte, k, i int) {
	for j := range msg {
		msg[j] = byte(k*131 + i*7 + j)
	}
}

// http-server: an HTTP/1.1 server (net/http, keep-alive) answering `GET /`
// with a short text and `GET /file` with a 10 KB text, the same bodies as
// the Rust servers (fibra-bench/src/workloads/http.rs). It prints its
// address (a free loopback port) on one line, serves until its standard
// input closes, then exits. The load generator is driven by fibra-bench.
func httpServer(args []string) {
	fs, _ := newFlags("http-server")
	fs.Parse(args)
	hello := []byte(helloBody)
	file := fileBody(fileBodyLen)
	serve := func(body []byte) http.HandlerFunc {
		length := strconv.Itoa(len(body))
		return func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Type", "text/plain")
			h.Set("Content-Length", length)
			w.Write(body)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", serve(hello))
	mux.Handle("GET /file", serve(file))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("http-server: listen: %v", err)
	}
	fmt.Println(ln.Addr().String())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	if err := http.Serve(ln, mux); err != nil {
		fail("http-server: %v", err)
	}
}

// helloBody is the body of `GET /`.
const helloBody = "Hello, World!"

// fileBodyLen is the length of the body of `GET /file`.
const fileBodyLen = 10 * 1024

// fileBody is the body of `GET /file`: lines of 63 letters drawn by a
// linear congruential generator, each ending in a newline.
func fileBody(n int) []byte {
	body := make([]byte, n)
	x := uint32(1)
	for i := range body {
		x = x*1103515245 + 12345
		if i%64 == 63 {
			body[i] = '\n'
		} else {
			body[i] = 'a' + byte((x>>16)%26)
		}
	}
	return body
}

// fail reports an error on stderr and exits non-zero (the harness shows it).
func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
