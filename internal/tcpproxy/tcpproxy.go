// Package tcpproxy is a loopback TCP proxy that tests and the fault runner
// put in front of a database to make it fail the ways a network does:
// blackholed (connections stay open and are accepted, nothing goes
// through: a partition), refused (nothing listens, open connections
// closed: a database that went away), and restored.
package tcpproxy

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Proxy forwards connections on its loopback address to a target.
type Proxy struct {
	addr, target string
	holed        atomic.Bool
	holeAfter    atomic.Pointer[[]byte] // BlackholeAfter's bytes
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]struct{}
}

// New listens on a free loopback port and forwards to target.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	return p, nil
}

// Addr is the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.addr }

// Blackhole stops forwarding, both ways, on every connection open and to
// come; new connections are still accepted.
func (p *Proxy) Blackhole() { p.holed.Store(true) }

// BlackholeAfter forwards to the target the next read from a client that
// holds b, then blackholes as Blackhole does: the database receives that
// statement (a COMMIT) and its answer is lost.
func (p *Proxy) BlackholeAfter(b []byte) { p.holeAfter.Store(&b) }

// Refuse closes the listener and every connection: connects are refused.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
}

// Restore listens again on the same address and forwards.
func (p *Proxy) Restore() error {
	p.holed.Store(false)
	p.holeAfter.Store(nil)
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

// Close ends the proxy and its connections.
func (p *Proxy) Close() { p.Refuse() }

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *Proxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) pipe(c net.Conn) {
	p.track(c, true)
	defer p.track(c, false)
	defer c.Close()
	if p.holed.Load() {
		io.Copy(io.Discard, c) // accepted, never answered
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.track(s, true)
	defer p.track(s, false)
	defer s.Close()
	done := make(chan struct{}, 2)
	forward := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && !p.holed.Load() {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
				if after := p.holeAfter.Load(); src == c && after != nil && bytes.Contains(buf[:n], *after) {
					p.holed.Store(true)
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go forward(s, c)
	go forward(c, s)
	<-done
}
