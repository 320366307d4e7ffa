package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/internal/logbuf"
	"github.com/blindexec/blindexec/plugins"
)

// hit is a request as an upstream received it: the raw request URI and
// the body bytes, not a decoded view.
type hit struct {
	Method     string
	RequestURI string
	Host       string
	Header     http.Header
	Body       []byte
}

// upstream is a real HTTP server on loopback that records what it gets.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	hits []hit
}

func newUpstream(t testing.TB, respond http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	if respond == nil {
		respond = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}
	}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.hits = append(u.hits, hit{r.Method, r.RequestURI, r.Host, r.Header.Clone(), body})
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		respond(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) Hits() []hit {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]hit(nil), u.hits...)
}

// last is the only request the upstream received.
func (u *upstream) last(t testing.TB) hit {
	t.Helper()
	hits := u.Hits()
	if len(hits) != 1 {
		t.Fatalf("upstream received %d requests, want 1", len(hits))
	}
	return hits[0]
}

// memSink collects records in memory (the store is not under test here).
type memSink struct {
	mu   sync.Mutex
	recs []Record
	fail int // fail this many writes first
}

func (s *memSink) WriteRecords(_ context.Context, recs []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return fmt.Errorf("sink down")
	}
	s.recs = append(s.recs, recs...)
	return nil
}

func (s *memSink) records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.recs...)
}

// harness is an Executor with records and debug logs captured.
type harness struct {
	*Executor
	sink *memSink
	logs *logbuf.Buffer
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	h := &harness{Executor: NewExecutor(egresstest.Client(t)), sink: &memSink{}, logs: &logbuf.Buffer{}}
	h.Logger = slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.Recorder = NewRecorder(h.sink, RecorderOptions{Logger: h.Logger})
	t.Cleanup(func() { h.Recorder.Close(context.Background()) })
	return h
}

// flush closes the recorder and returns every record written.
func (h *harness) flush(t testing.TB) []Record {
	t.Helper()
	if err := h.Recorder.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h.sink.records()
}

// mustPlugin parses a plugin document, with %s in it replaced by base.
func mustPlugin(t testing.TB, doc, base string) *plugins.Plugin {
	t.Helper()
	p, err := plugins.ParseJSON(json.RawMessage(strings.ReplaceAll(doc, "%s", base)))
	if err != nil {
		t.Fatalf("plugin: %v", err)
	}
	return p
}

func (h *harness) call(t testing.TB, p *plugins.Plugin, args string, creds map[string]string) (*Result, error) {
	t.Helper()
	return h.Execute(context.Background(), Call{Plugin: p, Arguments: json.RawMessage(args), Credentials: creds, UserID: 7, RunID: "run-1"})
}

// closedPort is a loopback address nothing listens on.
func closedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func resultJSON(t testing.TB, r *Result) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
