package storetest

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy stands on loopback between a test's store and its PostgreSQL, and
// cuts the link the two ways that matter: refused (nothing listens, every
// connection closed) and blackholed (connections accepted, every byte
// dropped both ways, nothing answered), then restores it.
type Proxy struct {
	// DSN is the test's DSN pointed at the proxy.
	DSN    string
	addr   string
	target string
	black  atomic.Bool

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to the PostgreSQL that dsn (a URL) names.
func NewProxy(t testing.TB, dsn string) *Proxy {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: u.Host}
	if err := p.listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	u.Host = p.addr
	p.DSN = u.String()
	t.Cleanup(func() { p.Refuse(); p.wg.Wait() })
	return p
}

func (p *Proxy) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() { p.accept(ln) })
	return nil
}

func (p *Proxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.track(c)
		if p.black.Load() {
			continue // held, never answered
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.track(up)
		p.wg.Add(2)
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

// pipe copies src to dst, dropping what it reads while blackholed.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			dst.Close()
			return
		}
		if !p.black.Load() {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
}

// Blackhole drops every byte from now on, on open connections and new
// ones alike, as a link whose packets are dropped.
func (p *Proxy) Blackhole() { p.black.Store(true) }

// Refuse closes the listener and every connection: a new connection is
// refused, as by a database that is down.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Restore ends a blackhole or a refusal: the proxy forwards again, on the
// same address. Connections cut while blackholed stay cut (their streams
// are out of step), as after a real outage.
func (p *Proxy) Restore(t testing.TB) {
	p.mu.Lock()
	down, addr := p.ln == nil, p.addr
	p.mu.Unlock()
	if p.black.Swap(false) {
		p.Refuse() // the held connections are lost
		down = true
	}
	if down {
		if err := p.listen(addr); err != nil {
			t.Fatalf("proxy: listen again on %s: %v", addr, err)
		}
	}
}
