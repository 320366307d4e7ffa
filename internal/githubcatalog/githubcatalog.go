// Package githubcatalog gives tests GitHub's REST API description as a
// catalog: the 1,100+ operations of api.github.com.json (npm package
// @octokit/openapi@23.0.2) converted to plugins as an import would. The
// file is $BLINDEXEC_GITHUB_SPEC, else bench/.cache/octokit-openapi-23.0.2/
// in the module (where .ci/run and `go run ./bench -only toolsearch` put
// it); missing, a test fails when CI is set and skips otherwise.
package githubcatalog

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
)

// EnvSpec names the path of api.github.com.json.
const EnvSpec = "BLINDEXEC_GITHUB_SPEC"

// cached is where the file is by default, from the module's root.
const cached = "bench/.cache/octokit-openapi-23.0.2/api.github.com.json"

// Plugins converts the description with every operation sent to baseURL
// (a loopback upstream). Each call returns fresh plugins.
func Plugins(tb testing.TB, baseURL string) []*plugins.Plugin {
	tb.Helper()
	doc := load(tb)
	ops, _, err := openapi.Convert(doc, openapi.Options{BaseURL: baseURL})
	if err != nil {
		tb.Fatalf("convert GitHub's description: %v", err)
	}
	ps := make([]*plugins.Plugin, len(ops))
	for i, op := range ops {
		ps[i] = op.Plugin
	}
	return ps
}

var parsed struct {
	once sync.Once
	doc  *openapi.Document
	err  error
}

// Path returns the description's file, skipping the test when it is
// missing (failing it when CI is set).
func Path(tb testing.TB) string {
	tb.Helper()
	path := specPath()
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("GitHub's REST description (api.github.com.json of the npm package @octokit/openapi@23.0.2) is missing: %v; "+
			"run `go run ./bench -only toolsearch` once, or set %s", err, EnvSpec)
		if os.Getenv("CI") != "" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return path
}

// load parses the description once per test binary.
func load(tb testing.TB) *openapi.Document {
	tb.Helper()
	path := Path(tb)
	parsed.once.Do(func() {
		data, err := os.ReadFile(path)
		if err != nil {
			parsed.err = err
			return
		}
		parsed.doc, parsed.err = openapi.Load(data, "api.github.com.json")
	})
	if parsed.err != nil {
		tb.Fatalf("%s: %v", path, parsed.err)
	}
	return parsed.doc
}

// specPath is $BLINDEXEC_GITHUB_SPEC, else the cached file in the module
// containing the working directory.
func specPath() string {
	if p := os.Getenv(EnvSpec); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		return cached
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, cached)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return cached
		}
		dir = parent
	}
}
