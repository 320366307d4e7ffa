package api_test

import (
	"testing"

	"github.com/blindexec/blindexec/api"
)

// TestOriginIsTheHostDialed: an origin's host is written as a browser
// sends it in Origin, IDNA's ASCII form (egress.Hostname, as the engine
// dials), so an allowed origin written in Unicode matches the header of
// its page; a name IDNA refuses is no origin (small79).
func TestOriginIsTheHostDialed(t *testing.T) {
	for _, tt := range []struct {
		raw, want string
		ok        bool
	}{
		{"https://bücher.example", "https://xn--bcher-kva.example", true},
		{"https://BÜCHER.example:443", "https://xn--bcher-kva.example", true},
		{"https://xn--bcher-kva.example", "https://xn--bcher-kva.example", true},
		{"http://bücher.example:8080", "http://xn--bcher-kva.example:8080", true},
		{"https://a\u200d.example", "", false},
		{"HTTPS://Console.Example", "https://console.example", true},
	} {
		got, ok := api.Origin(tt.raw)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Origin(%q) = %q, %v; want %q, %v", tt.raw, got, ok, tt.want, tt.ok)
		}
	}
}
