package access

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
)

// Set is the tools of one list a subject may use, by their position in
// the list (Checker.UsableSet). It is never changed once made.
type Set struct {
	bits []uint64
}

// Has reports whether the subject may use the list's i-th tool.
func (s *Set) Has(i int) bool {
	return i >= 0 && i>>6 < len(s.bits) && s.bits[i>>6]&(1<<(i&63)) != 0
}

func newSet(n int) *Set { return &Set{bits: make([]uint64, (n+63)/64)} }

func (s *Set) add(i int) { s.bits[i>>6] |= 1 << (i & 63) }

// UsableSet is Usable over all, the tools of one catalog generation (a
// list never changed once made, for as long as anyone holds it: the
// search index's), answered as the set of their positions. It is kept
// per subject and decided again only when what it was decided on
// changed: all is another list (the catalog changed, so the index was
// rebuilt), the user's strings were read again (the Cache's entry
// expired: BLINDEXEC_PERMISSIONS_TTL_MS, as for a call), or sub's agent
// was (a change of the agents reloads them). A search then tests one bit
// per match instead of deciding each. The agent is checked on every
// call, as Usable checks it; with a Source that is not a *Cache (read on
// every call), nothing is kept.
func (c *Checker) UsableSet(ctx context.Context, sub Subject, all []*plugins.Plugin) (*Set, error) {
	a, err := c.agent(ctx, sub, false)
	if err != nil {
		return nil, err
	}
	held, read, keep := c.read(ctx, sub.User)
	keep = keep && len(all) > 0
	key := memoKey{user: sub.User, agent: sub.Agent, narrow: narrowKey(sub.Narrow)}
	if keep {
		if s := c.memo.get(all, key, a, read); s != nil {
			return s, nil
		}
	}
	s := newSet(len(all))
	if err := c.decide(ctx, sub, a, all, held, s.add); err != nil {
		return nil, err
	}
	if keep {
		c.memo.put(all, key, memoEntry{agent: a, read: read, set: s})
	}
	return s, nil
}

// read is user's strings and which read of the source they are
// (Cache.entry's; 0 when none are asked: no user, or no source). keep is
// false when what is decided on them may not be kept against that read:
// a Source that is not a *Cache, read at every decision, or a read that
// failed (decide then reads the source, and refuses a list only when a
// tool needs the strings, as Usable does).
func (c *Checker) read(ctx context.Context, user int64) (held Held, read uint64, keep bool) {
	if user <= 0 || c.Source == nil {
		return nil, 0, true
	}
	cache, ok := c.Source.(*Cache)
	if !ok {
		return nil, 0, false
	}
	held, read, err := cache.entry(ctx, user)
	if err != nil {
		return nil, 0, false
	}
	return held, read, true
}

// FollowGrants is the source's Cache.FollowGrants; ok false without a
// cached source.
func (c *Checker) FollowGrants(version func() int64) (digest func(ctx context.Context) (int64, error), ok bool) {
	cache, isCache := c.Source.(*Cache)
	if !isCache {
		return nil, false
	}
	return cache.FollowGrants(version)
}

// Read tells which read of user's strings a decision for user is made
// on now: another once the Cache's entry expired
// (BLINDEXEC_PERMISSIONS_TTL_MS), as for a call. What a caller derives
// from a list decided for a subject (mcpserver's views: the languages
// search_tools names, the digest of the tools listed) is kept against it,
// so that it follows a role changed in RuoYi when a call does. ok is
// false when nothing may be kept: a source read at every decision, or
// one that could not be read.
func (c *Checker) Read(ctx context.Context, user int64) (read uint64, ok bool) {
	_, read, ok = c.read(ctx, user)
	return read, ok
}

// memoGenerations is how many lists (catalog generations, or an agent
// server's index besides the catalog's) the memo keeps sets of at once;
// the least recently asked goes first, and with it its list.
const memoGenerations = 4

// usableMemo keeps Checker.UsableSet's sets. Its zero value is empty.
type usableMemo struct {
	mu   sync.Mutex
	gens []*memoGen // the most recently asked first
}

type memoGen struct {
	all  []*plugins.Plugin
	sets map[memoKey]memoEntry
}

// memoKey is whom a set is for: Subject, its narrowing written out.
type memoKey struct {
	user   int64
	agent  string
	narrow string
}

// memoEntry is a set and what it was decided on besides its list.
type memoEntry struct {
	agent *catalog.Agent // the agents' snapshot's, nil for none
	read  uint64         // Cache.entry's
	set   *Set
}

// same reports whether a and b are one list: the same backing array
// and length (a list is never changed, and the memo holds it, so its
// array is not reused while compared).
func same(a, b []*plugins.Plugin) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// get returns the set kept for key over all, decided within agent a on
// the user's strings of read, nil when there is none.
func (m *usableMemo) get(all []*plugins.Plugin, key memoKey, a *catalog.Agent, read uint64) *Set {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, g := range m.gens {
		if !same(g.all, all) {
			continue
		}
		if i > 0 {
			copy(m.gens[1:i+1], m.gens[:i])
			m.gens[0] = g
		}
		if e, ok := g.sets[key]; ok && e.agent == a && e.read == read {
			return e.set
		}
		return nil
	}
	return nil
}

// put keeps e for key over all.
func (m *usableMemo) put(all []*plugins.Plugin, key memoKey, e memoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := slices.IndexFunc(m.gens, func(g *memoGen) bool { return same(g.all, all) })
	if i < 0 {
		g := &memoGen{all: all, sets: map[memoKey]memoEntry{}}
		m.gens = append([]*memoGen{g}, m.gens[:min(len(m.gens), memoGenerations-1)]...)
		i = 0
	}
	g := m.gens[i]
	if len(g.sets) >= maxCached {
		clear(g.sets)
	}
	g.sets[key] = e
}

// Key tells subjects apart as lists are decided for them: two subjects of
// one key are shown the same tools (mcpserver keeps what it derives from
// a list per key).
func (s Subject) Key() string {
	return strconv.FormatInt(s.User, 10) + "\x00" + s.Agent + "\x00" + narrowKey(s.Narrow)
}

// narrowKey writes out a subject's narrowing: each source's strings,
// sorted, told apart from no narrowing (nil) and from a source holding
// nothing.
func narrowKey(narrow []Held) string {
	if narrow == nil {
		return ""
	}
	var b strings.Builder
	for _, h := range narrow {
		b.WriteByte(1)
		perms := make([]string, 0, len(h))
		for p := range h {
			perms = append(perms, p)
		}
		slices.Sort(perms)
		for _, p := range perms {
			b.WriteString(p)
			b.WriteByte(0)
		}
	}
	if b.Len() == 0 {
		return "\x02" // narrowed by no source: non-nil, empty
	}
	return b.String()
}
