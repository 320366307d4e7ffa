package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/internal/testdb"
)

// TestStdioToldOfAGrantChange (small76): `mcp serve --stdio` follows
// RuoYi's grants as /mcp does (TestGrantChangeTellsSessions): a role
// withdrawn in RuoYi's tables, which carry no trigger, tells the stdio
// client its tools changed within a poll (not at the permissions' TTL's
// end, an hour here), and its next list is without the tool. The real
// binary and the Go SDK's client, on both databases.
func TestStdioToldOfAGrantChange(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		st, dsn := testdb.RuoYi(t, kind, "../../access/testdata/ruoyi-vue/ry_20260417.sql")
		key := make([]byte, 32)
		rand.Read(key)
		t.Setenv("BLINDEXEC_MASTER_KEY", base64.StdEncoding.EncodeToString(key))
		t.Setenv("BLINDEXEC_LOG_LEVEL", "error")
		c := &cli{t: t, db: dsn}
		for i, doc := range []string{
			`{"name":"list_users","description":"Lists users.","perms":["system:user:list"],"parameters":{"type":"object"},"execution":{"method":"GET","base_url":"https://ruoyi.example/users"}}`,
			`{"name":"weather","description":"The weather.","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"https://ruoyi.example/weather"}}`,
		} {
			file := filepath.Join(t.TempDir(), fmt.Sprintf("p%d.json", i))
			if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			if code, _, errs := c.run("", "plugin", "add", file); code != 0 {
				t.Fatalf("plugin add: %s", errs)
			}
		}
		cmd := exec.Command(os.Args[0], "--db", dsn, "mcp", "serve", "--stdio")
		cmd.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_MCP_USER=2", "BLINDEXEC_PERMISSIONS=ruoyi",
			"BLINDEXEC_PERMISSIONS_TTL_MS=3600000", "BLINDEXEC_CHANGE_POLL_MS=100")
		told := make(chan struct{}, 8)
		client := sdk.NewClient(&sdk.Implementation{Name: "stdio-grants", Version: "1"}, &sdk.ClientOptions{
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { told <- struct{}{} }})
		sess, err := client.Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		names := func() []string {
			var out []string
			for tl, err := range sess.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, tl.Name)
			}
			return out
		}
		if got := names(); !slices.Contains(got, "list_users") {
			t.Fatalf("user 2 (ry, RuoYi's common role) lists %v, want list_users", got)
		}
		time.Sleep(500 * time.Millisecond) // a few polls: what the start saw is settled
		for len(told) > 0 {
			<-told
		}
		if _, err := st.DB().ExecContext(t.Context(), "DELETE FROM sys_user_role WHERE user_id = 2"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-told:
		case <-time.After(10 * time.Second):
			t.Fatal("the stdio client was not told its tools changed after its role was withdrawn")
		}
		if got := names(); slices.Contains(got, "list_users") {
			t.Errorf("after the role was withdrawn stdio lists %v", got)
		}
	})
}
