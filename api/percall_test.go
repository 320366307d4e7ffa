package api_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/recordspool"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

type bearerToken string

func (b bearerToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// Issue 19, point 3: once warm, no tools/call reads the database for its
// plugin, and no request looks its token up there, while the change
// counters stand still. The proof: with the database gone (within the
// outage grace), /mcp still lists and calls for a per-user token, and
// /v1/execute still answers for it, from what the caches hold. Records go
// through a spool, as serve writes them: with none, a call the engine
// cannot record is refused (records_unavailable), so the test would
// depend on whether the last records were flushed before the outage.
func TestNoDatabaseReadPerCall(t *testing.T) {
	ctx := context.Background()
	st := testdb.Open(t, store.DialectSQLite) // closed mid-test: the outage
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"company":"`+r.URL.Query().Get("q")+`","key_seen":`+map[bool]string{true: "true", false: "false"}[r.Header.Get("X-Api-Key") == "sk-percall-0123456789"]+`}`)
	})
	rec := spooledRecorder(t, st)
	e := newEnv(t, st, func(s *api.Server) { s.OutageGrace, s.MCP, s.Executor.Recorder = time.Hour, &api.MCPConfig{}, rec })
	plugin := `{"name":"lookup","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},
	"execution":{"method":"GET","base_url":"` + up.URL + `","param_placement":"query"},
	"auth_config":{"type":"api_key","mapping":[{"source":"API_KEY","target":"X-Api-Key","location":"header"}]}}`
	if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		t.Fatalf("add plugin: %d %v", code, body)
	}
	if err := e.creds.Set(ctx, 7, "API_KEY", "sk-percall-0123456789", "test"); err != nil {
		t.Fatal(err)
	}
	token, _, err := api.IssueToken(ctx, st, 7, "percall", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	unused, _, err := api.IssueToken(ctx, st, 7, "never used before the outage", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.changes.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: bearerToken(token)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(when string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "lookup", Arguments: map[string]any{"q": "acme"}})
		if err != nil || res.IsError {
			t.Fatalf("tools/call %s: %v %+v", when, err, res)
		}
		if text := res.Content[0].(*sdk.TextContent).Text; text != `{"company":"acme","key_seen":true}` {
			t.Errorf("tools/call %s: %s, want the upstream's answer to a call carrying the stored key", when, text)
		}
		list, err := cs.ListTools(ctx, nil)
		if err != nil || len(list.Tools) != 1 {
			t.Fatalf("tools/list %s: %v %+v", when, err, list)
		}
		if code, body := e.do("POST", "/v1/execute", token, map[string]any{"name": "lookup", "arguments": map[string]any{"q": "acme"}}); code != http.StatusOK {
			t.Errorf("/v1/execute %s: %d %v", when, code, body)
		}
	}
	call("with the database up")

	st.Close() // from here, any read of a plugin, a token or a credential fails
	call("with the database gone")
	// The control: a token the caches have not seen needs the database.
	if code, body := e.do("POST", "/v1/execute", unused, map[string]any{"name": "lookup", "arguments": map[string]any{"q": "acme"}}); code == http.StatusOK {
		t.Errorf("/v1/execute with a token first seen after the database went: %d %v, want it refused", code, body)
	}
}

// spooledRecorder records through a spool on st, as serve does: a test
// that takes the database away keeps answering calls within the grace
// whether or not its earlier records were flushed before the outage
// (straight to the database, a record failing after it refuses the next
// call, records_unavailable).
func spooledRecorder(t *testing.T, st *store.Store) *engine.Recorder {
	t.Helper()
	sp, err := recordspool.Open(t.TempDir(), api.StoreSink{Store: st}, recordspool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := engine.NewRecorder(sp, engine.RecorderOptions{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		rec.Close(ctx)
		sp.Close(ctx)
	})
	return rec
}
