package mcpserver

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session that ends while a request of it is in flight (DELETE, which
// waits for the request, or the request itself closing it) is not timed
// again when that request ends: a restarted idle timer would hold the
// ended session — its server, its tools, the context of the request that
// opened it — for the idle time, outside every cap.
func TestRegistryEndedWhileBusy(t *testing.T) {
	g := newRegistry(SessionLimits{Idle: time.Hour})
	if err := g.reserve(7); err != nil {
		t.Fatal(err)
	}
	ss := connectInMemory(t)
	g.add(7, ss)
	g.mu.Lock()
	l := g.byID[ss.ID()]
	g.mu.Unlock()
	done := g.use(ss.ID(), 7)
	ss.Close()
	for g.count() != 0 { // forgotten by add's goroutine
		time.Sleep(time.Millisecond)
	}
	done()
	if l.idle.Stop() {
		t.Error("the idle timer of an ended session was started again")
	}
}

// connectInMemory is a server session of the SDK over an in-memory
// transport, its client connected.
func connectInMemory(t *testing.T) *sdk.ServerSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := sdk.NewServer(&sdk.Implementation{Name: "s", Version: "1"}, nil).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return ss
}
