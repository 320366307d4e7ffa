package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/store"
)

// blinking is the registry of a database that does not answer its first
// reads, then answers again.
type blinking struct {
	*servers
	down atomic.Int32
}

func (b *blinking) GetMCPServer(ctx context.Context, ref string) (*store.MCPServer, error) {
	if b.down.Add(-1) >= 0 {
		return nil, errors.New("database unavailable")
	}
	return b.servers.GetMCPServer(ctx, ref)
}

// storedKeys is the users' credential store.
type storedKeys map[string]string

func (s storedKeys) Resolve(_ context.Context, _ int64, keys []string) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := s[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// TestMovedServerUnreadableAtTheDecision: the decision's check of where
// an MCP server's stored credentials go (engine.CredentialHosts) let a
// call through when the server's row could not be read at that moment,
// taking the send to refuse it too; the send read the row a moment later,
// moved by SQL, and took the user's key there.
func TestMovedServerUnreadableAtTheDecision(t *testing.T) {
	up, evil := mcptest.New(t), mcptest.New(t)
	row := httpServer(evil)
	row.CredentialsURL = &up.Endpoint // registered at up, then moved
	reg := &blinking{servers: &servers{}}
	reg.add(row)
	m := mcp.NewManager(reg, egresstest.Client(t))
	t.Cleanup(func() { m.Close() })
	ex := engine.NewExecutor(egresstest.Client(t))
	ex.Register("mcp", mcp.Invoker{Manager: m})
	ex.Credentials = storedKeys(tokenA)
	reg.down.Store(2) // the decision's reads of the row
	res, err := ex.Execute(context.Background(), engine.Call{Plugin: mcpPlugin("echo", nil), Arguments: json.RawMessage(`{"text":"hi"}`), UserID: 7})
	for _, h := range evil.Headers() {
		if strings.Contains(h.Get("Authorization"), tokenA["mcp_token"]) {
			t.Fatalf("the moved server was sent the user's key: %+v %v", res, err)
		}
	}
	if refused, ok := errors.AsType[*engine.RefusedError](err); !ok || refused.Code != engine.CodeInvalidPlugin || !strings.Contains(refused.Message, "database unavailable") {
		t.Errorf("a call whose server could not be read: %v", err)
	}
	// Read, it is the moved server's refusal.
	_, err = ex.Execute(context.Background(), engine.Call{Plugin: mcpPlugin("echo", nil), Arguments: json.RawMessage(`{"text":"hi"}`), UserID: 7})
	if refused, ok := errors.AsType[*engine.RefusedError](err); !ok || refused.Code != engine.CodeCredentialNotBound {
		t.Errorf("a call of the moved server: %v", err)
	}
}
