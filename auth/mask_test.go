package auth_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
)

func TestMaskerForms(t *testing.T) {
	const secret = `s3cr+t=/&x y"<z>`
	jsonForm, _ := json.Marshal(map[string]string{"echo": secret})
	m := auth.NewMasker(secret, "user:pa55")
	tests := []struct {
		name, in string
	}{
		{"plain", "key is " + secret + "."},
		{"query-escaped", "GET /v1?key=" + url.QueryEscape(secret) + "&a=1"},
		{"path-escaped", "/v1/keys/" + url.PathEscape(secret) + "/info"},
		{"base64", "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("user:pa55"))},
		{"base64 url raw", "token=" + base64.RawURLEncoding.EncodeToString([]byte(secret))},
		{"json", string(jsonForm)},
		{"json no html escape", `{"echo":"` + strings.ReplaceAll(secret, `"`, `\"`) + `"}`},
		{"twice", secret + secret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := m.String(tt.in)
			if !strings.Contains(got, auth.Redacted) {
				t.Errorf("String(%q) = %q: nothing redacted", tt.in, got)
			}
			for _, leak := range []string{secret, "s3cr", "pa55", "dXNlcjpwYTU1"} {
				if strings.Contains(got, leak) {
					t.Errorf("String(%q) = %q: %q left", tt.in, got, leak)
				}
			}
			if b := string(m.Bytes([]byte(tt.in))); b != got {
				t.Errorf("Bytes = %q, String = %q", b, got)
			}
		})
	}
}

func TestMaskerLongestFirst(t *testing.T) {
	// The padded base64 form contains the raw one; the longest must win,
	// leaving no stray "=".
	m := auth.NewMasker("abcde")
	in := base64.StdEncoding.EncodeToString([]byte("abcde"))
	if got := m.String(in); got != auth.Redacted {
		t.Errorf("String(%q) = %q, want %q", in, got, auth.Redacted)
	}
}

func TestMaskerCleanAndNil(t *testing.T) {
	var nilMasker *auth.Masker
	if nilMasker.String("x") != "x" || string(nilMasker.Bytes([]byte("x"))) != "x" || nilMasker.Error(errors.New("x")).Error() != "x" {
		t.Error("nil Masker changed its input")
	}
	m := auth.NewMasker("abc", "", "secret-value")
	if got := m.String("abc abc"); got != "abc abc" {
		t.Errorf("short secret masked: %q", got)
	}
	cleanString := strings.Repeat("nothing to hide here ", 100)
	clean := []byte(cleanString)
	if allocs := testing.AllocsPerRun(100, func() {
		m.String(cleanString)
		m.Bytes(clean)
	}); allocs > 0 {
		t.Errorf("masking clean text allocated %v times", allocs)
	}
	if got := m.Bytes(clean); &got[0] != &clean[0] {
		t.Error("Bytes copied clean input")
	}
}

func TestMaskerError(t *testing.T) {
	const key = "k3y+with/specials"
	m := auth.NewMasker(key)
	req, _ := http.NewRequest(http.MethodGet, "http://api.example/v1?key="+url.QueryEscape(key), nil)
	cause := errors.New("connection refused")
	err := &url.Error{Op: "Get", URL: req.URL.String(), Err: cause}
	masked := m.Error(err)
	if strings.Contains(masked.Error(), "k3y") || !strings.Contains(masked.Error(), "key="+auth.Redacted) {
		t.Errorf("Error() = %q", masked)
	}
	if !errors.Is(masked, cause) {
		t.Error("masked error does not unwrap to its cause")
	}
	plain := errors.New("nothing secret")
	if m.Error(plain) != plain {
		t.Error("an error without secrets was wrapped")
	}
	if m.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}

func BenchmarkMaskerClean(b *testing.B) {
	body := []byte(strings.Repeat(`{"name":"Acme","id":12345,"tags":["a","b"]},`, 2000))
	for b.Loop() {
		m := auth.NewMasker("sk-live-0123456789abcdef", "client-secret-xyz")
		m.Bytes(body)
	}
}
