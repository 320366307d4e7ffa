package openapi

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

// FuzzLoad feeds arbitrary bytes to the loader and converts whatever
// loads: neither may panic, every failure must give a reason, and an
// operation naming an OAuth provider names a valid one, the one its
// plugin's auth config uses. Every plugin is within an inline plugin's
// limits, the import's count is at least what its plugins hold, and the
// import's limit refuses the conversion a byte under that count and
// changes nothing at it.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	more, _ := filepath.Glob("testdata/*.json")
	for _, name := range append(files, more...) {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("openapi: 3.1.0\npaths:\n  /x/{a}:\n    get:\n      parameters: [{$ref: '#/paths/~1x~1{a}/get/parameters/0'}]\n"))
	f.Add([]byte("a: &a [*a, *a]\nopenapi: 3.0.0\n"))
	f.Add([]byte(`{"swagger": "2.0", "paths": {"/p": {"parameters": [{"in": "body"}], "post": {}}}}`))
	f.Add([]byte("openapi: 3.0.0\nx: &x {a: [*x]}\npaths: {/a: {get: {parameters: [{name: p, in: query, schema: *x}]}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Load(data, "fuzz")
		if err != nil {
			return
		}
		opts := Options{BaseURL: "https://fuzz.example.com"}
		c, err := newConverter(doc, opts)
		if err != nil {
			return
		}
		ops, failures, err := c.run()
		if err != nil {
			return
		}
		for _, fl := range failures {
			if fl.Reason == "" {
				t.Errorf("%s: failure without a reason", fl.Key)
			}
		}
		held := 0
		for _, op := range ops {
			if p := op.Provider; p != nil && (!plugins.ProviderNamePattern.MatchString(p.Name) || op.Plugin.AuthConfig.ConnectionProvider() != p.Name) {
				t.Errorf("%s: provider %q, the plugin's %q", op.Key, p.Name, op.Plugin.AuthConfig.ConnectionProvider())
			}
			if err := plugins.CheckSchemaCost(op.Plugin.Parameters); err != nil {
				t.Errorf("%s: over an inline plugin's limits: %v", op.Key, err)
			}
			held += len(op.Plugin.Parameters) + len(op.Plugin.Title) + len(op.Plugin.Description)
		}
		if c.total < held {
			t.Errorf("counted %d bytes, the plugins hold %d", c.total, held)
		}
		if c.total == 0 {
			return
		}
		opts.MaxBytes = c.total
		if at, _, err := Convert(doc, opts); err != nil || len(at) != len(ops) {
			t.Errorf("at the limit: %v, %d operations of %d", err, len(at), len(ops))
		}
		opts.MaxBytes = c.total - 1
		if _, _, err := Convert(doc, opts); !errors.As(err, new(*TooLargeError)) {
			t.Errorf("a byte under the limit: %v", err)
		}
	})
}
