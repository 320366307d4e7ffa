package access

import (
	"database/sql"
	"testing"
	"time"

	"github.com/blindexec/blindexec/plugins"
)

// BenchmarkAllowedCached is the decision for a plugin with perms once the
// user's strings are cached: no database round trip.
func BenchmarkAllowedCached(b *testing.B) {
	src := &held{perms: HeldOf("system:user:add", "system:user:list")}
	c := &Checker{Source: NewCache(src, time.Hour), Name: SourceRuoYi}
	p := &plugins.Plugin{Name: "list_users", Perms: []string{"system:user:query", "system:user:list"}}
	sub := Subject{User: 2}
	for b.Loop() {
		if err := c.Allowed(b.Context(), sub, p); err != nil {
			b.Fatal(err)
		}
	}
	if src.reads != 1 {
		b.Fatalf("%d reads of the source, want 1", src.reads)
	}
}

// BenchmarkSourceRead is one uncached read of a user's strings from
// RuoYi's and ruoyi-vue-pro's own tables in MariaDB: what a user costs
// once per TTL on each replica.
func BenchmarkSourceRead(b *testing.B) {
	for _, tt := range []struct {
		name, script string
		src          func(db *sql.DB) Source
		user         int64
	}{
		{"ruoyi", "testdata/ruoyi-vue/ry_20260417.sql", func(db *sql.DB) Source { return RuoYi{DB: db} }, 2},
		{"yudao", "testdata/ruoyi-vue-pro/ruoyi-vue-pro.sql.gz", func(db *sql.DB) Source { return Yudao{DB: db} }, 104},
	} {
		b.Run(tt.name, func(b *testing.B) {
			src := tt.src(scriptDB(b, tt.script))
			for b.Loop() {
				if h, err := src.Held(b.Context(), tt.user); err != nil || len(h) == 0 {
					b.Fatal(h, err)
				}
			}
		})
	}
}
