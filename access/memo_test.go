package access

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/blindexec/blindexec/plugins"
)

// positions are those of all s holds.
func positions(s *Set, all []*plugins.Plugin) []string {
	var out []string
	for i, p := range all {
		if s.Has(i) {
			out = append(out, p.Name)
		}
	}
	return out
}

func names(ps []*plugins.Plugin) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// TestUsableSetIsUsable: the set of positions UsableSet answers is the
// list Usable answers, for every subject and mode (no user, the
// database source alone, narrowed by a token's or a payload's strings,
// narrowed by a source holding nothing), asked twice (the second from
// the memo), and subjects narrowed differently never share a set.
func TestUsableSetIsUsable(t *testing.T) {
	all := []*plugins.Plugin{
		{Name: "open"},
		{Name: "list_users", Perms: []string{"system:user:list"}},
		{Name: "add_user", Perms: []string{"system:user:add"}},
		{Name: "either", Perms: []string{"system:role:list", "system:user:add"}},
	}
	src := &held{perms: HeldOf("system:user:list", "system:user:add")}
	for _, mode := range []Mode{ModeOpen, ModePerms} {
		c := &Checker{Mode: mode, Source: NewCache(src, time.Hour), Name: SourceQuery}
		for _, sub := range []Subject{
			{},
			{User: 2},
			{User: 2, Narrow: []Held{HeldOf("system:user:list")}},
			{User: 2, Narrow: []Held{HeldOf("system:user:add")}},
			{User: 2, Narrow: []Held{HeldOf("system:user:add"), HeldOf("*:*:*")}},
			{User: 2, Narrow: []Held{HeldOf()}},
			{User: 2, Narrow: []Held{}},
		} {
			want, err := c.Usable(t.Context(), sub, all)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				s, err := c.UsableSet(t.Context(), sub, all)
				if err != nil || !slices.Equal(positions(s, all), names(want)) {
					t.Errorf("%s %+v: UsableSet %v %v, Usable %v", mode, sub, positions(s, all), err, names(want))
				}
			}
		}
	}
}

// TestUsableSetFollowsItsSources: the memo answers again only while
// what it was decided on holds: another list of tools (a catalog
// change) is decided anew, and so is a user whose cached strings were
// read again (the TTL passed): a role removed in RuoYi narrows the set
// when it narrows a call, not later. Until then the set is the one kept.
func TestUsableSetFollowsItsSources(t *testing.T) {
	ctx := context.Background()
	src := &held{perms: HeldOf("system:user:list", "system:user:add")}
	cache := NewCache(src, time.Minute)
	now := time.Unix(1_000_000, 0)
	cache.now = func() time.Time { return now }
	c := &Checker{Mode: ModePerms, Source: cache, Name: SourceRuoYi}
	sub := Subject{User: 2}
	gen1 := []*plugins.Plugin{
		{Name: "list_users", Perms: []string{"system:user:list"}},
		{Name: "add_user", Perms: []string{"system:user:add"}},
		{Name: "drop_user", Perms: []string{"system:user:remove"}},
	}
	usable := func(all []*plugins.Plugin) (*Set, []string) {
		t.Helper()
		s, err := c.UsableSet(ctx, sub, all)
		if err != nil {
			t.Fatal(err)
		}
		return s, positions(s, all)
	}
	first, got := usable(gen1)
	if !slices.Equal(got, []string{"list_users", "add_user"}) {
		t.Fatalf("first set %v", got)
	}
	if again, _ := usable(gen1); again != first {
		t.Error("asked again with nothing changed: decided anew, not kept")
	}

	// The catalog changes: as many tools, in another order, drop_user
	// still out of reach, add_user renamed. The next generation is
	// another list.
	gen2 := []*plugins.Plugin{
		gen1[2],
		gen1[0],
		{Name: "create_user", Perms: []string{"system:user:add"}},
	}
	if _, got := usable(gen2); !slices.Equal(got, []string{"list_users", "create_user"}) {
		t.Errorf("after a catalog change: %v, want list_users and create_user (the memo outlived the catalog)", got)
	}

	// RuoYi removes system:user:add from the user's roles: within the
	// TTL a call still holds it, and so does the set; past it, neither.
	src.perms = HeldOf("system:user:list")
	now = now.Add(30 * time.Second)
	if _, got := usable(gen2); !slices.Equal(got, []string{"list_users", "create_user"}) {
		t.Errorf("within the TTL: %v, want the strings cached", got)
	}
	now = now.Add(31 * time.Second)
	if _, got := usable(gen2); !slices.Equal(got, []string{"list_users"}) {
		t.Errorf("past the TTL: %v, want list_users alone (the memo outlived the user's strings)", got)
	}
	if err := c.Allowed(ctx, sub, gen2[2]); err == nil {
		t.Error("past the TTL a call of create_user is allowed: the set and the call disagree")
	}
	if src.reads != 2 {
		t.Errorf("%d reads of the source, want 2 (one per TTL)", src.reads)
	}
}

