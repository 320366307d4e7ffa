package main

import (
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/internal/mcpconformance"
	"github.com/blindexec/blindexec/internal/settings"
	"github.com/blindexec/blindexec/internal/testdb"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md's settings table from the registry")

const (
	configurationPage = "../../docs/configuration.md"
	tableStart        = "<!-- settings: generated from cmd/blindexec/settings.go by TestConfigurationPage; rewrite with `go test ./cmd/blindexec -run TestConfigurationPage -update` -->"
	tableEnd          = "<!-- end of settings -->"
)

// TestConfigurationPage: the configuration page's table is the registry's,
// row for row; -update rewrites it.
func TestConfigurationPage(t *testing.T) {
	page, err := os.ReadFile(configurationPage)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(page), tableStart+"\n")
	table, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the settings table's markers:\n%s\n...\n%s", configurationPage, tableStart, tableEnd)
	}
	want := "\n" + registry.Table() + "\n"
	if table == want {
		return
	}
	if *update {
		if err := os.WriteFile(configurationPage, []byte(before+tableStart+"\n"+want+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's settings table differs from the registry (cmd/blindexec/settings.go): run go test ./cmd/blindexec -run TestConfigurationPage -update", configurationPage)
}

// TestSettingsRegistry: the registry says what the program does — each
// flag it names exists, with the variable in its help; the OTEL_*
// variables it declares are those the env file accepts; secrets have no
// flag; and no setting of the docs is missing from it.
func TestSettingsRegistry(t *testing.T) {
	root := newRoot(&config{}, settings.FromEnv(os.LookupEnv), strings.NewReader(""), io.Discard, io.Discard)
	var otel []string
	for _, s := range registry.All() {
		if s.Meaning == "" || s.Type == "" {
			t.Errorf("%s: no meaning or type", s.Name)
		}
		if strings.HasPrefix(s.Name, "OTEL_") {
			otel = append(otel, s.Name)
		}
		if s.Flag == "" {
			continue
		}
		if s.Secret {
			t.Errorf("%s is a secret with a flag (%s): flags show in ps", s.Name, s.Flag)
		}
		words := strings.Fields(s.Flag)
		cmd, _, err := root.Find(words[:len(words)-1])
		if err != nil {
			t.Errorf("%s: flag %q: no command: %v", s.Name, s.Flag, err)
			continue
		}
		f := cmd.Flag(strings.TrimPrefix(words[len(words)-1], "--"))
		if f == nil {
			t.Errorf("%s: %q has no such flag", s.Name, s.Flag)
		} else if !strings.Contains(f.Usage, s.Name) {
			t.Errorf("%s: the help of %s does not name it: %q", s.Name, s.Flag, f.Usage)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(otel)), slices.Sorted(slices.Values(settings.OTELVariables))) {
		t.Errorf("the registry declares %v; the env file accepts %v", otel, settings.OTELVariables)
	}

	// Every BLINDEXEC_ variable the documentation names is declared (or is
	// a test kit's, which docs/development.md describes; window.BLINDEXEC_…
	// is the console's JavaScript, not the environment).
	testKits := []string{"BLINDEXEC_TEST_MYSQL_DSN", "BLINDEXEC_CORPUS", "BLINDEXEC_GITHUB_SPEC", testdb.EnvChangeDetection, EnvGalera, mcpconformance.EnvReferenceServer, "BLINDEXEC_TUNE_WEIGHTS", "BLINDEXEC_TUNE_RESTARTS", "BLINDEXEC_FOLD_WEIGHTS"}
	name := regexp.MustCompile(`BLINDEXEC_[A-Z0-9_]*[A-Z0-9]\b`)
	docs, _ := filepath.Glob("../../docs/*.md")
	for _, path := range append(docs, "../../README.md") {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, loc := range name.FindAllIndex(data, -1) {
			n := string(data[loc[0]:loc[1]])
			if strings.HasPrefix(string(data[loc[1]:]), "_*") || strings.HasSuffix(string(data[:loc[0]]), "window.") || registry.Get(n) != nil || slices.Contains(testKits, n) {
				continue
			}
			t.Errorf("%s names %s, which the registry does not declare", filepath.Base(path), n)
		}
	}
}

// TestSettingsReadThroughTheRegistry: no package of the program reads the
// environment itself; settings.Load does, for the registry. The test kits
// and the benchmark runner read their own variables. Every way the
// standard library reads it counts: syscall.Getenv and os.Environ went
// unseen (newcomer73).
func TestSettingsReadThroughTheRegistry(t *testing.T) {
	read := regexp.MustCompile(`\b(os\.(Getenv|LookupEnv|Environ|ExpandEnv)|syscall\.(Getenv|Environ))\b`)
	allowed := regexp.MustCompile(`settings\.(Load|EnvFilePath)\(os\.LookupEnv\)`)
	skip := []string{"bench", "internal/testdb", "internal/corpus", "internal/githubcatalog", "internal/mcpconformance", "internal/mcpts", "internal/settings"}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "node_modules" || d.Name() == "testdata" || slices.Contains(skip, rel)) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if read.MatchString(line) && !allowed.MatchString(line) {
				t.Errorf("%s:%d reads the environment outside the settings registry: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMCPOrigins: the origins the MCP endpoints accept are
// BLINDEXEC_BROWSER_URL's (its path dropped) and those listed, as
// browsers serialise them; a listed value that is no http(s) origin
// ("null" included) makes the setting invalid (issue 48 point 6).
func TestMCPOrigins(t *testing.T) {
	for _, tt := range []struct {
		browser, listed string
		want            []string
		ok              bool
	}{
		{"", "", nil, true},
		{"https://ai.example.com/engine", "", []string{"https://ai.example.com"}, true},
		{"https://ai.example.com:443", " HTTP://Localhost:6274 , https://chat.example.com/", []string{"https://ai.example.com", "http://localhost:6274", "https://chat.example.com"}, true},
		{"", "null", nil, false},
		{"", "chat.example.com", nil, false},
		{"", "ftp://files.example.com", nil, false},
		// a Unicode host is the ASCII form a browser sends (small79); one
		// IDNA refuses is no origin
		{"https://bücher.example/engine", "https://Bücher.example:8443", []string{"https://xn--bcher-kva.example", "https://xn--bcher-kva.example:8443"}, true},
		{"", "https://a\u200d.example", nil, false},
	} {
		got, ok := mcpOrigins(tt.browser, tt.listed)
		if ok != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("mcpOrigins(%q, %q) = %v, %v; want %v, %v", tt.browser, tt.listed, got, ok, tt.want, tt.ok)
		}
	}
	// refused at the start, naming the setting
	t.Setenv("BLINDEXEC_ALLOWED_ORIGINS", "https://chat.example.com,https://a\u200d.example")
	src := settings.FromEnv(os.LookupEnv)
	(&config{}).bind(&cobra.Command{}, src)
	if err := src.Err(); err == nil || !strings.Contains(err.Error(), "BLINDEXEC_ALLOWED_ORIGINS") {
		t.Errorf("an allowed origin IDNA refuses: %v", err)
	}
}
