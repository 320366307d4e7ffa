package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/blindexec/blindexec/"

// layers lists every package of the module, lowest layer first. A package
// imports only packages of lower layers; docs/development.md's layout table shows
// the same list.
var layers = []struct {
	name     string
	packages []string
}{
	{"redaction: no package of this module", []string{"internal/redact"}},
	{"foundations: of this module, the redaction only", []string{"migrations", "egress", "internal/corpus", "internal/header", "internal/httpbody", "internal/invisible",
		"internal/csp", "internal/hostiledoc", "internal/jsonlimit", "internal/jsontext", "internal/language", "internal/layers", "internal/logbuf", "internal/loglimit", "internal/mcpconformance", "internal/mcpts", "internal/settings", "internal/tcpproxy", "tracing",
		"engine/mcp/mcptest", "connections/oauthtest", "tests/image", "tests/docs", "bench/mcprelay", "toolsearch/searcheval/internal/springdoc",
		"toolsearch/internal/lexgen"}},
	{"schemas and test kits", []string{"plugins/schema", "egress/egresstest", "tracing/tracingtest", "internal/invisible/invisibletest"}},
	{"rows and the plugin protocol, side by side", []string{"store", "plugins"}},
	{"formats, search and test kits", []string{"plugins/openapi", "plugins/mcpimport", "toolsearch", "internal/testdb",
		"internal/openaitest"}},
	{"the catalog and what reads formats", []string{"catalog", "confirm", "plugins/openapiquery", "engine/toolset",
		"internal/githubcatalog", "toolsearch/searcheval"}},
	{"credentials and quotas", []string{"auth", "quota"}},
	{"users' connections to OAuth providers", []string{"connections"}},
	{"who may use which tool", []string{"access"}},
	{"the executor, and a test kit of access", []string{"engine", "access/accesstest"}},
	{"the executor's parts", []string{"engine/mcp", "engine/loop", "engine/mcpserver", "engine/questions", "engine/recordspool"}},
	{"imports into the catalog", []string{"importer"}},
	{"the HTTP API and its generated client", []string{"api", "api/client"}},
	{"the console", []string{"console"}},
	{"programs", []string{"cmd/blindexec", "bench", "bench/mcprelay/cmd/mcprelay"}},
}

// apart are trees that never import each other, whatever their layers:
// converting a document (plugins/...) knows nothing of rows.
var apart = [][2]string{{"plugins", "store"}}

func under(pkg, tree string) bool { return pkg == tree || strings.HasPrefix(pkg, tree+"/") }

// TestImportsPointDown lists the module's packages with `go list` and
// fails on a package without a layer, a layer naming no package, an
// import (tests' imports aside) of the same or a higher layer, and an
// import between trees kept apart.
func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	layerOf := map[string]int{}
	for i, l := range layers {
		for _, p := range l.packages {
			if _, dup := layerOf[p]; dup {
				t.Errorf("%s is listed twice", p)
			}
			layerOf[p] = i
		}
	}
	seen := map[string]bool{}
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok {
			continue // the module's root path holds no package
		}
		seen[pkg] = true
		from, ok := layerOf[pkg]
		if !ok {
			t.Errorf("%s has no layer: add it to layers (and to docs/development.md's layout table)", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if to, ok := layerOf[dep]; ok && to >= from {
				t.Errorf("%s (layer %d, %s) imports %s (layer %d, %s): imports point down", pkg, from, layers[from].name, dep, to, layers[to].name)
			}
			for _, a := range apart {
				if under(pkg, a[0]) && under(dep, a[1]) || under(pkg, a[1]) && under(dep, a[0]) {
					t.Errorf("%s imports %s: %s and %s are kept apart", pkg, dep, a[0], a[1])
				}
			}
		}
	}
	for p := range layerOf {
		if !seen[p] {
			t.Errorf("%s is listed but is not a package of the module", p)
		}
	}
}
