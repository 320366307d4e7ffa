package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
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
// an MCP server's stored credentials go (engine.Server.Moved) let a
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
	reg.down.Store(1) // the decision's read of the row (one: onerow81)
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

// TestTokenURLMovedBySQL: credentials_url (migration 00030) kept an MCP
// server's stored credentials at the origin of its url, but a server
// whose auth config is oauth2 client_credentials sends the users' client
// id and secret to its token_url, which RuoYi's SQL moves as easily: the
// next call sent them to the new token URL. Now the token URL they were
// given for is kept too (credentials_token_url, migration 00032).
func TestTokenURLMovedBySQL(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		up := mcptest.New(t)
		var mu sync.Mutex
		secrets := map[string][]string{}
		tokens := func(name string) *httptest.Server {
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, secret, _ := r.BasicAuth()
				r.ParseForm()
				mu.Lock()
				secrets[name] = append(secrets[name], secret+r.PostForm.Get("client_secret"))
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"access_token":"at-0123456789abcdef","token_type":"bearer","expires_in":3600}`)
			}))
			t.Cleanup(s.Close)
			return s
		}
		idp, evil := tokens("idp"), tokens("evil")
		authConfig := func(tokenURL string) *plugins.AuthConfig {
			return &plugins.AuthConfig{Type: plugins.AuthOAuth2, OAuth2: &plugins.OAuth2{TokenURL: tokenURL, ClientID: "MED_ID", ClientSecret: "MED_SECRET"}}
		}
		if _, err := mcp.Register(ctx, st, mcp.ServerSpec{ID: "srv-1", Name: "med", URL: up.Endpoint, AuthConfig: authConfig(idp.URL + "/token")}, "test"); err != nil {
			t.Fatal(err)
		}
		m := mcp.NewManager(st, egresstest.Client(t))
		t.Cleanup(func() { m.Close() })
		ex := engine.NewExecutor(egresstest.Client(t))
		ex.Register("mcp", mcp.Invoker{Manager: m})
		const secret = "med-client-secret-0123456789"
		ex.Credentials = storedKeys{"MED_ID": "med-client", "MED_SECRET": secret}
		p := mcpPlugin("echo", nil)
		p.RequiredCredentials = []string{"MED_ID", "MED_SECRET"}
		call := func() (*engine.Result, error) {
			m.Forget("srv-1") // the watcher's part: the row is read again
			return ex.Execute(ctx, engine.Call{Plugin: p, Arguments: json.RawMessage(`{"text":"hi"}`), UserID: 7})
		}
		if res, err := call(); err != nil || !res.OK || len(secrets["idp"]) == 0 {
			t.Fatalf("the call with the registered token URL: %+v %v (the idp got %d requests)", res, err, len(secrets["idp"]))
		}
		moved, _ := json.Marshal(authConfig(evil.URL + "/token"))
		if _, err := st.DB().ExecContext(ctx, "UPDATE sys_ai_mcp_server SET auth_config = ? WHERE mcp_id = 'srv-1'", string(moved)); err != nil {
			t.Fatal(err)
		}
		res, err := call()
		mu.Lock()
		sent := strings.Contains(strings.Join(secrets["evil"], " "), secret)
		mu.Unlock()
		if sent {
			t.Fatalf("the moved token URL was sent the client secret: %+v %v", res, err)
		}
		if refused, ok := errors.AsType[*engine.RefusedError](err); !ok || refused.Code != engine.CodeCredentialNotBound || !strings.Contains(refused.Message, "token_url") {
			t.Errorf("a call after the token URL moved by SQL: %+v %v", res, err)
		}
	})
}
