package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

// lazyCatalog reloads as catalog.Catalog does: Version is the version of
// the plugins held, which moves only when EnabledPlugins loads the ones
// the change counter has moved to (next).
type lazyCatalog struct {
	mu            sync.Mutex
	held, next    []*plugins.Plugin
	version, want int64
}

func (c *lazyCatalog) EnabledPlugins(context.Context) ([]*plugins.Plugin, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != c.want {
		c.held, c.version = c.next, c.want
	}
	return slices.Clone(c.held), nil
}

func (c *lazyCatalog) Version() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// moved is the change counter moving to v, the catalog not reloaded yet.
func (c *lazyCatalog) moved(v int64, ps []*plugins.Plugin) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next, c.want = ps, v
}

// TestCurrentAfterTheCounterMoved: the first request after the change
// counter moved, on a catalog no one had reloaded since (the reload the
// poll starts in the background not run yet), was answered the tool set
// of the version before — its version, read before the catalog reloaded,
// was the held set's — so a replica listed a plugin created on another
// one only from its second request on (TestMCPAnyReplica's flake).
func TestCurrentAfterTheCounterMoved(t *testing.T) {
	tool := func(name string) *plugins.Plugin {
		return &plugins.Plugin{Name: name, Description: name, Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
	}
	cat := &lazyCatalog{}
	cat.moved(1, []*plugins.Plugin{tool("delete_repo")})
	svc := NewService(cat, echoExecutor(), Options{Logger: slog.New(slog.DiscardHandler)})
	ctx := t.Context()
	// Twice: the first build is tagged the version held before the
	// catalog first loaded (0), the second the version it loaded (1).
	for range 2 {
		if set, err := svc.current(ctx); err != nil || len(set.all) != 1 {
			t.Fatalf("first set: %v", err)
		}
	}
	if svc.set.version != 1 {
		t.Fatalf("the set held is of version %d, want 1", svc.set.version)
	}
	cat.moved(2, []*plugins.Plugin{tool("delete_repo"), tool("get_repo")})
	set, err := svc.current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range set.all {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"delete_repo", "get_repo"}) {
		t.Errorf("tools after the counter moved = %v, want [delete_repo get_repo]", names)
	}
}
