package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/plugins"
)

// movingCatalog is a catalog a test changes: each change a new version.
type movingCatalog struct {
	mu      sync.Mutex
	ps      []*plugins.Plugin
	version int64
}

func (c *movingCatalog) EnabledPlugins(context.Context) ([]*plugins.Plugin, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ps), nil
}

func (c *movingCatalog) Version() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// put adds or replaces the tool called p.Name.
func (c *movingCatalog) put(p *plugins.Plugin) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ps = slices.DeleteFunc(c.ps, func(q *plugins.Plugin) bool { return q.Name == p.Name })
	c.ps = append(c.ps, p)
	c.version++
}

// openOnly lets a user use the tools that need no perms: the access rule's
// answer for a user holding none (access.Checker's own tests cover it).
type openOnly struct{}

func (openOnly) Usable(_ context.Context, _ access.Subject, ps []*plugins.Plugin) ([]*plugins.Plugin, error) {
	return slices.DeleteFunc(slices.Clone(ps), func(p *plugins.Plugin) bool { return len(p.Perms) > 0 }), nil
}

func (openOnly) UsableSet(context.Context, access.Subject, []*plugins.Plugin) (*access.Set, error) {
	return nil, errors.New("not searched here")
}

func (openOnly) Read(context.Context, int64) (uint64, bool) { return 0, true }

// TestStdioToldOnlyOfItsTools: `mcp serve --stdio` (its catalog's
// changes reach Service.Changed) told its client of every catalog change,
// one of a tool hidden from its user included; now only of a change of the
// tools it would list.
func TestStdioToldOnlyOfItsTools(t *testing.T) {
	tool := func(name, description string, perms ...string) *plugins.Plugin {
		return &plugins.Plugin{Name: name, Description: description, Perms: perms,
			Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
	}
	cat := &movingCatalog{ps: []*plugins.Plugin{tool("open", "o"), tool("payroll", "p", "hr:pay:list")}, version: 1}
	svc := NewService(cat, echoExecutor(), Options{Access: openOnly{}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() { _ = svc.serveLines(ctx, 7, inR, outW) }()
	changed := make(chan struct{}, 4)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name   string
		change *plugins.Plugin
		told   bool
	}{
		{"a hidden tool added", tool("bonus", "b", "hr:pay:list"), false},
		{"a hidden tool changed", tool("payroll", "p2", "hr:pay:list"), false},
		{"a visible tool changed", tool("open", "o2"), true},
		{"a tool's perms opening it", tool("payroll", "p2"), true},
		{"a tool's perms closing it", tool("payroll", "p2", "hr:pay:list"), true},
	} {
		cat.put(step.change)
		svc.Changed()
		select {
		case <-changed:
			if !step.told {
				t.Errorf("%s: told", step.name)
			}
		case <-time.After(300 * time.Millisecond):
			if step.told {
				t.Errorf("%s: not told", step.name)
			}
		}
	}
}
