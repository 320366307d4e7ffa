package catalog_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// source counts the listings that reach the store and can be made to fail.
type source struct {
	catalog.Source
	mu    sync.Mutex
	lists int
	err   error
}

// getConfig is the execution_config of a row the catalog loads: every
// row is held to the protocol when it is read.
var getConfig = store.JSON(`{"execution": {"method": "GET", "base_url": "https://api.example.com/x"}}`)

func (s *source) ListPlugins(ctx context.Context, f store.PluginFilter) ([]store.Plugin, error) {
	s.mu.Lock()
	s.lists++
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.Source.ListPlugins(ctx, f)
}

func TestCatalogFollowsTheCounter(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	ctx := context.Background()
	add := func(name, status string) {
		t.Helper()
		if err := st.CreatePlugin(ctx, &store.Plugin{Name: name, Status: status, ParameterSchema: store.JSON(`{"type":"object"}`), ExecutionConfig: getConfig}); err != nil {
			t.Fatal(err)
		}
	}
	add("b_on", store.StatusEnabled)
	add("a_off", store.StatusDisabled)
	src := &source{Source: st}
	changes := store.NewWatcher(st, 0, nil)
	changes.Poll(ctx)
	c := catalog.New(src, changes, nil)
	var reloads []int
	c.OnReload(func(enabled []*plugins.Plugin, _ int64) { reloads = append(reloads, len(enabled)) })

	names := func() []string {
		t.Helper()
		ps, err := c.EnabledPlugins(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	for range 3 {
		if got := names(); len(got) != 1 || got[0] != "b_on" {
			t.Fatalf("enabled = %v, want [b_on]", got)
		}
	}
	if p, err := c.Plugin(ctx, "a_off"); err != nil || p.Enabled() {
		t.Fatalf("a disabled plugin is found, disabled: %v %v", p, err)
	}
	if _, err := c.Plugin(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown plugin: %v, want ErrNotFound", err)
	}
	if src.lists != 1 {
		t.Fatalf("%d listings for repeated reads at one version; want 1", src.lists)
	}

	// A write is seen after the counter is polled, not before.
	add("c_on", store.StatusEnabled)
	if got := names(); len(got) != 1 {
		t.Fatalf("before the poll: %v", got)
	}
	changes.Poll(ctx)
	if got := names(); len(got) != 2 || got[1] != "c_on" {
		t.Fatalf("after the poll: %v, want [b_on c_on]", got)
	}
	if src.lists != 2 || len(reloads) != 2 || reloads[1] != 2 {
		t.Fatalf("listings %d, reloads %v; want 2 and [1 2]", src.lists, reloads)
	}

	// The database failing: the last catalog read is served.
	add("d_on", store.StatusEnabled)
	changes.Poll(ctx)
	src.mu.Lock()
	src.err = errors.New("connection refused")
	src.mu.Unlock()
	if got := names(); len(got) != 2 {
		t.Fatalf("during a failure the last catalog serves: %v", got)
	}

	// A catalog that never loaded reports the failure.
	cold := catalog.New(src, changes, nil)
	if _, err := cold.EnabledPlugins(ctx); err == nil {
		t.Fatal("a catalog that cannot load: no error")
	}
}

// TestMCPToolRow: the row a call of an MCP server's tool is — an enabled
// one before a disabled one, then the oldest — and a disabled one when no
// enabled row calls the tool, so that the call is refused as that row
// rather than let through as no row's.
func TestMCPToolRow(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	ctx := context.Background()
	ids := map[string]int64{}
	add := func(name, tool, status string) {
		t.Helper()
		p := &store.Plugin{Name: name, Description: "d", Status: status, ParameterSchema: store.JSON(`{"type":"object"}`),
			ExecutionConfig: store.JSON(`{"execution":{"type":"mcp","mcp_id":"srv","tool_name":"` + tool + `"}}`)}
		if err := st.CreatePlugin(ctx, p); err != nil {
			t.Fatal(err)
		}
		ids[name] = p.ID
	}
	add("old_off", "both", store.StatusDisabled)
	add("mid_on", "both", store.StatusEnabled)
	add("new_on", "both", store.StatusEnabled)
	add("off_a", "gone", store.StatusDisabled)
	add("off_b", "gone", store.StatusDisabled)
	changes := store.NewWatcher(st, 0, nil)
	changes.Poll(ctx)
	c := catalog.New(st, changes, nil)
	for tool, want := range map[string]string{"both": "mid_on", "gone": "off_a"} {
		p, err := c.MCPTool(ctx, "srv", tool)
		if err != nil || p.ID != ids[want] {
			t.Errorf("MCPTool(srv, %s) = %v, %v; want the row %s", tool, p, err, want)
		}
	}
	if _, err := c.MCPTool(ctx, "srv", "none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a tool no row calls: %v, want ErrNotFound", err)
	}
}

// TestBlackholedReloadHoldsNoCall: with the database blackholed
// (connections open, nothing answered), a catalog reload stuck on it
// holds the calls queued behind it only until store.QueryTimeout: they
// are then served the catalog held, and the calls after them at once.
// Before, the reload held the catalog's lock with the call's context (no
// deadline) and every call of the replica waited behind it.
func TestBlackholedReloadHoldsNoCall(t *testing.T) {
	direct, proxy, through := testdb.Blackholable(t)
	add := func(name string) {
		t.Helper()
		if err := direct.CreatePlugin(t.Context(), &store.Plugin{Name: name, Status: store.StatusEnabled, ParameterSchema: store.JSON(`{"type":"object"}`), ExecutionConfig: getConfig}); err != nil {
			t.Fatal(err)
		}
	}
	add("lookup")
	changes := store.NewWatcher(direct, time.Hour, nil) // the counters read past the proxy
	changes.Poll(t.Context())
	c := catalog.New(testdb.At(t, through), changes, nil)
	if _, err := c.Plugin(t.Context(), "lookup"); err != nil {
		t.Fatal(err)
	}
	add("search") // the catalog changes, then the database stops answering
	changes.Poll(t.Context())
	proxy.Blackhole()

	// The test's own bound: the code under test's must come well before.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	bound := store.QueryTimeout + 2*time.Second
	began := time.Now()
	var wg sync.WaitGroup
	for range 4 { // calls of several users at once: one reloads, the others queue
		wg.Go(func() {
			_, err := c.Plugin(ctx, "lookup")
			if took := time.Since(began); took > bound {
				t.Errorf("a call behind a reload not decided within %v (%v): held by the database", bound, took)
			} else if err != nil {
				t.Errorf("a call behind a failed reload: %v, want the catalog held", err)
			}
		})
	}
	wg.Wait()
	began = time.Now()
	if _, err := c.Plugin(ctx, "lookup"); err != nil || time.Since(began) > time.Second {
		t.Errorf("a call once the reload failed: %v after %v, want the catalog held at once", err, time.Since(began))
	}
}

// TestLoadHoldsRowsToTheProtocol: a row written with plain SQL, as RuoYi
// writes them, is held to the protocol when it is read, as a write
// through the engine is: one the engine would refuse is left out — never
// shown to a model nor sent — and the others load. Before, a row with
// method "FETCH" was listed and its request sent with that method.
func TestLoadHoldsRowsToTheProtocol(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		const ins = "INSERT INTO sys_ai_plugin (name, description, parameter_schema, execution_config, status) VALUES (?, 'd', ?, ?, '0')"
		params := `{"type": "object", "properties": {"id": {"type": "string"}}}`
		for _, r := range [][2]string{
			{"good", `{"execution": {"method": "get", "base_url": "https://api.example.com/x/{id}"}, "auth_config": {"type": "none"}}`},
			{"fetch", `{"execution": {"method": "FETCH", "base_url": "https://api.example.com/x"}}`},
			{"no_url", `{"execution": {"method": "GET"}}`},
			{"loose_template", `{"execution": {"method": "GET", "base_url": "https://api.example.com/{nope}"}}`},
			{"bearer_without_token", `{"execution": {"method": "GET", "base_url": "https://api.example.com/x"}, "auth_config": {"type": "bearer"}}`},
			// Refused by protocol.schema.json, which the API holds a document to.
			{"negative_timeout", `{"execution": {"method": "GET", "base_url": "https://api.example.com/x", "timeout_ms": -5}}`},
		} {
			if _, err := st.DB().ExecContext(ctx, ins, r[0], params, r[1]); err != nil {
				t.Fatal(err)
			}
		}
		changes := store.NewWatcher(st, 0, nil)
		changes.Poll(ctx)
		cat := catalog.New(st, changes, nil)
		enabled, err := cat.EnabledPlugins(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range enabled {
			names = append(names, p.Name)
		}
		if !slices.Equal(names, []string{"good"}) {
			t.Fatalf("enabled plugins %q, want [good]: the others break the protocol", names)
		}
		if _, err := cat.Plugin(ctx, "fetch"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Plugin(fetch) = %v, want not found", err)
		}
	})
}
