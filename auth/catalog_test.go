package auth_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// keyedDoc is a catalog row as an administrator writes it.
const keyedDoc = `{"name": "keyed", "description": "a keyed API",
	"parameters": {"type": "object", "properties": {
		"q": {"type": "string", "description": "what to look for"},
		"page": {"type": "integer"}}, "required": ["q"]},
	"execution": {"method": "GET", "base_url": "https://api.example/v1/{tenant}/search", "param_placement": "query"},
	"auth_config": {"type": "api_key", "mapping": [{"source": "K", "target": "X-Key"}, {"source": "TENANT", "target": "X-Tenant", "secret": false}]},
	"fixed_params": {"tenant": "acme"}}`

// sendsOf is where the tools of server ref send its keys as a call
// reads its row (the MCP invoker's ServerSends); none when it is not
// registered.
func sendsOf(t *testing.T, st *store.Store, ref string) auth.ServerSends {
	t.Helper()
	row, err := st.GetMCPServer(t.Context(), ref)
	if errors.Is(err, store.ErrNotFound) {
		return auth.ServerSends{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return auth.ServerSendsOf(row)
}

func mustParse(t *testing.T, doc string) *plugins.Plugin {
	t.Helper()
	p, err := plugins.ParseJSON([]byte(doc))
	if err != nil {
		t.Fatalf("parse %s: %v", doc, err)
	}
	return p
}

// TestCatalogBind: an inline plugin using stored credentials is the
// enabled catalog plugin of its name, or it is refused naming the key and
// the first field that differs. The origin rule's cases (another host,
// scheme, port) are cases of it.
func TestCatalogBind(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		add := func(p *plugins.Plugin) {
			t.Helper()
			row, err := catalog.RowFromPlugin(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.CreatePlugin(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		add(mustParse(t, keyedDoc))
		if err := st.CreateMCPServer(ctx, &store.MCPServer{ID: "srv-1", Name: "tools", Transport: store.TransportStreamableHTTP,
			URL: "https://mcp.example/mcp", AuthConfig: []byte(`{"type":"bearer","token":"MCP_TOKEN"}`)}); err != nil {
			t.Fatal(err)
		}
		const mcpDoc = `{"name": "mcp_tool", "description": "d", "parameters": {"type": "object"}, "required_credentials": ["MCP_TOKEN"],
			"execution": {"type": "mcp", "mcp_id": "tools", "tool_name": "t"}}`
		add(mustParse(t, mcpDoc))
		changes := store.NewWatcher(st, time.Hour, nil) // polled by hand below
		changes.Poll(ctx)
		served := catalog.New(st, changes, nil)
		c := auth.NewCatalog(st, served, changes)

		// RuoYi's copy: the row's columns serialised again, keys in
		// another order, defaults spelt out, another description.
		ruoyi := `{"fixed_params":{"tenant":"acme"},"required_credentials":["TENANT","K"],"name":"keyed","description":"其他描述",
			"auth_config":{"mapping":[{"target":"X-Key","source":"K","location":"header"},{"secret":false,"source":"TENANT","target":"X-Tenant"}],"type":"api_key"},
			"execution":{"param_placement":"query","base_url":"https://api.example/v1/{tenant}/search","method":"get","type":"http"},
			"parameters":{"required":["q"],"type":"object","properties":{"page":{"type":"integer","description":"page"},"q":{"type":"string"}}}}`
		edit := func(old, new string) string {
			t.Helper()
			if !strings.Contains(keyedDoc, old) {
				t.Fatalf("keyedDoc lacks %s", old)
			}
			return strings.Replace(keyedDoc, old, new, 1)
		}
		tests := []struct {
			name  string
			doc   string
			keys  []string
			field string // the field refused; "-" for bound
		}{
			{"the catalog row itself", keyedDoc, []string{"K", "TENANT"}, "-"},
			{"RuoYi's re-serialised copy", ruoyi, []string{"K"}, "-"},
			{"an optional property left out", edit(`,
		"page": {"type": "integer"}`, ""), []string{"K"}, "-"},
			{"another host", edit("https://api.example/", "https://evil.example/"), []string{"K"}, "execution.base_url"},
			{"another scheme", edit("https://api.example/", "http://api.example/"), []string{"K"}, "execution.base_url"},
			{"another port", edit("https://api.example/", "https://api.example:8443/"), []string{"K"}, "execution.base_url"},
			{"another path on the same origin", edit("/v1/{tenant}/search", "/v1/{tenant}/admin"), []string{"K"}, "execution.base_url"},
			{"identifiers are bound too", edit("https://api.example/", "https://evil.example/"), []string{"TENANT"}, "execution.base_url"},
			{"a secret marked an identifier", edit(`{"source": "K", "target": "X-Key"}`, `{"source": "K", "target": "X-Key", "secret": false}`), []string{"K"}, "auth_config.mapping[0].secret"},
			{"another fixed param", edit(`"tenant": "acme"`, `"tenant": "globex"`), []string{"K"}, "fixed_params.tenant"},
			{"extra arguments admitted", edit(`"required": ["q"]`, `"required": ["q"], "additionalProperties": true`), []string{"K"}, "parameters.additionalProperties"},
			{"an undeclared property", edit(`"page": {"type": "integer"}`, `"page": {"type": "integer"}, "admin": {"type": "integer"}`), []string{"K"}, "parameters.properties.admin"},
			{"a required property left out", strings.Replace(edit(`"q": {"type": "string", "description": "what to look for"},`, ""), `"required": ["q"]`, `"required": []`, 1), []string{"K"}, "parameters.properties.q"},
			{"a property's type changed", edit(`"page": {"type": "integer"}`, `"page": {"type": "string"}`), []string{"K"}, "parameters.properties.page.type"},
			{"required credentials", edit(`"fixed_params"`, `"required_credentials": ["K"], "fixed_params"`), []string{"K"}, "required_credentials"},
			{"no catalog plugin of the name", strings.Replace(keyedDoc, `"name": "keyed"`, `"name": "other"`, 1), []string{"K"}, ""},
			{"the MCP row itself", mcpDoc, []string{"MCP_TOKEN"}, "-"},
			{"another MCP server", strings.Replace(mcpDoc, `"tools"`, `"srv-1"`, 1), []string{"MCP_TOKEN"}, "execution.mcp_id"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := c.Bind(ctx, mustParse(t, tt.doc), tt.keys)
				if tt.field == "-" {
					if err != nil || got == nil || !got.Catalog {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				var ue *auth.UnboundCredentialError
				if !errors.As(err, &ue) || !errors.Is(err, auth.ErrCredentialNotBound) || ue.Key != slices.Min(tt.keys) || ue.Field != tt.field {
					t.Fatalf("err = %v (%+v), want %s refused for %q", err, ue, slices.Min(tt.keys), tt.field)
				}
				if !strings.Contains(err.Error(), "catalog") || strings.Contains(err.Error(), "globex") || strings.Contains(err.Error(), "evil") {
					t.Errorf("the refusal names the rule, key and field, never a value: %q", err)
				}
			})
		}

		// A plugin added binds once the change counters are polled again
		// (an API write polls them before it answers); one disabled stops.
		moved := strings.Replace(keyedDoc, `"name": "keyed"`, `"name": "new"`, 1)
		if _, err := c.Bind(ctx, mustParse(t, moved), []string{"K"}); err == nil {
			t.Fatal("bound before any plugin has the name")
		}
		add(mustParse(t, moved))
		changes.Poll(ctx)
		if _, err := c.Bind(ctx, mustParse(t, moved), []string{"K"}); err != nil {
			t.Fatalf("after adding the plugin: %v", err)
		}
		if err := st.SetPluginStatus(ctx, "new", store.StatusDisabled, "test"); err != nil {
			t.Fatal(err)
		}
		changes.Poll(ctx)
		if _, err := c.Bind(ctx, mustParse(t, moved), []string{"K"}); err == nil {
			t.Fatal("a disabled plugin still binds")
		}

		// Review 74: a row RuoYi wrote that breaks the protocol (an
		// optional property of no JSON Schema type) is left out of the
		// catalog served, and so out of the binding rule: a copy of it
		// without that property is not that row, and no route's access
		// or current row is.
		bad := mustParse(t, strings.Replace(keyedDoc, `"name": "keyed"`, `"name": "left_out"`, 1))
		row, err := catalog.RowFromPlugin(bad)
		if err != nil {
			t.Fatal(err)
		}
		row.ParameterSchema = store.JSON(strings.Replace(string(row.ParameterSchema), `"page": {"type": "integer"}`, `"page": {"type": "integer"}, "x": {"type": "strnig"}`, 1))
		if !strings.Contains(string(row.ParameterSchema), "strnig") {
			t.Fatalf("the row's schema: %s", row.ParameterSchema)
		}
		if err := st.CreatePlugin(ctx, row); err != nil {
			t.Fatal(err)
		}
		changes.Poll(ctx)
		if _, err := served.Plugin(ctx, "left_out"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the catalog served a row breaking the protocol: %v", err)
		}
		if got, err := c.Bind(ctx, bad, []string{"K"}); err == nil {
			t.Errorf("a copy bound to a row the catalog left out (%s)", got.Name)
		}
		if got, err := c.Row(ctx, "left_out"); got != nil || err != nil {
			t.Errorf("Row gave a row the catalog left out: %v, %v", got != nil, err)
		}
	})
}

// TestCatalogIdentifiers: a key is an identifier only when the enabled
// catalog reads it, and only as one, in a plugin's or an MCP server's auth.
func TestCatalogIdentifiers(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		for _, doc := range []string{keyedDoc,
			`{"name": "oauth", "description": "d", "parameters": {"type": "object"}, "execution": {"method": "GET", "base_url": "https://o.example/"},
			  "auth_config": {"type": "oauth2", "oauth2": {"token_url": "https://idp.example/token", "client_id": "ID", "client_secret": "CS"}}}`,
			`{"name": "basic", "description": "d", "parameters": {"type": "object"}, "execution": {"method": "GET", "base_url": "https://b.example/"},
			  "auth_config": {"type": "basic", "username": "USER", "password": "PASS"}}`,
			// Reads USER as a secret: one reading as a secret is enough.
			`{"name": "user_as_key", "description": "d", "parameters": {"type": "object"}, "execution": {"method": "GET", "base_url": "https://u.example/"},
			  "auth_config": {"type": "api_key", "mapping": [{"source": "USER", "target": "X-User"}]}}`,
			`{"name": "off", "status": "1", "description": "d", "parameters": {"type": "object"}, "execution": {"method": "GET", "base_url": "https://off.example/"},
			  "auth_config": {"type": "api_key", "mapping": [{"source": "TENANT", "target": "X-T"}]}}`,
		} {
			row, err := catalog.RowFromPlugin(mustParse(t, doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := st.CreatePlugin(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.CreateMCPServer(ctx, &store.MCPServer{ID: "srv-2", Name: "m", Transport: store.TransportStreamableHTTP,
			URL: "https://mcp.example/mcp", AuthConfig: []byte(`{"type":"basic","username":"MCP_USER","password":"MCP_PASS"}`)}); err != nil {
			t.Fatal(err)
		}
		changes := store.NewWatcher(st, time.Hour, nil)
		changes.Poll(ctx)
		c := auth.NewCatalog(st, catalog.New(st, changes, nil), changes)
		want := map[string]bool{"TENANT": true, "ID": true, "MCP_USER": true,
			"K": false, "CS": false, "USER": false, "PASS": false, "MCP_PASS": false, "NOBODY": false}
		var keys, wantIDs []string
		for k, id := range want {
			if got, err := c.IsIdentifier(ctx, k); err != nil || got != id {
				t.Errorf("IsIdentifier(%s) = %v, %v; want %v", k, got, err, id)
			}
			keys = append(keys, k)
			if id {
				wantIDs = append(wantIDs, k)
			}
		}
		got, err := c.Identifiers(ctx, keys)
		slices.Sort(got)
		slices.Sort(wantIDs)
		if err != nil || !slices.Equal(got, wantIDs) {
			t.Errorf("Identifiers = %v, %v; want %v", got, err, wantIDs)
		}
		// A basic-auth password may be empty (Stripe's); no other key.
		for k, empty := range map[string]bool{"PASS": true, "MCP_PASS": true, "USER": false, "K": false, "CS": false, "NOBODY": false} {
			if got, err := c.MayBeEmpty(ctx, k); err != nil || got != empty {
				t.Errorf("MayBeEmpty(%s) = %v, %v; want %v", k, got, err, empty)
			}
		}
		// Stored: an empty password is a credential, resolved as one; an
		// empty value of another key is refused naming why.
		svc := auth.NewCredentialService(st, mustKeyring(t, newKeyB64(t), ""))
		svc.Identifiers = c
		if err := svc.Set(ctx, 7, "PASS", "", "admin"); err != nil {
			t.Fatalf("Set(PASS, empty): %v", err)
		}
		if got, err := svc.Resolve(ctx, 7, []string{"PASS"}); err != nil || len(got) != 1 || got["PASS"] != "" {
			t.Errorf("Resolve(PASS) = %q, %v; want one empty value", got, err)
		}
		if err := svc.Set(ctx, 7, "K", "", "admin"); !errors.Is(err, auth.ErrEmptyValue) {
			t.Errorf("Set(K, empty) = %v, want ErrEmptyValue", err)
		}
	})
}

// TestBlackholedCatalogHoldsNoCall: with the database blackholed
// (connections open, nothing answered), a read of the credential rules'
// catalog (where a connection's token may go, the binding rule) stuck on
// it holds the calls queued behind it only until store.QueryTimeout: they
// are then served the catalog held, and the calls after them at once; with
// none held, each fails within the bound. Before, the read held the lock
// with the call's context, and every call behind it waited its turn.
func TestBlackholedCatalogHoldsNoCall(t *testing.T) {
	direct, proxy, through := testdb.Blackholable(t)
	add := func(name string) {
		t.Helper()
		row, err := catalog.RowFromPlugin(mustParse(t, `{"name": "`+name+`", "description": "d", "parameters": {"type": "object"},
			"execution": {"method": "GET", "base_url": "https://api.example/`+name+`"},
			"auth_config": {"type": "oauth2", "oauth2": {"grant": "authorization_code", "provider": "acme", "scopes": ["read"]}}}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := direct.CreatePlugin(t.Context(), row); err != nil {
			t.Fatal(err)
		}
	}
	add("me")
	changes := store.NewWatcher(direct, time.Hour, nil) // the counters read past the proxy
	changes.Poll(t.Context())
	newCatalog := func() *auth.Catalog {
		at := testdb.At(t, through)
		return auth.NewCatalog(at, catalog.New(at, changes, nil), changes)
	}
	held := newCatalog()
	if ok, err := held.ServesProvider(t.Context(), "acme", "https://api.example"); !ok || err != nil {
		t.Fatalf("a live read: %v %v", ok, err)
	}
	none := newCatalog()
	add("repos") // the catalog changes, then the database stops answering
	changes.Poll(t.Context())
	proxy.Blackhole()

	// The test's own bound: the code under test's must come well before.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	bound := store.QueryTimeout + 2*time.Second
	for _, c := range []struct {
		name    string
		catalog *auth.Catalog
	}{{"held", held}, {"none held", none}} {
		began := time.Now()
		var wg sync.WaitGroup
		for range 4 { // calls of several users at once: one reads, the others queue
			wg.Go(func() {
				ok, err := c.catalog.ServesProvider(ctx, "acme", "https://api.example")
				if took := time.Since(began); took > bound {
					t.Errorf("%s: a call behind a read not decided within %v (%v): held by the database", c.name, bound, took)
				} else if c.catalog == held && (!ok || err != nil) {
					t.Errorf("%s: a call behind a failed read: %v %v, want the catalog held", c.name, ok, err)
				} else if c.catalog == none && (ok || err == nil) {
					t.Errorf("%s: a call behind a failed read: %v %v, want an error", c.name, ok, err)
				}
			})
		}
		wg.Wait()
		began = time.Now()
		ok, err := c.catalog.ServesProvider(ctx, "acme", "https://api.example")
		if took := time.Since(began); took > time.Second || c.catalog == held && (!ok || err != nil) || c.catalog == none && err == nil {
			t.Errorf("%s: a call once the read failed: %v %v after %v, want the same answer at once", c.name, ok, err, took)
		}
	}
}

// flakySource is a catalog source whose reads fail while fail is set.
type flakySource struct {
	catalog.Source
	fail atomic.Bool
}

func (f *flakySource) ListPlugins(ctx context.Context, filter store.PluginFilter) ([]store.Plugin, error) {
	if f.fail.Load() {
		return nil, errors.New("database unreachable")
	}
	return f.Source.ListPlugins(ctx, filter)
}

// TestCatalogFollowsAFailedReload (review 75): the served catalog answers
// a reload that fails with the snapshot it holds, and reloads a second
// later; the binding rule's index, read from it, was kept under the new
// counter, so a row disabled when the served catalog's reload failed
// stayed bound for good (until the next change of any plugin): an inline
// copy of the disabled row went on being sent with the users' stored
// credentials, the served catalog refusing the row by name.
func TestCatalogFollowsAFailedReload(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	ctx := t.Context()
	row, err := catalog.RowFromPlugin(mustParse(t, keyedDoc))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreatePlugin(ctx, row); err != nil {
		t.Fatal(err)
	}
	changes := store.NewWatcher(st, time.Hour, nil) // polled by hand below
	changes.Poll(ctx)
	src := &flakySource{Source: st}
	served := catalog.New(src, changes, nil)
	c := auth.NewCatalog(st, served, changes)
	if p, err := c.Bind(ctx, mustParse(t, keyedDoc), []string{"K"}); err != nil || p == nil {
		t.Fatalf("the row's copy: %v", err)
	}

	if err := st.SetPluginStatus(ctx, "keyed", store.StatusDisabled, "admin"); err != nil {
		t.Fatal(err)
	}
	changes.Poll(ctx)
	src.fail.Store(true)
	c.Bind(ctx, mustParse(t, keyedDoc), []string{"K"}) // the held snapshot, while the database fails
	src.fail.Store(false)
	time.Sleep(catalog.ReloadRetry + 100*time.Millisecond)
	if p, err := served.Plugin(ctx, "keyed"); err == nil && p.Enabled() {
		t.Fatalf("the served catalog still holds the row enabled")
	}
	if p, err := c.Bind(ctx, mustParse(t, keyedDoc), []string{"K"}); err == nil {
		t.Errorf("a copy of the row disabled, the database back: bound to %s, want refused", p.Name)
	}
	if p, err := c.Row(ctx, "keyed"); err != nil || p != nil {
		t.Errorf("the row disabled, the database back: Row %v, %v; want none", p, err)
	}
}

// TestElsewhereUnplacedKey (review77): a stored key going to a server
// registered (the CLI, another replica) after the index was read, the
// counter not yet polled, its row read afresh for the call, is refused
// while catalog plugins read it. Before, Elsewhere skipped a key its index
// did not place, and the new server was sent the users' GH_TOKEN, which
// the catalog sends to its API only. Now it is judged at the server's
// origin as the call reads its row (review79).
func TestElsewhereUnplacedKey(t *testing.T) {
	st := reposCatalog(t)
	ctx := t.Context()
	changes := store.NewWatcher(st, time.Hour, nil) // polled by hand
	changes.Poll(ctx)
	c := auth.NewCatalog(st, catalog.New(st, changes, nil), changes)
	tool := func(server string) *plugins.Plugin {
		return &plugins.Plugin{Name: "t", Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: server, ToolName: "t"}}
	}
	if err := c.Elsewhere(ctx, tool("none"), auth.ServerSends{}, []string{"OWN_KEY"}); err != nil { // the index read
		t.Fatalf("a key no catalog plugin reads: %v", err)
	}
	if err := st.CreateMCPServer(ctx, &store.MCPServer{ID: "look-1", Name: "look", Transport: store.TransportStreamableHTTP,
		URL: "https://look.example/mcp", AuthConfig: []byte(`{"type":"bearer","token":"GH_TOKEN"}`)}); err != nil {
		t.Fatal(err)
	}
	err := c.Elsewhere(ctx, tool("look"), sendsOf(t, st, "look"), []string{"GH_TOKEN"})
	if ee, ok := errors.AsType[*auth.ElsewhereError](err); !ok || ee.Key != "GH_TOKEN" {
		t.Errorf("GH_TOKEN to a server the index does not know yet: %v, want refused", err)
	}
	if err := c.Elsewhere(ctx, tool("look"), sendsOf(t, st, "look"), []string{"OWN_KEY"}); err != nil {
		t.Errorf("a key no catalog plugin reads, unplaced: %v, want its own", err)
	}
}

// TestElsewhereLeftOutRow (review77): a row the served catalog leaves out
// (it decodes, but the protocol refuses it: RuoYi's method "FETCH") reads
// PAY_KEY, which users have stored for it. The import counts it (it reads
// the rows from the store), the index of where keys go did not: PAY_KEY
// was no catalog plugin's there, and a server reading it was sent it
// through the proxy (before: nil). Now the row's keys are the catalog's,
// sent nowhere while it is left out.
func TestElsewhereLeftOutRow(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	ctx := t.Context()
	row, err := catalog.RowFromPlugin(mustParse(t, `{"name": "pay", "description": "d", "parameters": {"type": "object"},
		"execution": {"method": "GET", "base_url": "https://pay.example/v1"}, "auth_config": {"type": "bearer", "token": "PAY_KEY"}}`))
	if err != nil {
		t.Fatal(err)
	}
	row.ExecutionConfig = bytes.Replace(row.ExecutionConfig, []byte(`"GET"`), []byte(`"FETCH"`), 1)
	if err := st.CreatePlugin(ctx, row); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateMCPServer(ctx, &store.MCPServer{ID: "look-1", Name: "look", Transport: store.TransportStreamableHTTP,
		URL: "https://pay.example/mcp", AuthConfig: []byte(`{"type":"bearer","token":"PAY_KEY"}`)}); err != nil {
		t.Fatal(err)
	}
	changes := store.NewWatcher(st, time.Hour, nil) // polled by hand
	changes.Poll(ctx)
	served := catalog.New(st, changes, nil)
	if why, err := served.LeftOut(ctx); err != nil || why["pay"] == nil {
		t.Fatalf("the row pay is served: %v %v", why, err)
	}
	c := auth.NewCatalog(st, served, changes)
	tool := &plugins.Plugin{Name: "t", Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: "look", ToolName: "t"}}
	err = c.Elsewhere(ctx, tool, sendsOf(t, st, "look"), []string{"PAY_KEY"})
	if ee, ok := errors.AsType[*auth.ElsewhereError](err); !ok || len(ee.There) != 0 {
		t.Errorf("PAY_KEY, read by a row left out, to a server: %v, want refused (no enabled plugin sends it)", err)
	}
}

// TestElsewhereDottedCapital (fuzz78): the catalog sends GH_TOKEN to
// https://api.github.example; an MCP server registered at
// https://api.gİthub.example, which the client dials at
// api.xn--github-qyd.example (anyone's domain), reads it. Its host
// lower-cased as text is the catalog's, so its tool without a row was
// sent the key (before: nil). Now its origin is the host dialled: refused.
func TestElsewhereDottedCapital(t *testing.T) {
	st := reposCatalog(t)
	ctx := t.Context()
	for _, srv := range []store.MCPServer{
		{ID: "gh-1", Name: "gh", URL: "https://api.github.example/mcp"},
		{ID: "idn-1", Name: "idn", URL: "https://api.g\u0130thub.example/mcp"},
	} {
		srv.Transport, srv.AuthConfig = store.TransportStreamableHTTP, []byte(`{"type":"bearer","token":"GH_TOKEN"}`)
		if err := st.CreateMCPServer(ctx, &srv); err != nil {
			t.Fatal(err)
		}
	}
	changes := store.NewWatcher(st, time.Hour, nil) // polled by hand
	changes.Poll(ctx)
	c := auth.NewCatalog(st, catalog.New(st, changes, nil), changes)
	tool := func(server string) *plugins.Plugin {
		return &plugins.Plugin{Name: "t", Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: server, ToolName: "t"}}
	}
	if err := c.Elsewhere(ctx, tool("gh"), sendsOf(t, st, "gh"), []string{"GH_TOKEN"}); err != nil {
		t.Errorf("the catalog's own origin: %v, want sent", err)
	}
	err := c.Elsewhere(ctx, tool("idn"), sendsOf(t, st, "idn"), []string{"GH_TOKEN"})
	if ee, ok := errors.AsType[*auth.ElsewhereError](err); !ok || ee.Origin != "https://api.xn--github-qyd.example" {
		t.Errorf("GH_TOKEN to https://api.g\u0130thub.example: %v, want refused at https://api.xn--github-qyd.example", err)
	}
}

// reposCatalog is a store whose catalog sends GH_TOKEN to
// https://api.github.example only (its one plugin, repos).
func reposCatalog(t *testing.T) *store.Store {
	st := testdb.Open(t, "sqlite")
	row, err := catalog.RowFromPlugin(mustParse(t, `{"name": "repos", "description": "d", "parameters": {"type": "object"},
		"execution": {"method": "GET", "base_url": "https://api.github.example/repos"}, "auth_config": {"type": "bearer", "token": "GH_TOKEN"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreatePlugin(t.Context(), row); err != nil {
		t.Fatal(err)
	}
	return st
}
