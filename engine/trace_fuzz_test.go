package engine

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blindexec/blindexec/auth"
)

// FuzzSentMasked: the request "Try it" shows holds no copy of the call's
// secret, wherever it was sent (the URL, a header the auth config did not
// set, a body long enough to be cut around it); a credential header shows
// nothing of its value; a body is cut within MaxTraceBody on a character
// boundary, and said to be cut.
func FuzzSentMasked(f *testing.F) {
	f.Add("sk-live-0123456789", "https://api.test/v1?key=sk-live-0123456789", "Bearer sk-live-0123456789", `{"k":"sk-live-0123456789"}`, uint16(0))
	f.Add("pa55word", "https://api.test/pa55%77ord", "x", "pa55word", uint16(MaxTraceBody-3))
	f.Add("é中😀x", "https://api.test/", "é中😀x", "é中😀xé中😀x", uint16(MaxTraceBody-1))
	f.Fuzz(func(t *testing.T, secret, url, header, body string, pad uint16) {
		if len(secret) < auth.MinMaskLen || !utf8.ValidString(secret) || strings.Contains(secret, "\x00") {
			t.Skip()
		}
		// pad places the body's text about the cut at MaxTraceBody.
		body = strings.Repeat("-", int(pad)%(MaxTraceBody+64)) + body
		s := &SentRequest{Method: "POST", URL: url, Body: body, Headers: []SentHeader{
			{Name: "X-Echo", Value: header}, {Name: "Authorization", Value: header + secret, Credential: true}}}
		got := s.masked(auth.NewMasker(secret))
		for _, v := range []string{got.URL, got.Body, got.Headers[0].Value, got.Headers[1].Value} {
			if strings.Contains(strings.ReplaceAll(v, auth.Redacted, "\x00"), secret) {
				t.Fatalf("%q shown holds the secret %q", v, secret)
			}
		}
		if got.Headers[1].Value != auth.Redacted {
			t.Fatalf("a credential header shows %q", got.Headers[1].Value)
		}
		if len(got.Body) > MaxTraceBody || got.BodyTruncated != (len(auth.NewMasker(secret).String(body)) > MaxTraceBody) ||
			utf8.ValidString(body) && !utf8.ValidString(got.Body) {
			t.Fatalf("a body of %d bytes shown as %d (cut: %v)", len(body), len(got.Body), got.BodyTruncated)
		}
	})
}
