package api

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// FuzzBearerIs: /readyz's detail and /metrics are read with the admin or
// the metrics token (BearerIs, compared hashed). Whatever Authorization
// field a client sends, as net/http reads it off the wire, BearerIs
// passes it only when it is "Bearer " (the scheme in any case) and one of
// the non-empty tokens given, exactly: never an empty token (an unset
// metrics token), another token's prefix, or a token in another field.
func FuzzBearerIs(f *testing.F) {
	for _, s := range [][3]string{
		{"Bearer adm-1", "adm-1", ""},
		{"Bearer ", "", ""},
		{"Bearer adm", "adm-1", "met-2"},
		{"bearer met-2", "adm-1", "met-2"},
		{"Bearer  met-2 ", "adm-1", "met-2"},
		{"Basic YWRtLTE6", "adm-1", "met-2"},
		{"Bearer adm-1\tx", "adm-1", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, field, admin, metrics string) {
		wire := "GET /readyz HTTP/1.1\r\nHost: e\r\nAuthorization: " + field + "\r\n\r\n"
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(wire)))
		if err != nil {
			return // no request of it reaches a route
		}
		sent := r.Header.Get("Authorization")
		tok, bearer := "", len(sent) >= 7 && strings.EqualFold(sent[:7], "Bearer ")
		if bearer {
			tok = sent[7:]
		}
		want := bearer && tok != "" && (tok == admin || tok == metrics)
		if got := BearerIs(r, admin, metrics); got != want {
			t.Fatalf("Authorization %q (read %q), tokens %q and %q: BearerIs %v, want %v", field, sent, admin, metrics, got, want)
		}
	})
}
