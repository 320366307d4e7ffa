package api_test

import (
	"bytes"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/bench/mcprelay"
)

// besideRelay serves the hand-written MCP relay (bench/mcprelay, the
// floor of issue 47 point 4) and the API's /mcp over loopback HTTP, both
// before one upstream, records off, at serve's default log level: a
// tools/call of 2026-07-28 to each by the same plain HTTP client (which
// reads the answer and decodes nothing, unlike the runner's go-sdk
// client), one after another on kept connections.
func besideRelay(t testing.TB) (relay, engine func()) {
	e, upstream, token := servingLookup(t, func(s *api.Server) {
		s.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
		s.Executor.Logger = s.Logger
	})
	srv := httptest.NewServer(e.handler)
	t.Cleanup(srv.Close)
	raw := httptest.NewServer(mcprelay.NewRaw(upstream))
	t.Cleanup(raw.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(client.CloseIdleConnections)
	caller := func(url, tool, args, auth string) func() {
		body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
			"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {tool}}
		if auth != "" {
			h.Set("Authorization", "Bearer "+auth)
		}
		return func() {
			req, err := http.NewRequest("POST", url, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = h.Clone()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"resultType":"complete"`)) || bytes.Contains(b, []byte(`"isError":true`)) {
				t.Fatalf("tools/call of %s: %d %s %v", url, resp.StatusCode, b, err)
			}
		}
	}
	return caller(raw.URL, mcprelay.Tool, `{"keyword":"acme"}`, ""), caller(srv.URL+"/mcp", "lookup", `{"q":"acme"}`, token)
}

// goroutinesPerCall is how many goroutines this process starts a call of
// call, over n calls after a warm-up.
func goroutinesPerCall(call func(), n int) float64 {
	for range 100 {
		call()
	}
	created := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(created)
	before := created[0].Value.Uint64()
	for range n {
		call()
	}
	metrics.Read(created)
	return float64(created[0].Value.Uint64()-before) / float64(n)
}

// goroutinesChild marks the process TestStatelessCallGoroutines starts to
// count in: the count is the whole process's, and among the package's
// other tests an earlier one's goroutines (a stream's, a server's) start
// their own during the calls.
const goroutinesChild = "BLINDEXEC_TEST_GOROUTINES_CHILD"

// TestStatelessCallGoroutines holds /mcp's tools/call of 2026-07-28 to the
// hand-written relay's goroutines a call (issue 47 point 4, the seventh
// pass): on two cores each goroutine handed a call is a scheduler's wake
// on its critical path. Both start net/http's two, the background read of
// the request's connection on each server (/mcp's or the relay's, and the
// upstream's); the engine starts none of its own (the record is queued,
// metrics counted in place) and reuses its connection to the upstream (a
// new one is four more: the dial, the connection's read and write loops
// and the upstream server's own). Counted in a process of its own.
func TestStatelessCallGoroutines(t *testing.T) {
	if testing.Short() {
		t.Skip("serves two thousand calls")
	}
	if os.Getenv(goroutinesChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStatelessCallGoroutines$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), goroutinesChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the counting process: %v\n%s", err, out)
		}
		t.Logf("%s", out)
		return
	}
	relay, engine := besideRelay(t)
	// The process starts goroutines of its own in time (a timer's, the
	// database pool's, the driver's), not a call's: under -race on a
	// loaded machine some twenty landed in 1,000 calls. So the fewest of
	// five batches, taking turns, and a margin of 0.05 a call: a goroutine
	// handed off per call is 1.0, one every tenth call 0.1.
	const batches, n = 5, 200
	r, e := math.Inf(1), math.Inf(1)
	for range batches {
		r, e = min(r, goroutinesPerCall(relay, n)), min(e, goroutinesPerCall(engine, n))
	}
	t.Logf("goroutines started a call, the fewest of %d batches of %d: the relay %.3f, /mcp %.3f", batches, n, r, e)
	if e > r+0.05 {
		t.Errorf("/mcp starts %.3f goroutines a tools/call, the hand-written relay %.3f: a goroutine handed off per call, or the upstream's connection not kept", e, r)
	}
}

// BenchmarkBesideRelay is a tools/call of 2026-07-28 to the hand-written
// relay and to /mcp (besideRelay): what the engine's whole server costs
// beside the floor's, without the runner's go-sdk client (whose decoding
// of the answer is measured apart) and without records. For instructions a
// call under callgrind, the run of 10,000 calls less that of 1,000:
//
//	CGO_ENABLED=0 go test -c -o api.test ./api/
//	GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
//	  ./api.test -test.run '^$' -test.bench 'BesideRelay/mcp' -test.benchtime 10000x
func BenchmarkBesideRelay(b *testing.B) {
	relay, engine := besideRelay(b)
	for _, c := range []struct {
		name string
		call func()
	}{{"relay", relay}, {"mcp", engine}} {
		b.Run(c.name, func(b *testing.B) {
			for range 100 {
				c.call()
			}
			b.ReportAllocs()
			for b.Loop() {
				c.call()
			}
		})
	}
}
