package access

import (
	"context"
	"sync"
	"time"
)

// DefaultTTL is BLINDEXEC_PERMISSIONS_TTL_MS's default: a role changed in
// RuoYi reaches every replica's calls within a minute, for one query (two
// for RuoYi) per active user per minute on each replica.
const DefaultTTL = time.Minute

// maxCached bounds the users a Cache keeps; past it, expired entries are
// dropped, and when none has expired, all are.
const maxCached = 100_000

// Cache keeps what Source grants each user for TTL: no trigger is ever
// put on RuoYi's tables, so their changes are seen when an entry expires.
// A failed read is not kept: the next call asks again. Concurrent misses
// for one user may each read the source.
type Cache struct {
	src Source
	ttl time.Duration
	// now is the clock (tests move it).
	now func() time.Time

	// grants, when set (Follow), is the version of the source's tables
	// now: an entry read at another is read again, whatever its TTL.
	grants func() int64

	mu    sync.Mutex
	users map[int64]cached
	reads uint64 // the source's answers kept so far (cached.read)
}

type cached struct {
	held    Held
	expires time.Time
	grants  int64 // the version of the source's tables it was read at
	// read tells one read of the source from another: what a memo of
	// decisions made on held (Checker.UsableSet) is kept against.
	read uint64
}

// NewCache keeps src's answers for ttl.
func NewCache(src Source, ttl time.Duration) *Cache {
	return &Cache{src: src, ttl: ttl, now: time.Now, users: map[int64]cached{}}
}

// FollowGrants returns the digest of the source's tables (a
// Fingerprinter's), for a watcher to read at each poll
// (store.Watcher.Grants), and makes the cache keep an entry only while
// version (what the watcher published of it) stays where it was when the
// entry was read: a grant changed is read within one poll, not at the
// TTL's end. ok false when the source has none (an operator's query: its
// TTL alone). Call it before use.
func (c *Cache) FollowGrants(version func() int64) (digest func(ctx context.Context) (int64, error), ok bool) {
	f, ok := c.src.(Fingerprinter)
	if !ok {
		return nil, false
	}
	c.grants = version
	return f.Fingerprint, true
}

// Held answers from the cache, or reads the source and keeps its answer.
func (c *Cache) Held(ctx context.Context, user int64) (Held, error) {
	held, _, err := c.entry(ctx, user)
	return held, err
}

// entry is Held and which read of the source answered: another read
// (the entry expired) is another number.
func (c *Cache) entry(ctx context.Context, user int64) (Held, uint64, error) {
	now := c.now()
	var grants int64
	if c.grants != nil {
		grants = c.grants() // before the read: a change after it is read again
	}
	c.mu.Lock()
	e, ok := c.users[user]
	c.mu.Unlock()
	if ok && now.Before(e.expires) && e.grants == grants {
		return e.held, e.read, nil
	}
	held, err := c.src.Held(ctx, user)
	if err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.users) >= maxCached {
		for u, e := range c.users {
			if !now.Before(e.expires) {
				delete(c.users, u)
			}
		}
		if len(c.users) >= maxCached {
			clear(c.users)
		}
	}
	c.reads++
	c.users[user] = cached{held: held, expires: now.Add(c.ttl), read: c.reads, grants: grants}
	return held, c.reads, nil
}
