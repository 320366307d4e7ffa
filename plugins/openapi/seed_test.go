package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
)

// TestSeed002 imports the seed's JSON-RPC document (re-indented by hand)
// and calls tools/call through the executor: jsonrpc and method come from
// their single-value enums, not from the LLM.
func TestSeed002(t *testing.T) {
	data, err := os.ReadFile("testdata/seed002.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Load(data, "seed002.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Convert(doc, Options{}); !errors.Is(err, ErrNoServer) {
		t.Fatalf("Convert without servers or base URL: %v, want ErrNoServer", err)
	}
	up := newUpstream(t, nil)
	ops, failures, err := Convert(doc, Options{BaseURL: up.URL + "/mcp"})
	if err != nil || len(failures) > 0 || len(ops) != 3 {
		t.Fatalf("Convert: %d operations, failures %v, %v", len(ops), failures, err)
	}
	var call Operation
	for _, op := range ops {
		if op.Key == "POST /tools/call" {
			call = op
		}
	}
	p := call.Plugin
	if p == nil {
		t.Fatal("no POST /tools/call")
	}
	if got, _ := json.Marshal(p.FixedParams); string(got) != `{"jsonrpc":"2.0","method":"tools/call"}` {
		t.Errorf("fixed_params = %s", got)
	}
	var llm struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(p.Tool(nil).Function.Parameters, &llm); err != nil {
		t.Fatal(err)
	}
	for _, hidden := range []string{"jsonrpc", "method"} {
		if _, ok := llm.Properties[hidden]; ok || strings.Contains(strings.Join(llm.Required, ","), hidden) {
			t.Errorf("the LLM's schema shows %s: %v %v", hidden, llm.Properties, llm.Required)
		}
	}

	exec := engine.NewExecutor(egresstest.Client(t))
	args := `{"id": "2", "params": {"name": "rb.answer", "arguments": {"question": "How do I restart the payment service?"}}}`
	res, err := exec.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(args)})
	if err != nil || !res.OK {
		t.Fatalf("Execute: %v %+v", err, res.Error)
	}
	got := up.last(t)
	// The defaults (topK 5, useLLM true) are the server's: not sent.
	const want = `{"id":"2","jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"question":"How do I restart the payment service?"},"name":"rb.answer"}}`
	if got.RequestURI != "/mcp/tools/call" || got.Header.Get("Content-Type") != "application/json" || string(got.Body) != want {
		t.Errorf("upstream got %s %s (%s)\n%s\nwant POST /mcp/tools/call (application/json)\n%s",
			got.Method, got.RequestURI, got.Header.Get("Content-Type"), got.Body, want)
	}
}

// TestSeed002AsGiven: the seed file itself, its indentation lost, is a
// parse error that names its line.
func TestSeed002AsGiven(t *testing.T) {
	files, _ := filepath.Glob("../../../shared/seeds/002_*.txt")
	if len(files) == 0 {
		t.Skip("seeds not available")
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(data, "seed002.txt")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 6 {
		t.Fatalf("Load = %v, want a *ParseError at line 6", err)
	}
	const want = "parse seed002.txt: line 6: could not find expected ':' (is the YAML indentation intact?)"
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
}
