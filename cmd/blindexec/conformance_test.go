package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/internal/mcpconformance"
)

// stdioBridge serves `mcp serve --stdio` processes over streamable HTTP,
// one process a session, for a suite that only speaks HTTP: a POSTed
// request's line goes to the process's stdin and its response line
// comes back as the POST's answer; what else the process writes goes to
// the session's GET stream. It carries lines and decides nothing.
type stdioBridge struct {
	t       *testing.T
	command func() *exec.Cmd

	mu       sync.Mutex
	sessions map[string]*bridged
}

type bridged struct {
	stdin   io.WriteCloser
	mu      sync.Mutex
	waiting map[string]chan []byte // by the request's raw id
	events  chan []byte
}

func (b *stdioBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	b.mu.Lock()
	s := b.sessions[sid]
	b.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && sid == "":
		s, sid = b.start(), rand.Text()
		b.mu.Lock()
		b.sessions[sid] = s
		b.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
	case s == nil:
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		for {
			select {
			case line := <-s.events:
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", line)
				http.NewResponseController(w).Flush()
			case <-r.Context().Done():
				return
			}
		}
	case http.MethodDelete:
		s.stdin.Close()
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		body = bytes.TrimSpace(body)
		id := gjson.GetBytes(body, "id")
		var answer chan []byte
		if id.Exists() && gjson.GetBytes(body, "method").Exists() {
			answer = make(chan []byte, 1)
			s.mu.Lock()
			s.waiting[id.Raw] = answer
			s.mu.Unlock()
		}
		if _, err := s.stdin.Write(append(body, '\n')); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if answer == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		select {
		case line := <-answer:
			w.Header().Set("Content-Type", "application/json")
			w.Write(line)
		case <-r.Context().Done():
		}
	}
}

// start starts a process and reads its lines.
func (b *stdioBridge) start() *bridged {
	cmd := b.command()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	s := &bridged{stdin: stdin, waiting: map[string]chan []byte{}, events: make(chan []byte, 64)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := bytes.Clone(sc.Bytes())
			if id := gjson.GetBytes(line, "id"); id.Exists() && !gjson.GetBytes(line, "method").Exists() {
				s.mu.Lock()
				ch := s.waiting[id.Raw]
				delete(s.waiting, id.Raw)
				s.mu.Unlock()
				if ch != nil {
					ch <- line
					continue
				}
			}
			select {
			case s.events <- line:
			default:
			}
		}
	}()
	return s
}

// TestConformanceStdio runs the official MCP conformance suite's server
// scenarios against `mcp serve --stdio`, through a test-side bridge
// from the suite's streamable HTTP to the process's lines.
func TestConformanceStdio(t *testing.T) {
	suite := mcpconformance.Require(t)
	c := newCLI(t)
	plugin := filepath.Join(t.TempDir(), "get_repo.json")
	os.WriteFile(plugin, []byte(`{"name":"get_repo","description":"Read a repository","parameters":{"type":"object","properties":{"repo":{"type":"string"}}},
	"execution":{"method":"GET","base_url":"http://127.0.0.1:9/repo"}}`), 0o600)
	if code, _, errs := c.run("", "plugin", "add", plugin); code != 0 {
		t.Fatalf("plugin add: %d %s", code, errs)
	}
	bridge := &stdioBridge{t: t, sessions: map[string]*bridged{}, command: func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "--db", c.db, "mcp", "serve", "--stdio")
		cmd.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_MCP_USER=7")
		return cmd
	}}
	srv := httptest.NewServer(bridge)
	t.Cleanup(srv.Close)
	run := []string{"server-initialize", "ping", "tools-list", "logging-set-level", "server-sse-multiple-streams", "resources-list", "prompts-list"}
	for _, sc := range run {
		t.Run(sc, func(t *testing.T) { suite.Run(t, srv.URL+"/mcp", sc) })
	}
	skipped := map[string]string{"dns-rebinding-protection": "checks an HTTP server's Host header: stdio has none (the bridge is the test's)"}
	for sc, why := range mcpconformance.Fixtures {
		skipped[sc] = why
	}
	mcpconformance.Check(t, suite.Scenarios(t), run, skipped)
}
