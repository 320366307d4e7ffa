package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blindexec/blindexec/auth"
)

// TestTrace: a call with Trace reports the request its last attempt sent:
// the headers the auth config set replaced wholesale, a secret elsewhere
// (a query parameter, the body, an argument) masked, the plugin's static
// headers hidden as in a preview (trace82), the rest as sent;
// never without Trace, never for a refused call, never in the record.
func TestTrace(t *testing.T) {
	tokenServer := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"bearer","expires_in":3600}`, secretToken)
	})
	const get = `{"name":"t","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/s","headers":{"X-Static":"yes"},"retry":{"max_attempts":1}},"auth_config":`
	const post = `{"name":"t","description":"d","parameters":{"type":"object","properties":{"note":{"type":"string"}}},
	  "execution":{"method":"POST","base_url":"%s/p","retry":{"max_attempts":1}},"auth_config":`
	tests := []struct {
		name     string
		plugin   string
		args     string
		creds    map[string]string
		secrets  []string
		redacted []string // headers whose value is replaced
		inURL    string   // what the URL must hold, masked
		inBody   string
	}{
		{"api_key header", get + `{"type":"api_key","mapping":[{"source":"KEY","target":"X-Api-Key"}]}}`, `{"q":"x"}`,
			map[string]string{"KEY": secretKey}, []string{secretKey}, []string{"X-Api-Key"}, "/s?q=x", ""},
		{"api_key query and cookie", get + `{"type":"api_key","mapping":[{"source":"KEY","target":"key","location":"query"},{"source":"S","target":"sid","location":"cookie"}]}}`, `{"q":"x"}`,
			map[string]string{"KEY": secretKey, "S": secretSess}, []string{secretKey, secretSess}, []string{"Cookie"}, "key=" + auth.Redacted, ""},
		{"bearer, the token echoed into a query argument", get + `{"type":"bearer","token":"T"}}`, `{"q":"` + secretToken + `"}`,
			map[string]string{"T": secretToken}, []string{secretToken}, []string{"Authorization"}, "q=" + auth.Redacted, ""},
		{"basic, the password echoed into the body", post + `{"type":"basic","username":"U","password":"P"}}`, `{"note":"mine is ` + secretPass + `"}`,
			map[string]string{"U": secretUser, "P": secretPass}, []string{secretPass}, []string{"Authorization"}, "/p", `{"note":"mine is ` + auth.Redacted + `"}`},
		{"oauth2 client credentials", get + `{"type":"oauth2","oauth2":{"token_url":"` + tokenServer.URL + `/token","client_id":"CID","client_secret":"CSECRET"}}}`, `{}`,
			map[string]string{"CID": "client-id-1", "CSECRET": "client-secret-1"}, []string{secretToken, "client-secret-1"}, []string{"Authorization"}, "/s", ""},
		{"oauth2 access token", get + `{"type":"oauth2","oauth2":{"grant":"access_token","access_token":"AT"}}}`, `{}`,
			map[string]string{"AT": secretToken}, []string{secretToken}, []string{"Authorization"}, "/s", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, nil)
			h := newHarness(t)
			p := mustPlugin(t, tt.plugin, up.URL)
			res, err := h.Execute(context.Background(), Call{Plugin: p, Arguments: json.RawMessage(tt.args), Credentials: tt.creds, UserID: 7, Trace: true})
			if err != nil || !res.OK || res.Request == nil {
				t.Fatalf("%v %s", err, resultJSON(t, res))
			}
			sent := up.last(t)
			req := res.Request
			if req.Method != sent.Method || !strings.HasPrefix(req.URL, up.URL) || !strings.Contains(req.URL, tt.inURL) {
				t.Errorf("request %s %s, want %s to %s with %s", req.Method, req.URL, sent.Method, up.URL, tt.inURL)
			}
			if tt.inBody != "" && req.Body != tt.inBody {
				t.Errorf("body %q, want %q", req.Body, tt.inBody)
			}
			shown := map[string]SentHeader{}
			for _, hd := range req.Headers {
				shown[hd.Name] = hd
			}
			for _, name := range tt.redacted {
				if hd := shown[name]; hd.Value != auth.Redacted || !hd.Credential || sent.Header.Get(name) == "" {
					t.Errorf("header %s shown as %+v (sent: %q)", name, hd, sent.Header.Get(name))
				}
			}
			if hd := shown["User-Agent"]; hd.Value != sent.Header.Get("User-Agent") || hd.Credential {
				t.Errorf("User-Agent shown as %+v, sent %q", hd, sent.Header.Get("User-Agent"))
			}
			// A static header is named, its value hidden as the preview's (trace82).
			if hd := shown["X-Static"]; strings.HasPrefix(tt.plugin, get) && (hd.Value != auth.Redacted || !hd.Credential) {
				t.Errorf("the static header is shown as %+v", hd)
			}
			recs := h.flush(t)
			out := resultJSON(t, res)
			if f := leaked(out+h.logs.String(), tt.secrets...); f != nil {
				t.Fatalf("leaked %q in %s", f, out)
			}
			if strings.Contains(fmt.Sprint(recs), "X-Static") || strings.Contains(h.logs.String(), "X-Static") {
				t.Errorf("the request sent is recorded or logged: %v", recs)
			}
		})
	}

	up := newUpstream(t, nil)
	h := newHarness(t)
	p := mustPlugin(t, get+`{"type":"api_key","mapping":[{"source":"KEY","target":"X-Api-Key"}]}}`, up.URL)
	t.Run("not asked", func(t *testing.T) {
		res, err := h.call(t, p, `{"q":"x"}`, map[string]string{"KEY": secretKey})
		if err != nil || !res.OK || res.Request != nil || strings.Contains(resultJSON(t, res), `"request"`) {
			t.Fatalf("%v %s", err, resultJSON(t, res))
		}
	})
	t.Run("refused", func(t *testing.T) {
		res, err := h.Execute(context.Background(), Call{Plugin: p, Arguments: json.RawMessage(`{"q":"x"}`), Trace: true})
		if err == nil || res.Request != nil {
			t.Fatalf("%v %s", err, resultJSON(t, res))
		}
	})
	t.Run("long body cut after masking", func(t *testing.T) {
		p := mustPlugin(t, post+`{"type":"bearer","token":"T"}}`, up.URL)
		note := strings.Repeat("é", MaxTraceBody) + secretToken
		res, err := h.Execute(context.Background(), Call{Plugin: p, Arguments: json.RawMessage(`{"note":"` + note + `"}`),
			Credentials: map[string]string{"T": secretToken}, Trace: true})
		if err != nil || res.Request == nil {
			t.Fatalf("%v %s", err, resultJSON(t, res))
		}
		if b := res.Request.Body; len(b) > MaxTraceBody || !res.Request.BodyTruncated || !utf8.ValidString(b) {
			t.Errorf("body of %d bytes, truncated %v", len(b), res.Request.BodyTruncated)
		}
	})
}

// TestTraceHidesStaticSecrets (trace82): the trace a caller asks for
// (trace: true, the console's "Try it") showed the plugin's static
// secrets the preview hides (onerow81) as sent; it shows the call as the
// preview does.
func TestTraceHidesStaticSecrets(t *testing.T) {
	up := newUpstream(t, nil)
	h := newHarness(t)
	p := mustPlugin(t, staticSecretsPlugin, up.URL)
	res, err := h.Execute(t.Context(), Call{Plugin: p, Arguments: json.RawMessage(`{"id":"42","q":"find-me"}`), UserID: 7, Trace: true})
	if err != nil || !res.OK || res.Request == nil {
		t.Fatalf("%v %s", err, resultJSON(t, res))
	}
	hidesStaticSecrets(t, "the trace", res.Request, up.URL)
	if got := up.last(t); got.Header.Get("X-Api-Key") != staticInHeader {
		t.Errorf("sent %v: the static secrets are the upstream's", got.Header)
	}
}

// BenchmarkTraced compares a call with and without Trace: without, the
// allocations are those of an engine without tracing.
func BenchmarkTraced(b *testing.B) {
	up := newUpstream(b, nil)
	h := newHarness(b)
	h.Recorder, h.Logger = nil, discardLogger()
	p := mustPlugin(b, `{"name":"t","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/s"},"auth_config":{"type":"bearer","token":"T"}}`, up.URL)
	creds := map[string]string{"T": secretToken}
	for _, trace := range []bool{false, true} {
		b.Run(fmt.Sprint("trace=", trace), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Execute(context.Background(), Call{Plugin: p, Arguments: json.RawMessage(`{"q":"x"}`), Credentials: creds, Trace: trace}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
