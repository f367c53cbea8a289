package main

import (
	"net"
	"sync"
)

// linkMode is the state of one host's link to the store.
type linkMode int

const (
	linkUp linkMode = iota
	// linkRefused: nothing listens; a connection open is closed, a new one
	// refused by the kernel (RST), as a store that is down.
	linkRefused
	// linkBlackholed: connections are accepted and nothing is read or
	// passed on either way, as packets dropped; when the link comes back,
	// what was held goes through, as TCP's retransmissions would carry it.
	linkBlackholed
)

func (m linkMode) String() string { return [...]string{"up", "refused", "blackholed"}[m] }

// linkProxy forwards TCP from addr (the host side of a veth) to target
// (PostgreSQL on loopback), in the mode set.
type linkProxy struct {
	addr, target string
	mu           sync.Mutex
	cond         *sync.Cond
	mode         linkMode
	ln           net.Listener
	conns        map[net.Conn]bool
	closed       bool
}

func newLinkProxy(addr, target string) (*linkProxy, error) {
	p := &linkProxy{addr: addr, target: target, conns: map[net.Conn]bool{}}
	p.cond = sync.NewCond(&p.mu)
	return p, p.listen()
}

func (p *linkProxy) listen() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go p.accept(ln)
	return nil
}

func (p *linkProxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed || p.mode == linkRefused {
			p.mu.Unlock()
			c.Close()
			up.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies src to dst, holding each chunk while the link is
// blackholed (and so, soon, reading nothing more), and stops when either
// side closes or the link is refused.
func (p *linkProxy) pipe(dst, src net.Conn) {
	defer func() {
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.mode == linkBlackholed && !p.closed {
				p.cond.Wait()
			}
			gone := p.closed || p.mode == linkRefused
			p.mu.Unlock()
			if gone {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// set puts the link in mode m.
func (p *linkProxy) set(m linkMode) {
	p.mu.Lock()
	was := p.mode
	p.mode = m
	if m == linkRefused && was != linkRefused {
		p.ln.Close()
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	if was == linkRefused && m != linkRefused {
		p.listen()
	}
}

func (p *linkProxy) close() {
	p.mu.Lock()
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}
