package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/mcpts"
	"github.com/blindexec/blindexec/store"
)

// TestMain lets the test binary stand in for the blindexec binary, so a
// test can start it as a subprocess (mcp serve --stdio) without a build.
func TestMain(m *testing.M) {
	if os.Getenv("BLINDEXEC_TEST_AS_CLI") == "1" {
		cfg := &config{dial: egresstest.LoopbackOnly((&net.Dialer{}).DialContext)}
		os.Exit(run(cfg, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestCLIMCP(t *testing.T) {
	up := mcptest.New(t)
	c := newCLI(t)
	if code, out, errs := c.run("", "mcp", "server", "add", "med", "--url", up.Endpoint); code != 0 || !strings.Contains(out, "registered med") {
		t.Fatalf("mcp server add: %d %q %q", code, out, errs)
	}
	if code, _, errs := c.run("", "mcp", "server", "add", "nothing"); code != 2 {
		t.Fatalf("add without a target: %d %q", code, errs)
	}
	if code, out, _ := c.run("", "mcp", "server", "list"); code != 0 || !strings.Contains(out, up.Endpoint) || !strings.Contains(out, "  enabled") {
		t.Fatalf("mcp server list: %q", out)
	}
	code, out, errs := c.run("", "import", "mcp", "med")
	if code != 0 || !strings.Contains(out, "+ echo") || !strings.Contains(out, "+ rb_answer") {
		t.Fatalf("import mcp: %d %q %q", code, out, errs)
	}
	if code, out, _ := c.run("", "import", "mcp", "med"); code != 0 || !strings.Contains(out, "added 0") {
		t.Fatalf("re-import must change nothing: %d %q", code, out)
	}
	// The import that changed the catalog is in the administrators' log.
	if said, _ := c.logged(t); strings.Join(said, "\n") != "import mcp: tools of the MCP server “med” imported\nmcp server add: MCP server “med” registered at "+up.Endpoint {
		t.Errorf("the log: %q", said)
	}
	// The imported tool executes blind through the MCP server.
	code, out, errs = c.run("", "exec", "echo", "--args", `{"text":"hi"}`)
	if code != 0 || !strings.Contains(out, `"ok": true`) {
		t.Fatalf("exec an MCP plugin: %d %q %q", code, out, errs)
	}
	if calls := up.Calls(); len(calls) == 0 || calls[len(calls)-1].Tool != "echo" {
		t.Fatalf("the MCP server got %v", calls)
	}

	// The catalog served over stdio, driven by the go-sdk client.
	cmd := exec.Command(os.Args[0], "--db", c.db, "mcp", "serve", "--stdio")
	cmd.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_MCP_USER=7")
	client := sdk.NewClient(&sdk.Implementation{Name: "cli-test", Version: "1"}, nil)
	ctx := context.Background()
	sess, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	tools, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		b, _ := json.Marshal(tool)
		if strings.Contains(string(b), up.Endpoint) || strings.Contains(string(b), "mcp_id") {
			t.Fatalf("execution leaks to the MCP client: %s", b)
		}
	}
	if !strings.Contains(strings.Join(names, ","), "echo") {
		t.Fatalf("tools over stdio: %v", names)
	}
	// An MCP tool without annotations is consequential (issue 33): the
	// call waits for the user's approval, which reaches the stdio server
	// through the database (POST /v1/pending/{id} on any replica).
	before := len(up.Calls())
	res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over stdio"}})
	if err != nil || !res.IsError || len(up.Calls()) != before {
		t.Fatalf("a consequential call over stdio: %v %+v, want a tool error, nothing sent", err, res)
	}
	var waits struct {
		Error struct{ Pending struct{ ID string } }
	}
	json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &waits)
	st, err := store.Open(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	if won, err := st.DecideItem(ctx, waits.Error.Pending.ID, "approved", "user:7", ""); err != nil || !won {
		t.Fatalf("approve %q: %v %v", waits.Error.Pending.ID, won, err)
	}
	st.Close()
	res, err = sess.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over stdio"}})
	if err != nil || res.IsError {
		t.Fatalf("call over stdio after approval: %v %+v", err, res)
	}
	if calls := up.Calls(); calls[len(calls)-1].Arguments["text"] != "over stdio" {
		t.Fatalf("the MCP server got %v", calls[len(calls)-1])
	}

	// The TypeScript SDK's client declaring elicitation is asked over
	// stdio (the connection carries the server's request): accept sends,
	// decline does not.
	t.Run("TypeScript elicitation", func(t *testing.T) {
		mcpts.Require(t)
		for _, action := range []string{"decline", "accept"} {
			before := len(up.Calls())
			out := mcpts.Run(t, time.Minute, []string{"BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_MCP_USER=7", "BLINDEXEC_LOG_LEVEL=error"},
				"elicit_client.mjs", "stdio", "echo", `{"text":"`+action+`"}`, action, os.Args[0], "--db", c.db, "mcp", "serve", "--stdio")
			var got struct {
				Asked  []string
				Result struct{ IsError bool }
			}
			sent := len(up.Calls()) - before
			if err := json.Unmarshal(out, &got); err != nil || len(got.Asked) != 1 || got.Result.IsError != (action == "decline") ||
				sent != map[string]int{"accept": 1, "decline": 0}[action] {
				t.Fatalf("%s over stdio: %s, %d sent (%v)", action, out, sent, err)
			}
		}
	})

	// And with the official TypeScript SDK's client over the same stdio,
	// echo classified as not consequential by the administrator.
	if code, _, errs := c.run("", "plugin", "consequential", "false", "echo"); code != 0 {
		t.Fatalf("plugin consequential false echo: %s", errs)
	}
	t.Run("TypeScript client", func(t *testing.T) {
		mcpts.Require(t)
		out := mcpts.Run(t, time.Minute, []string{"BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_MCP_USER=7", "BLINDEXEC_LOG_LEVEL=error"},
			"client.mjs", "stdio", "echo", `{"text":"from TypeScript"}`, os.Args[0], "--db", c.db, "mcp", "serve", "--stdio")
		var got struct {
			Tools  []struct{ Name string }
			Result struct {
				IsError bool
				Content []struct{ Text string }
			}
		}
		if err := json.Unmarshal(out, &got); err != nil || got.Result.IsError || len(got.Result.Content) == 0 ||
			!strings.Contains(got.Result.Content[0].Text, "from TypeScript") {
			t.Fatalf("client.mjs printed %s: %v", out, err)
		}
		if calls := up.Calls(); calls[len(calls)-1].Arguments["text"] != "from TypeScript" {
			t.Fatalf("the MCP server got %v", calls[len(calls)-1])
		}
	})

	if code, _, _ := c.run("", "mcp", "server", "rm", "med"); code != 0 {
		t.Fatal("mcp server rm")
	}
}

// mcp serve --stdio acting for no user (BLINDEXEC_MCP_USER unset) says so
// as it starts, naming the setting: otherwise a newcomer's first sign is a
// tool's missing_credentials.
func TestMCPServeStdioWarnsWithoutUser(t *testing.T) {
	c := newCLI(t)
	for _, tt := range []struct {
		user string
		warn bool
	}{{"", true}, {"7", false}} {
		cmd := exec.Command(os.Args[0], "--db", c.db, "mcp", "serve", "--stdio") // stdin empty: the session ends at once
		cmd.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_LOG_LEVEL=warn", "BLINDEXEC_MCP_USER="+tt.user)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("user %q: %v %s", tt.user, err, stderr.String())
		}
		if got := strings.Contains(stderr.String(), "acting for no user: stored credentials do not apply; set BLINDEXEC_MCP_USER"); got != tt.warn {
			t.Errorf("BLINDEXEC_MCP_USER=%q: warned %v, want %v: %s", tt.user, got, tt.warn, stderr.String())
		}
	}
}

// TestCLIImportOfAMovedServer: `import mcp SERVER --user N` read the
// user's stored keys and listed the server with them wherever its url now
// pointed: a url moved by SQL (RuoYi's page) took the key to the new host,
// which the API's listing and every call refuse (credential_not_bound).
func TestCLIImportOfAMovedServer(t *testing.T) {
	up, evil := mcptest.New(t), mcptest.New(t)
	c := newCLI(t)
	if code, _, errs := c.run("", "mcp", "server", "add", "med", "--url", up.Endpoint, "--auth", `{"type":"bearer","token":"MED_TOKEN"}`); code != 0 {
		t.Fatalf("mcp server add: %d %q", code, errs)
	}
	const secret = "med-secret-0123456789"
	if code, _, errs := c.run(secret, "cred", "set", "7", "MED_TOKEN"); code != 0 {
		t.Fatalf("cred set: %d %q", code, errs)
	}
	st, err := store.Open(context.Background(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.DB().Exec("UPDATE sys_ai_mcp_server SET url = ? WHERE name = 'med'", evil.Endpoint)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := c.run("", "import", "mcp", "med", "--user", "7")
	for _, h := range evil.Headers() {
		if strings.Contains(h.Get("Authorization"), secret) {
			t.Fatalf("the new host was sent user 7's key: %d %q %q", code, out, errs)
		}
	}
	if code == 0 || !strings.Contains(errs, "credentials_url") {
		t.Errorf("import of the moved server with the user's keys: %d %q %q, want refused naming credentials_url", code, out, errs)
	}
	// The key given on the command line is the operator's own: sent.
	if code, out, errs := c.run("", "import", "mcp", "med", "--cred", "MED_TOKEN=given-0123456789"); code != 0 {
		t.Errorf("import with the key given: %d %q %q", code, out, errs)
	}
}

// TestCLIImportMCPURLInCapitals (onerow81): `import mcp HTTP://…` (a URL,
// its scheme in capitals, as Go's client takes it) was read as a server's
// name, and the refusal quoted it whole, a password with it. A URL in any
// case is registered and imported; a reference found nowhere is quoted
// without its userinfo.
func TestCLIImportMCPURLInCapitals(t *testing.T) {
	up := mcptest.New(t)
	c := newCLI(t)
	if code, out, errs := c.run("", "import", "mcp", strings.Replace(up.Endpoint, "http://", "HTTP://", 1)); code != 0 || !strings.Contains(out, "+ echo") {
		t.Fatalf("import mcp HTTP://…: %d %q %q", code, out, errs)
	}
	const secret = "pw-Cli81Secret"
	for _, ref := range []string{"HTTPS://u:" + secret + "@127.0.0.1:1/mcp", "FTP://u:" + secret + "@127.0.0.1:1/mcp"} {
		code, out, errs := c.run("", "import", "mcp", ref)
		if code == 0 || strings.Contains(out+errs, secret) || strings.HasPrefix(ref, "FTP") && !strings.Contains(errs, `"FTP://…@127.0.0.1:1/mcp"`) {
			t.Errorf("import mcp %s: %d %q %q: want refused, the password never shown", ref, code, out, errs)
		}
	}
}
