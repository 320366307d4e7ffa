package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/jsonlimit"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// memSink keeps execution records in memory.
type memSink struct {
	mu   sync.Mutex
	recs []engine.Record
}

func (s *memSink) WriteRecords(_ context.Context, recs []engine.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, recs...)
	return nil
}

// Issue 13, point 1: the seed 004 proxy goes through the executor: its
// arguments are validated and bounded (nothing reaches the server when
// they are refused) and every call leaves a record.
func TestMCPProxyThroughExecutor(t *testing.T) {
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	sink := &memSink{}
	e.ex.Recorder = engine.NewRecorder(sink, engine.RecorderOptions{})
	e.register()
	path := "/v1/mcp/proxy/med/tools/generate_disease_treatment_plan/call"
	deep := func(n int) string {
		return `{"disease_id":"d1","patient_age":45,"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	}
	for _, tc := range []struct {
		name, body string
		status     int
		code, says string
	}{
		{"ok", `{"disease_id":"d1","patient_age":45}`, 200, "", ""},
		{"invalid", `{"disease_id":"d1","patient_age":"old"}`, 400, engine.CodeInvalidArguments, "patient_age"},
		{"past the argument depth", deep(engine.ArgumentLimits.Depth), 400, engine.CodeInvalidArguments, "limit of 64 levels"},
		{"100,000 deep", deep(100_000), 400, codeBodyTooComplex, "limit of 72 levels"},
	} {
		code, out := e.do("POST", path, e.userTok, tc.body)
		msg := errMessage(out)
		if code != tc.status || errCode(out) != tc.code || !strings.Contains(msg, tc.says) {
			t.Errorf("%s: %d %v, want %d %s saying %q", tc.name, code, out, tc.status, tc.code, tc.says)
		}
	}
	if n := len(e.up.Calls()); n != 1 {
		t.Errorf("the server got %d calls, want the valid one only", n)
	}
	if err := e.ex.Recorder.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The refused body never reached the executor; the other three did.
	if len(sink.recs) != 3 || sink.recs[0].Status != engine.StatusOK || sink.recs[1].Status != engine.StatusRefused || sink.recs[0].UserID != 7 {
		t.Errorf("records %+v, want ok then refusals, for user 7", sink.recs)
	}
}

// Issue 13, point 1: every JSON route scans its body before decoding it
// and caps its size.
func TestBodyLimits(t *testing.T) {
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	wide := "[" + strings.Repeat("0,", jsonlimit.Messages.Elements) + "0]"
	huge := `{"name":"x","arguments":{"s":"` + strings.Repeat("x", maxBody) + `"}}`
	var props strings.Builder
	for i := range plugins.DefaultSchemaLimits.Properties + 1 {
		fmt.Fprintf(&props, `"p%d":{"type":"string"},`, i)
	}
	costly := `{"plugin":{"name":"big","description":"d","parameters":{"type":"object","properties":{` + strings.TrimSuffix(props.String(), ",") +
		`}},"execution":{"method":"GET","base_url":"https://api.example.com/x"}},"arguments":{}}`
	for _, tc := range []struct {
		method, path, token, body string
		status                    int
		code, says                string
	}{
		{"POST", "/v1/execute", mcpService, `{"name":"x","arguments":` + deep + `}`, 400, codeBodyTooComplex, "limit of 72 levels"},
		{"POST", "/v1/execute", mcpService, `{"name":"x","arguments":{"a":` + wide + `}}`, 400, codeBodyTooComplex, "limit of 1000000 elements"},
		{"POST", "/v1/execute", mcpService, huge, 413, codeBodyTooLarge, "limit of 8388608 bytes"},
		{"POST", "/v1/execute", mcpService, costly, 400, "invalid_plugin", "plugin.parameters: the schema has more than the limit of 2000 properties"},
		{"POST", "/v1/tools/x/call", mcpService, `{"a":` + deep + `}`, 400, codeBodyTooComplex, "levels"},
		{"POST", "/v1/plugins", mcpAdmin, deep, 400, codeBodyTooComplex, "levels"},
		{"POST", "/v1/runs", mcpService, `{"messages":` + deep + `}`, 400, codeBodyTooComplex, "levels"},
		{"POST", "/v1/mcp/servers", mcpAdmin, deep, 400, codeBodyTooComplex, "levels"},
		{"POST", "/mcp", mcpService, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + deep + `}`, 400, codeBodyTooComplex, "levels"},
	} {
		code, out := e.do(tc.method, tc.path, tc.token, tc.body, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
		msg := errMessage(out)
		if code != tc.status || errCode(out) != tc.code || !strings.Contains(msg, tc.says) {
			t.Errorf("%s %s: %d %v, want %d %s saying %q", tc.method, tc.path, code, out, tc.status, tc.code, tc.says)
		}
	}
	// A body of undeclared length (chunked) is cut at the limit too.
	req, _ := http.NewRequest("POST", e.url+"/v1/execute", io.MultiReader(strings.NewReader(huge)))
	req.Header.Set("Authorization", "Bearer "+mcpService)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over the limit: %d", resp.StatusCode)
	}
	// Arguments between the limits reach the executor, which names its own.
	code, out := e.do("POST", "/v1/tools/nope/call", mcpService, `{"a":`+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`}`)
	if code != http.StatusNotFound {
		t.Errorf("a body within the scan limits: %d %v", code, out)
	}
}

func errMessage(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}
