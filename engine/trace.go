package engine

import (
	"net/http"
	"slices"

	"github.com/blindexec/blindexec/auth"
)

// MaxTraceBody is how much of a sent body Result.Request shows, after
// masking.
const MaxTraceBody = 16 << 10

// SentRequest is the request an invoker sent, for the administrator's
// "Try it" (Call.Trace). In Result.Request it is masked: every header
// the auth config set has its whole value replaced by auth.Redacted, and
// the URL, the other headers and the body are passed through the call's
// masker (a credential echoed into a query parameter or the body).
type SentRequest struct {
	Method  string       `json:"method"`
	URL     string       `json:"url"`
	Headers []SentHeader `json:"headers"`
	Body    string       `json:"body,omitempty"`
	// BodyTruncated reports a body cut at MaxTraceBody bytes.
	BodyTruncated bool `json:"body_truncated,omitempty"`
}

// SentHeader is one header value sent (a header sent twice is two).
type SentHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Credential marks a header that carries credentials (set by the auth
	// config): its value is never shown.
	Credential bool `json:"credential,omitempty"`
}

// httpSent captures req as sent, the headers named in credential marked;
// body is req's body.
func httpSent(req *http.Request, credential []string, body []byte) *SentRequest {
	s := &SentRequest{Method: req.Method, URL: req.URL.String(), Body: string(body)}
	names := make([]string, 0, len(req.Header))
	for name := range req.Header {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		cred := slices.Contains(credential, http.CanonicalHeaderKey(name))
		for _, v := range req.Header[name] {
			s.Headers = append(s.Headers, SentHeader{Name: name, Value: v, Credential: cred})
		}
	}
	return s
}

// masked returns a copy of s fit to show: credential headers replaced,
// everything else masked with m, the body masked then cut.
func (s *SentRequest) masked(m *auth.Masker) *SentRequest {
	out := &SentRequest{Method: s.Method, URL: m.String(s.URL), Headers: make([]SentHeader, len(s.Headers))}
	for i, h := range s.Headers {
		if h.Credential {
			h.Value = auth.Redacted
		} else {
			h.Value = m.String(h.Value)
		}
		out.Headers[i] = h
	}
	// Masked whole, then cut: the cut cannot split a secret.
	body := m.String(s.Body)
	out.Body = truncateUTF8(body, MaxTraceBody)
	out.BodyTruncated = len(out.Body) < len(body)
	return out
}
