package mcpserver

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A client that opens its GET stream and never reads it does not hold
// the server: what the server sends there (tools/list_changed,
// elicitation/create) is written by the stream's own request, and past a
// backlog refused, so that the server's goroutine that sends it — a call
// in flight, which Close waits for, and which ends by the idle timer or a
// cap of another user's initialize wait for in turn — never waits on the
// client's socket.
func TestStreamClientNotReading(t *testing.T) {
	p := oneTool{{Name: "echo", Parameters: json.RawMessage(`{"type":"object"}`)}}
	svc := NewService(p, echoExecutor(), Options{})
	srv := httptest.NewServer(svc.Handler(func(*http.Request) (Identity, error) { return Identity{User: 7}, nil }))
	defer srv.Close()
	defer svc.Close()

	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get(headerSession)

	// The stream's client: it reads the headers, then nothing.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n%s: %s\r\n\r\n", srv.Listener.Addr(), headerSession, sid)
	if status, err := bufio.NewReader(conn).ReadString('\n'); err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("GET: %q %v", status, err)
	}
	for !svc.holdsStream(sid) {
		time.Sleep(time.Millisecond)
	}
	v, _ := svc.httpSessions.Load(sid)
	hs := v.(*httpSession)

	// 64 MiB of notifications: more than the sockets between them hold.
	params, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", 8<<10)})
	sent := make(chan error, 1)
	go func() {
		var refused int
		for range 8 << 10 {
			err := hs.Write(t.Context(), &jsonrpc.Request{Method: "notifications/message", Params: params})
			if errors.Is(err, errRejected) {
				refused++
			} else if err != nil {
				sent <- err
				return
			}
		}
		if refused == 0 {
			sent <- errors.New("nothing refused")
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a bound on a hang, not a measure of speed
		t.Fatal("Write waits on a client that does not read its stream")
	}
	// The session ends as it should: the stream's request returns.
	if err := hs.ss.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLoopbackAddr holds the Host check's reading of the local address
// without its string to the reading of its string.
func TestLoopbackAddr(t *testing.T) {
	for _, a := range []net.Addr{
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080},
		&net.TCPAddr{IP: net.IPv4(127, 3, 2, 1), Port: 1},
		&net.TCPAddr{IP: net.IPv6loopback, Port: 443},
		&net.TCPAddr{IP: net.IPv6loopback, Port: 443, Zone: "lo"},
		&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 80},
		&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 80},
		&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 80, Zone: "eth0"},
		&net.TCPAddr{IP: net.IPv6unspecified, Port: 80},
		&net.TCPAddr{Port: 80},
		&net.UnixAddr{Name: "/run/blindexec.sock", Net: "unix"},
	} {
		if got, want := loopbackAddr(a), loopback(a.String()); got != want {
			t.Errorf("%s: loopbackAddr %v, loopback of its string %v", a, got, want)
		}
	}
}