// TestUsableSetUncached: with a source that is not a Cache, nothing is
// kept (each set reads it, as Usable does), and one that cannot be read
// refuses the set as it refuses the list.
func TestUsableSetUncached(t *testing.T) {
	src := &held{perms: HeldOf("a:b:c")}
	c := &Checker{Mode: ModePerms, Source: src, Name: SourceQuery}
	all := []*plugins.Plugin{{Name: "x", Perms: []string{"a:b:c"}}}
	for range 2 {
		if s, err := c.UsableSet(t.Context(), Subject{User: 2}, all); err != nil || !s.Has(0) {
			t.Fatalf("%v %v", s, err)
		}
	}
	src.perms = HeldOf()
	if s, err := c.UsableSet(t.Context(), Subject{User: 2}, all); err != nil || s.Has(0) {
		t.Errorf("an uncached source's change is not seen: %v %v", positions(s, all), err)
	}
	src.err = fmt.Errorf("connection refused")
	if _, err := c.UsableSet(t.Context(), Subject{User: 2}, all); err == nil {
		t.Error("an unreadable source: the set is not refused")
	}
}

// BenchmarkUsableSet is a search's access step once the set is kept:
// what replaced deciding each of 2,000 matches (BenchmarkUsable).
func BenchmarkUsableSet(b *testing.B) {
	all := benchTools()
	c := &Checker{Mode: ModePerms, Source: NewCache(&held{perms: HeldOf("bench:m1:list", "bench:m2:list")}, time.Hour), Name: SourceQuery}
	for b.Loop() {
		if _, err := c.UsableSet(b.Context(), Subject{User: 2}, all); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUsable decides each of 2,000 tools, the user's strings cached.
func BenchmarkUsable(b *testing.B) {
	all := benchTools()
	c := &Checker{Mode: ModePerms, Source: NewCache(&held{perms: HeldOf("bench:m1:list", "bench:m2:list")}, time.Hour), Name: SourceQuery}
	for b.Loop() {
		if _, err := c.Usable(b.Context(), Subject{User: 2}, all); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTools() []*plugins.Plugin {
	ps := make([]*plugins.Plugin, 2000)
	for i := range ps {
		ps[i] = &plugins.Plugin{Name: fmt.Sprintf("tool_%04d", i), Perms: []string{fmt.Sprintf("bench:m%d:list", i%50)}}
	}
	return ps
}

// TestReadTellsReadsApart: Read is the same while the user's cached
// strings are (within the TTL) and another once they were read again,
// whether or not they changed; no user asks nothing; a source read at
// every decision, or one that fails, keeps nothing.
func TestReadTellsReadsApart(t *testing.T) {
	ctx := context.Background()
	src := &held{perms: HeldOf("system:user:list")}
	cache := NewCache(src, time.Minute)
	now := time.Unix(1_000_000, 0)
	cache.now = func() time.Time { return now }
	c := &Checker{Source: cache, Name: SourceRuoYi}
	first, ok := c.Read(ctx, 2)
	if !ok {
		t.Fatal("a cached source: nothing may be kept")
	}
	now = now.Add(30 * time.Second)
	if again, ok := c.Read(ctx, 2); again != first || !ok {
		t.Errorf("within the TTL: read %d %v, want %d", again, ok, first)
	}
	now = now.Add(31 * time.Second)
	if later, ok := c.Read(ctx, 2); later == first || !ok {
		t.Errorf("past the TTL: read %d %v, want another than %d", later, ok, first)
	}
	if read, ok := c.Read(ctx, 0); read != 0 || !ok {
		t.Errorf("no user: %d %v, want 0 kept", read, ok)
	}
	if _, ok := (&Checker{Source: src, Name: SourceRuoYi}).Read(ctx, 2); ok {
		t.Error("a source read at every decision: kept")
	}
	src.err = errors.New("down")
	now = now.Add(time.Hour)
	if _, ok := c.Read(ctx, 2); ok {
		t.Error("an unreadable source: kept")
	}
}
