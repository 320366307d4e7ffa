package main

import (
	"strings"
	"testing"

	"github.com/blindexec/blindexec/store"
)

// TestCLIOAuthProvider: a provider registered with the CLI keeps its
// secret out of every listing; bad flags are named; rm removes it.
func TestCLIOAuthProvider(t *testing.T) {
	c := newCLI(t)
	const secret = "cli-client-secret-0123456789"
	for _, bad := range []struct {
		args []string
		flag string
	}{
		{[]string{"oauth", "provider", "add", "acme", "--authorization-url", "ftp://x/a", "--token-url", "https://x/t", "--client-id", "c"}, "--authorization-url"},
		{[]string{"oauth", "provider", "add", "acme", "--authorization-url", "https://x/a", "--token-url", "https://x/t"}, "--client-id"},
		{[]string{"oauth", "provider", "add", "acme", "--authorization-url", "https://x/a", "--token-url", "https://x/t", "--client-id", "c", "--extra", "state=x"}, "--extra"},
		{[]string{"oauth", "provider", "add", "a b", "--authorization-url", "https://x/a", "--token-url", "https://x/t", "--client-id", "c"}, "NAME"},
		{[]string{"oauth", "provider", "add", "acme", "--authorization-url", "https://x/a", "--token-url", "https://x/t", "--client-id", "c", "--iss-supported"}, "--iss-supported"},
	} {
		if code, _, errs := c.run("", bad.args...); code != 2 || !strings.Contains(errs, bad.flag) {
			t.Errorf("%v: %d %s", bad.args, code, errs)
		}
	}
	code, out, errs := c.run(secret+"\n", "oauth", "provider", "add", "acme", "--authorization-url", "https://acme.example/authorize",
		"--token-url", "https://acme.example/token", "--client-id", "cid", "--client-secret-stdin", "--scope", "read", "--extra", "access_type=offline",
		"--issuer", "https://acme.example", "--iss-supported")
	if code != 0 || !strings.Contains(out, "BLINDEXEC_BROWSER_URL") {
		t.Fatalf("add: %d %s %s", code, out, errs)
	}
	st, err := store.Open(t.Context(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.GetOAuthProvider(t.Context(), "acme")
	st.Close()
	if err != nil || p.Issuer != "https://acme.example" || p.IssSupported != "1" {
		t.Fatalf("stored: %+v %v", p, err)
	}
	code, out, _ = c.run("", "oauth", "provider", "list")
	if code != 0 || !strings.Contains(out, "acme") || !strings.Contains(out, "stored") || strings.Contains(out, secret) {
		t.Fatalf("list: %d %s", code, out)
	}
	if code, out, _ := c.run("", "oauth", "connections"); code != 0 || !strings.Contains(out, "PROVIDER") {
		t.Fatalf("connections: %d %s", code, out)
	}
	if code, _, errs := c.run("", "oauth", "disconnect", "acme", "--user", "7"); code != 1 || !strings.Contains(errs, "not connected") {
		t.Fatalf("disconnect without a connection: %d %s", code, errs)
	}
	if code, out, _ := c.run("", "oauth", "provider", "rm", "acme"); code != 0 || !strings.Contains(out, "removed acme") {
		t.Fatalf("rm: %d %s", code, out)
	}
}
