package connections

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"golang.org/x/oauth2"
)

// TestAccountOf: the account shown on the confirmation page and listed by
// the CLI is an id_token claim that is plain text; one carrying terminal
// escapes or bidirectional controls is passed over.
func TestAccountOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   string
	}{
		{"email first", map[string]any{"email": "alice@acme.example", "sub": "1"}, "alice@acme.example"},
		{"no id_token claims", map[string]any{}, ""},
		{"a terminal escape", map[string]any{"email": "alice\x1b]0;pwned\x07@acme.example", "sub": "1"}, "1"},
		{"a newline", map[string]any{"preferred_username": "alice\nuser 8: connected", "name": "Alice"}, "Alice"},
		{"a right-to-left override", map[string]any{"email": "alice@\u202eelpmaxe.emca", "sub": "42"}, "42"},
		{"not a string", map[string]any{"email": 7, "sub": "s"}, "s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload, _ := json.Marshal(tc.claims)
			idt := "e30." + base64.RawURLEncoding.EncodeToString(payload) + ".sig"
			tok := (&oauth2.Token{AccessToken: "a"}).WithExtra(map[string]any{"id_token": idt})
			if got := accountOf(tok); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
