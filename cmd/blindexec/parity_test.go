package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/auth"
)

// TestEveryRuleOnTheCLI (parity76): the command line's entry points —
// `exec` (the operator's, run as the administrator: no access rule, no
// confirmation, its --plugin unbound, by design) and `mcp serve --stdio`
// (an MCP client of BLINDEXEC_MCP_USER, decided as /mcp is) — under the
// rules the executor decides for them too: a quota spent refuses the
// next call, nothing sent; a secret the upstream echoes is masked in what
// the caller reads; over stdio a tool the user may not use is refused.
// api's TestEveryRuleOnEveryEntryPoint drives the same rules over HTTP.
func TestEveryRuleOnTheCLI(t *testing.T) {
	const secret = "ghp-cli-parity-secret-0123456789"
	var quotaSent, secretSent atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/quota":
			quotaSent.Add(1)
		case "/secret":
			secretSent.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"echo": r.Header.Get("X-Token")})
	}))
	defer up.Close()
	c := newCLI(t)
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"echo":   `{"name":"cli_echo","description":"Echoes.","parameters":{"type":"object","properties":{}},"execution":{"method":"GET","base_url":"UP/echo"},"auth_config":{"type":"api_key","mapping":[{"source":"GH_TOKEN","target":"X-Token"}]}}`,
		"quota":  `{"name":"cli_quota","description":"Counted.","parameters":{"type":"object","properties":{}},"execution":{"method":"GET","base_url":"UP/quota"}}`,
		"secret": `{"name":"cli_secret","description":"Payroll.","perms":["hr:payroll:list"],"parameters":{"type":"object","properties":{}},"execution":{"method":"GET","base_url":"UP/secret"}}`,
	} {
		file := filepath.Join(dir, name+".json")
		os.WriteFile(file, []byte(strings.ReplaceAll(doc, "UP", up.URL)), 0o600)
		if code, _, errs := c.run("", "plugin", "add", file); code != 0 {
			t.Fatalf("plugin add %s: %d %q", name, code, errs)
		}
	}
	if code, _, errs := c.run(secret+"\n", "cred", "set", "7", "GH_TOKEN"); code != 0 {
		t.Fatalf("cred set: %d %q", code, errs)
	}
	if code, _, errs := c.run("", "quota", "add", "cli-once", "--plugin", "cli_quota", "--calls", "1", "--window", "day", "--user", "7"); code != 0 {
		t.Fatalf("quota add: %d %q", code, errs)
	}

	// exec: the quota's one call, then refused; the echo masked.
	if code, out, errs := c.run("", "exec", "cli_quota", "--user", "7"); code != 0 || quotaSent.Load() != 1 {
		t.Fatalf("exec cli_quota: %d %q %q", code, out, errs)
	}
	if code, out, errs := c.run("", "exec", "cli_quota", "--user", "7"); code != 1 || !strings.Contains(errs, "quota_exceeded") || quotaSent.Load() != 1 {
		t.Errorf("exec cli_quota past its quota: %d %q %q, %d sent; want quota_exceeded, nothing sent", code, out, errs, quotaSent.Load())
	}
	if code, out, errs := c.run("", "exec", "cli_echo", "--user", "7"); code != 0 || strings.Contains(out+errs, secret) || !strings.Contains(out, auth.Redacted) {
		t.Errorf("exec cli_echo: %d %q %q, want the echoed secret masked", code, out, errs)
	}

	// mcp serve --stdio, for user 7.
	cmd := exec.Command(os.Args[0], "--db", c.db, "mcp", "serve", "--stdio")
	cmd.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_MCP_USER=7")
	sess, err := sdk.NewClient(&sdk.Implementation{Name: "parity", Version: "1"}, nil).Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, tc := range []struct {
		tool string
		sent *atomic.Int64
		want func(string) bool
	}{
		{"cli_quota", &quotaSent, func(a string) bool { return strings.Contains(a, "quota_exceeded") }},
		{"cli_secret", &secretSent, func(a string) bool { return strings.Contains(a, "permission_denied") }},
		{"cli_echo", nil, func(a string) bool { return strings.Contains(a, auth.Redacted) && !strings.Contains(a, secret) }},
	} {
		var before int64
		if tc.sent != nil {
			before = tc.sent.Load()
		}
		res, err := sess.CallTool(t.Context(), &sdk.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
		var answer string
		if err != nil {
			answer = err.Error()
		} else {
			b, _ := json.Marshal(res)
			answer = string(b)
		}
		if !tc.want(answer) || tc.sent != nil && tc.sent.Load() != before {
			t.Errorf("%s over stdio: %.600s", tc.tool, answer)
		}
	}
}
