package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/store"
)

// TestCLIMCPAgent (issue 46): `mcp serve --stdio --agent NAME` serves the
// agent's tools only: tools/list holds them, a call of another tool is
// refused and nothing is sent; an agent the user may not use (its perms
// not held) or a disabled one stops the command before it serves.
func TestCLIMCPAgent(t *testing.T) {
	up, sent := countingUpstream(t)
	c := newCLI(t)
	for _, name := range []string{"inside", "outside"} {
		file := filepath.Join(t.TempDir(), name+".json")
		doc := fmt.Sprintf(`{"name":%q,"description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"%s/%s"}}`, name, up.URL, name)
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := c.run("", "plugin", "add", file); code != 0 {
			t.Fatalf("plugin add %s: %s", name, errs)
		}
	}
	for _, args := range [][]string{
		{"staff", "--plugin", "inside"},
		{"locked", "--plugin", "inside", "--perm", "hr:leave:list"},
		{"paused", "--plugin", "inside", "--disabled"},
	} {
		if code, _, errs := c.run("", append([]string{"agent", "add"}, args...)...); code != 0 {
			t.Fatalf("agent add %v: %s", args, errs)
		}
	}
	serve := func(agent string) (*sdk.ClientSession, error) {
		cmd := exec.Command(os.Args[0], "--db", c.db, "mcp", "serve", "--stdio", "--agent", agent)
		cmd.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_MCP_USER=7")
		return sdk.NewClient(&sdk.Implementation{Name: "cli-test", Version: "1"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	}
	sess, err := serve("staff")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	tools, err := sess.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{"inside"}) {
		t.Errorf("tools of --agent staff: %v, want inside only", names)
	}
	res, err := sess.CallTool(t.Context(), &sdk.CallToolParams{Name: "outside", Arguments: map[string]any{}})
	if err == nil && !res.IsError || sent.Load() != 0 {
		t.Errorf("outside over --agent staff: %v %+v, %d sent; want refused, nothing sent", err, res, sent.Load())
	}
	res, err = sess.CallTool(t.Context(), &sdk.CallToolParams{Name: "inside", Arguments: map[string]any{}})
	if err != nil || res.IsError || sent.Load() != 1 {
		t.Errorf("inside over --agent staff: %v %+v, %d sent", err, res, sent.Load())
	}
	// The refusal of the tool outside the agent is the executor's, and
	// recorded, as /mcp/agents/{name} records it (review 71: over stdio it
	// was an unknown tool, and no record kept the attempt).
	sess.Close() // the process ends, its records written
	st, err := store.Open(t.Context(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.ListExecutions(t.Context(), store.ExecutionFilter{PluginName: "outside"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ErrorClass != "permission_denied" || !strings.Contains(recs[0].ErrorMessage, "staff") {
		t.Errorf("records of outside over --agent staff: %+v, want one permission_denied naming the agent", recs)
	}
	for _, agent := range []string{"locked", "paused", "nobody"} {
		if s, err := serve(agent); err == nil {
			s.Close()
			t.Errorf("mcp serve --agent %s: served, want refused", agent)
		}
	}
}
