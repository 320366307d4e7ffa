package tcpproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echo is a loopback server that writes back each line it reads.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn) (string, error) {
	c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// TestProxyFaults: forwarding, then each fault as a client sees it.
func TestProxyFaults(t *testing.T) {
	p, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	open := dial()
	if got, err := roundTrip(open); err != nil || got != "ping\n" {
		t.Fatalf("forwarding: %q, %v", got, err)
	}

	p.Blackhole()
	if _, err := roundTrip(open); err == nil {
		t.Error("blackholed: an open connection was answered")
	}
	if _, err := roundTrip(dial()); err == nil {
		t.Error("blackholed: a new connection was answered")
	}

	p.Refuse()
	if c, err := net.Dial("tcp", p.Addr()); err == nil {
		c.Close()
		t.Error("refused: a connect succeeded")
	}

	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(dial()); err != nil || got != "ping\n" {
		t.Fatalf("restored: %q, %v", got, err)
	}
}
