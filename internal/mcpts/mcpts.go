// Package mcpts runs, in tests, the MCP clients of tests/mcp-ts: the
// official TypeScript SDK, pinned there, which CI installs with
// `npm ci --prefix tests/mcp-ts`.
package mcpts

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// dir is tests/mcp-ts, found from this file so that any package's test
// can name a client.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "tests", "mcp-ts")
}

// Require skips t unless the TypeScript SDK is installed, and fails it
// if node, which runs the clients, is missing.
func Require(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir(), "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Skipf("TypeScript SDK not installed (npm ci --prefix tests/mcp-ts): %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("the TypeScript SDK is installed but node is not: %v", err)
	}
}

// Run runs `node tests/mcp-ts/SCRIPT ARGS...` with env added to the
// test's environment, for at most timeout, and returns what it printed on
// stdout; if it fails, t fails with its output. Call Require first.
func Run(t testing.TB, timeout time.Duration, env []string, script string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(dir(), script)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s%s", script, args, err, out, stderr.Bytes())
	}
	return out
}
