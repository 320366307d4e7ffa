package api_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestExecuteArgumentsKind (leftovers77): /v1/execute's arguments that
// are neither an object nor a string holding one are refused naming the
// field, what it may be and what was sent, never its value. Before: a
// string holding text answered "got something that is not JSON".
func TestExecuteArgumentsKind(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	e := newEnv(t, testdb.Open(t, store.DialectSQLite))
	plugin := `{"name":"lookup","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},"execution":{"method":"GET","base_url":"` + up.URL + `"}}`
	if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		t.Fatalf("add plugin: %d %v", code, body)
	}
	const secret = "sk-live-Qm4pX9"
	for _, c := range []struct {
		args any
		got  string
	}{
		{secret, "got a string holding text that is not JSON"},
		{"[1, 2]", "got a string holding an array"},
		{"42", "got a string holding a number"},
		{`"{\"q\":\"` + secret + `\"}"`, "got a string holding a string holding a JSON object"},
		{true, "got a boolean"},
		{[]any{secret}, "got an array"},
	} {
		args, got := c.args, c.got
		code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "lookup", "arguments": args})
		msg := fmt.Sprint(body)
		if !strings.Contains(msg, "invalid_arguments") || !strings.Contains(msg, "the field arguments must be a JSON object, or a string holding one; "+got) {
			t.Errorf("arguments %v: %d %s, want invalid_arguments naming the field and %q", args, code, msg, got)
		}
		if strings.Contains(msg, secret) {
			t.Errorf("arguments %v: the answer quotes them: %s", args, msg)
		}
	}
	for _, args := range []any{`{"q":"x"}`, map[string]any{"q": "x"}, "", nil} {
		if code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "lookup", "arguments": args}); code != http.StatusOK || body["ok"] != true {
			t.Errorf("arguments %#v: %d %v, want the call made", args, code, body)
		}
	}
	if n := len(up.received()); n != 4 {
		t.Errorf("%d calls sent, want the 4 valid ones", n)
	}
}
