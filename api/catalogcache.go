package api

import (
	"sync"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/plugins"
)

// catalogCache keeps catalog plugins, parsed, for the runtime routes: a
// blind call would otherwise read and decode its row every time. Writes
// through this API take effect at once; rows changed elsewhere (RuoYi's
// admin tooling, the CLI) within the TTL.
type catalogCache struct {
	mu sync.Mutex
	m  map[string]cachedPlugin
	// origins, when set, is told of every write too.
	origins *auth.Catalog
}

type cachedPlugin struct {
	p       *plugins.Plugin
	expires time.Time
}

// catalogCacheMax bounds the cache; past it, the cache starts afresh.
const catalogCacheMax = 4096

func (c *catalogCache) get(name string) *plugins.Plugin {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[name]
	if !ok || time.Now().After(e.expires) {
		return nil
	}
	return e.p
}

func (c *catalogCache) put(name string, p *plugins.Plugin, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= catalogCacheMax {
		c.m = make(map[string]cachedPlugin)
	}
	c.m[name] = cachedPlugin{p: p, expires: time.Now().Add(ttl)}
}

// clear forgets everything: after any write to the catalog.
func (c *catalogCache) clear() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
	if c.origins != nil {
		c.origins.Invalidate()
	}
}
