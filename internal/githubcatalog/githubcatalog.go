// Package githubcatalog gives tests GitHub's REST API description as a
// catalog: the 1,100+ operations of api.github.com.json (npm package
// @octokit/openapi@23.0.2, fetched by .ci/run) converted to plugins as an
// import would. The file's path is in BLINDEXEC_GITHUB_SPEC; without it a
// test fails when CI is set and skips otherwise.
package githubcatalog

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
)

// EnvSpec names the path of api.github.com.json.
const EnvSpec = "BLINDEXEC_GITHUB_SPEC"

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

// load parses the description once per test binary.
func load(tb testing.TB) *openapi.Document {
	tb.Helper()
	path := os.Getenv(EnvSpec)
	if path == "" {
		msg := fmt.Sprintf("%s is not set: the path of api.github.com.json from the npm package @octokit/openapi@23.0.2 (.ci/run fetches it)", EnvSpec)
		if os.Getenv("CI") != "" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	parsed.once.Do(func() {
		data, err := os.ReadFile(path)
		if err != nil {
			parsed.err = err
			return
		}
		parsed.doc, parsed.err = openapi.Load(data, "api.github.com.json")
	})
	if parsed.err != nil {
		tb.Fatalf("%s: %v", EnvSpec, parsed.err)
	}
	return parsed.doc
}
