// Command delayproxy is a TCP proxy that holds every chunk it passes on for
// a fixed delay, each direction on its own, in order: added network
// latency where the kernel has no netem (CONFIG_NET_SCH_NETEM unset), for
// scripts/fleet-bench.sh. It runs inside the benchmark's network
// namespace, listening on that namespace's loopback and dialling
// PostgreSQL across the veth, so that every round trip pays twice the
// delay plus what the proxy itself costs. At its end (SIGINT or SIGTERM)
// it says how late its timers were: the delay actually added.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:5439", "address to listen on")
	to := flag.String("to", "", "address to pass connections on to (host:port)")
	delay := flag.Duration("delay", 500*time.Microsecond, "how long each chunk is held, each direction")
	flag.Parse()
	if *to == "" || *delay < 0 {
		fmt.Fprintln(os.Stderr, "delayproxy: -to host:port is needed, and -delay must not be negative")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("delayproxy: %v", err)
	}
	late := &lateness{}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		ln.Close()
	}()
	proxy(ln, *to, *delay, late)
	fmt.Println(late.summary(*delay))
}

// proxy passes each connection ln accepts on to to, until ln is closed.
func proxy(ln net.Listener, to string, delay time.Duration, late *lateness) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			log.Printf("delayproxy: accept: %v", err)
			continue
		}
		go serve(c, to, delay, late)
	}
}

func serve(c net.Conn, to string, delay time.Duration, late *lateness) {
	defer c.Close()
	u, err := net.DialTimeout("tcp", to, 5*time.Second)
	if err != nil {
		log.Printf("delayproxy: dial %s: %v", to, err)
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() { pipe(u, c, delay, late); done <- struct{}{} }()
	go func() { pipe(c, u, delay, late); done <- struct{}{} }()
	<-done // either side closing ends both
}

type chunk struct {
	b  []byte
	at time.Time // when it may go
}

// pipe copies from src to dst, each chunk read written delay after it was
// read: a reader and a writer, so that chunks in flight do not add up.
func pipe(dst, src net.Conn, delay time.Duration, late *lateness) {
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 64<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{b[:n], time.Now().Add(delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range q {
		if d := time.Until(ch.at); d > 0 {
			sleep(d)
		}
		late.add(time.Since(ch.at))
		if _, err := dst.Write(ch.b); err != nil {
			break
		}
	}
	for range q { // let the reader end
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

// sleep is nanosleep(2) on this thread: time.Sleep rounds a wait shorter
// than a millisecond up to one when the runtime parks in epoll, which
// would double the delay asked for; the kernel's high-resolution timer
// does not.
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}

// lateness keeps how late each chunk went past its delay, a sample of
// at most 1<<20.
type lateness struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *lateness) add(d time.Duration) {
	l.mu.Lock()
	if len(l.d) < 1<<20 {
		l.d = append(l.d, d)
	}
	l.mu.Unlock()
}

func (l *lateness) summary(delay time.Duration) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return "delayproxy: passed nothing"
	}
	slices.Sort(l.d)
	q := func(p int) time.Duration { return l.d[min(len(l.d)-1, len(l.d)*p/100)].Round(time.Microsecond) }
	return fmt.Sprintf("delayproxy: %d chunks held %s each way; late past it by median %s, p90 %s, p99 %s",
		len(l.d), delay, q(50), q(90), q(99))
}
