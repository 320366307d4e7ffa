package main

import (
	"strings"
	"testing"
)

// FuzzParseCreds: --cred flags are read as KEY=VALUE, the value whole
// (an "=" in it kept), or refused naming the flag; a refusal never
// quotes a value, nor the text of a flag without "=" (a value typed
// without its key is a secret all the same), as it is printed to the
// terminal and CI logs.
func FuzzParseCreds(f *testing.F) {
	f.Add("API_KEY=sk-live-0123", "TOKEN=a=b=c")
	f.Add("sk-live-0123456789", "API_KEY=x")
	f.Add("=orphan-value", "")
	f.Add("K=", "K=again")
	f.Fuzz(func(t *testing.T, a, b string) {
		kvs := []string{a, b}
		got, err := parseCreds(kvs)
		if err != nil {
			// The same flags without their values: what the message says
			// of its own (a value may happen to be a word of it).
			var shapes []string
			for _, kv := range kvs {
				k, _, ok := strings.Cut(kv, "=")
				if !ok {
					k = ""
				}
				shapes = append(shapes, k+strings.Repeat("=", min(strings.Count(kv, "="), 1)))
			}
			_, ref := parseCreds(shapes)
			for _, kv := range kvs {
				k, v, ok := strings.Cut(kv, "=")
				secret := v
				if !ok {
					secret = k
				}
				if len(secret) >= 4 && strings.Contains(err.Error(), secret) && (ref == nil || !strings.Contains(ref.Error(), secret)) {
					t.Fatalf("parseCreds(%q): %v quotes %q", kvs, err, secret)
				}
			}
			return
		}
		for _, kv := range kvs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				t.Fatalf("parseCreds(%q) took %q", kvs, kv)
			}
			if k == strings.SplitN(b, "=", 2)[0] && kv == a && a != b {
				continue // the later flag of the same key wins
			}
			if got[k] != v {
				t.Fatalf("parseCreds(%q)[%q] = %q, want %q", kvs, k, got[k], v)
			}
		}
	})
}
