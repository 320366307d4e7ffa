package openapi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

// FuzzLoad feeds arbitrary bytes to the loader and converts whatever
// loads: neither may panic, every failure must give a reason, and an
// operation naming an OAuth provider names a valid one, the one its
// plugin's auth config uses.
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
		ops, failures, _ := Convert(doc, Options{BaseURL: "https://fuzz.example.com"})
		for _, fl := range failures {
			if fl.Reason == "" {
				t.Errorf("%s: failure without a reason", fl.Key)
			}
		}
		for _, op := range ops {
			if p := op.Provider; p != nil && (!plugins.ProviderNamePattern.MatchString(p.Name) || op.Plugin.AuthConfig.ConnectionProvider() != p.Name) {
				t.Errorf("%s: provider %q, the plugin's %q", op.Key, p.Name, op.Plugin.AuthConfig.ConnectionProvider())
			}
		}
	})
}
