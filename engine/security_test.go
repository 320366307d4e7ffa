package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/plugins"
)

// The secrets of these tests hold characters that escaping changes, so
// that the plain, URL-escaped and base64 forms all differ.
const (
	secretKey   = "sk-live/7Hq+9 zX=Y"
	secretToken = "tok_9f8e7d6c5b4a"
	secretUser  = "svc-user"
	secretPass  = "p@ss w0rd/+="
	secretSess  = "sess-0123456789"
)

// leaked returns the forms of the secrets found in s.
func leaked(s string, secrets ...string) []string {
	var found []string
	for _, sec := range secrets {
		for _, form := range []string{sec, url.QueryEscape(sec), url.PathEscape(sec), base64.StdEncoding.EncodeToString([]byte(sec))} {
			if strings.Contains(s, form) {
				found = append(found, form)
			}
		}
	}
	return found
}

// Issue 3, point 6: a redirect to another host drops every injected
// credential (the Authorization of the auth type, mapped headers and
// cookies).
func TestRedirectToAnotherHostDropsCredentials(t *testing.T) {
	other := newUpstream(t, nil)
	first := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/landing", http.StatusTemporaryRedirect)
	})
	p := mustPlugin(t, `{"name":"t","description":"d",
	  "parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/start"},
	  "auth_config":{"type":"bearer","token":"TOKEN","mapping":[
	    {"source":"KEY","target":"X-Api-Key","location":"header"},
	    {"source":"SESSION","target":"sid","location":"cookie"}]}}`, first.URL)
	h := newHarness(t)
	creds := map[string]string{"TOKEN": secretToken, "KEY": "key-abcdef123", "SESSION": secretSess}
	res, err := h.call(t, p, `{"q":"x"}`, creds)
	if err != nil || !res.OK {
		t.Fatalf("%v %s", err, resultJSON(t, res))
	}
	// The first host got them all: the test would prove nothing otherwise.
	got := first.last(t)
	if got.Header.Get("Authorization") != "Bearer "+secretToken || got.Header.Get("X-Api-Key") != "key-abcdef123" || !strings.Contains(got.Header.Get("Cookie"), secretSess) {
		t.Fatalf("first host did not receive the credentials: %v", got.Header)
	}
	landed := other.last(t)
	if landed.RequestURI != "/landing" {
		t.Fatalf("redirect not followed: %s", landed.RequestURI)
	}
	if f := leaked(fmt.Sprint(landed.Header, landed.RequestURI), secretToken, "key-abcdef123", secretSess); f != nil {
		t.Fatalf("the other host received %v: %v", f, landed.Header)
	}
}

// An administrator's static header (execution.headers) may hold a secret
// pasted there rather than stored as a credential: a redirect to another
// host drops it as it drops credentials, and a same-origin hop keeps it.
func TestRedirectToAnotherHostDropsStaticHeaders(t *testing.T) {
	other := newUpstream(t, nil)
	first := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/start" {
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
			return
		}
		http.Redirect(w, r, other.URL+"/landing", http.StatusTemporaryRedirect)
	})
	p := mustPlugin(t, `{"name":"t","description":"d",
	  "parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/start","headers":{"X-Pasted-Key":"pasted-abcdef123","Accept":"application/json"}}}`, first.URL)
	h := newHarness(t)
	res, err := h.call(t, p, `{"q":"x"}`, nil)
	if err != nil || !res.OK {
		t.Fatalf("%v %s", err, resultJSON(t, res))
	}
	if hits := first.Hits(); len(hits) != 2 || hits[1].RequestURI != "/moved" || hits[1].Header.Get("X-Pasted-Key") != "pasted-abcdef123" {
		t.Fatalf("the same-origin hop: %v, want the static header kept", hits)
	}
	landed := other.last(t)
	if landed.RequestURI != "/landing" {
		t.Fatalf("redirect not followed: %s", landed.RequestURI)
	}
	if v := landed.Header.Values("X-Pasted-Key"); len(v) > 0 || landed.Header.Get("Accept") != "" {
		t.Fatalf("the other host received the static headers: %v", landed.Header)
	}
}

// Issue 3, point 6: an upstream echoing a credential back gets it masked
// in the output, in plain, URL-escaped and base64 forms; so for an error's
// excerpt; basic auth and oauth2 tokens included.
func TestEchoedCredentialsAreMasked(t *testing.T) {
	echo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get("X-Api-Key")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{
				"plain":         key,
				"url":           url.QueryEscape(key),
				"b64":           base64.StdEncoding.EncodeToString([]byte(key)),
				"authorization": r.Header.Get("Authorization"),
				"uri":           r.RequestURI,
			})
		}
	}
	tokenServer := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"bearer","expires_in":3600}`, secretToken)
	})
	tests := []struct {
		name    string
		auth    string
		status  int
		creds   map[string]string
		secrets []string
	}{
		{"api_key header", `{"type":"api_key","mapping":[{"source":"KEY","target":"X-Api-Key"}]}`, 200,
			map[string]string{"KEY": secretKey}, []string{secretKey}},
		{"api_key in query, error excerpt", `{"type":"api_key","mapping":[{"source":"KEY","target":"X-Api-Key"},{"source":"KEY","target":"key","location":"query"}]}`, 400,
			map[string]string{"KEY": secretKey}, []string{secretKey}},
		{"basic", `{"type":"basic","username":"U","password":"P"}`, 200,
			map[string]string{"U": secretUser, "P": secretPass}, []string{secretPass, secretUser + ":" + secretPass}},
		{"oauth2 client credentials", `{"type":"oauth2","oauth2":{"token_url":"` + tokenServer.URL + `/token","client_id":"CID","client_secret":"CSECRET"}}`, 200,
			map[string]string{"CID": "client-id-1", "CSECRET": "client-secret-1"}, []string{secretToken}},
		{"oauth2 access token", `{"type":"oauth2","oauth2":{"grant":"access_token","access_token":"AT"}}`, 200,
			map[string]string{"AT": secretToken}, []string{secretToken}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, echo(tt.status))
			h := newHarness(t)
			p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object"},
			  "execution":{"method":"GET","base_url":"%s/echo","retry":{"max_attempts":1}},"auth_config":`+tt.auth+`}`, up.URL)
			res, _ := h.call(t, p, `{}`, tt.creds)
			out := resultJSON(t, res)
			if res.HTTPStatus != tt.status {
				t.Fatalf("%s", out)
			}
			if !strings.Contains(out, "[REDACTED]") {
				t.Fatalf("nothing masked, was anything echoed? %s", out)
			}
			recs := h.flush(t)
			all := out + fmt.Sprint(recs) + h.logs.String()
			if f := leaked(all, tt.secrets...); f != nil {
				t.Fatalf("leaked %q in %s", f, all)
			}
		})
	}
}

// Issue 3, point 6: a key carried in the query never shows in the error,
// the record or the logs when the call fails in transport (Go's url.Error
// prints the URL).
func TestTransportErrorDoesNotLeakQueryKey(t *testing.T) {
	h := newHarness(t)
	p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/x","retry":{"max_attempts":2,"backoff_ms":1}},
	  "auth_config":{"type":"api_key","mapping":[{"source":"KEY","target":"api_key","location":"query"}]}}`, "http://"+closedPort(t))
	res, _ := h.call(t, p, `{"q":"hello"}`, map[string]string{"KEY": secretKey})
	if res.OK || res.Error.Code != CodeTransportError {
		t.Fatalf("%s", resultJSON(t, res))
	}
	recs := h.flush(t)
	if len(recs) != 1 || recs[0].ErrorClass != CodeTransportError {
		t.Fatalf("records %+v", recs)
	}
	all := resultJSON(t, res) + fmt.Sprintf("%+v", recs) + h.logs.String()
	if !strings.Contains(h.logs.String(), "connection refused") {
		t.Fatalf("the log line does not say what failed: %s", h.logs.String())
	}
	if f := leaked(all, secretKey); f != nil {
		t.Fatalf("leaked %q in %s", f, all)
	}
}

// Issue 3, point 6: CR, LF or NUL in a header from the arguments is
// refused; nothing is sent. So is a space or tab that begins or ends the
// value (FuzzSerializedArguments): a server reads the value without it.
func TestHeaderInjectionRefused(t *testing.T) {
	up := newUpstream(t, nil)
	h := newHarness(t)
	p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object","properties":{"trace":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/h","param_placement":{"trace":{"in":"header","name":"X-Trace"}}}}`, up.URL)
	for _, v := range []string{"a\r\nX-Evil: 1", "a\nb", "a\rb", "a\x00b", " a", "a ", "\ta", " "} {
		args, _ := json.Marshal(map[string]string{"trace": v})
		res, err := h.call(t, p, string(args), nil)
		var refused *RefusedError
		if !errors.As(err, &refused) || res.Error.Code != CodeInvalidArguments || !strings.Contains(res.Error.Message, "trace") {
			t.Fatalf("%q: %v %s", v, err, resultJSON(t, res))
		}
	}
	if n := len(up.Hits()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// Issue 3, point 6: no argument changes the scheme, host or port, or adds
// a path segment; whatever the value, the request reaches the plugin's
// host with one segment per template.
func TestArgumentsCannotMoveTheRequest(t *testing.T) {
	var wrong atomic.Int32
	elsewhere := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { wrong.Add(1) })
	up := newUpstream(t, nil)
	p := mustPlugin(t, `{"name":"t","description":"d",
	  "parameters":{"type":"object","properties":{"org":{"type":"string"},"repo":{"type":"string"}},"required":["org","repo"]},
	  "execution":{"method":"GET","base_url":"%s/{org}/x/{repo}"}}`, up.URL)
	hostport := strings.TrimPrefix(elsewhere.URL, "http://")
	// Dot segments are refused (TestDotSegmentsRefused); these are sent.
	attacks := []string{
		"@" + hostport, "//" + hostport, elsewhere.URL, "x?y=1", "x#frag",
		"a%2Fb", ":80", "a b", "x\r\nHost: evil",
	}
	h := newHarness(t)
	for _, a := range attacks {
		args, _ := json.Marshal(map[string]string{"org": a, "repo": a})
		res, _ := h.call(t, p, string(args), nil)
		if !res.OK {
			t.Fatalf("%q: %s", a, resultJSON(t, res))
		}
	}
	for _, hit := range up.Hits() {
		path, _, _ := strings.Cut(hit.RequestURI, "?")
		segs := strings.Split(path, "/")
		if len(segs) != 4 || segs[2] != "x" || hit.Host != strings.TrimPrefix(up.URL, "http://") || strings.Contains(hit.RequestURI, "?") {
			t.Errorf("request moved: host %s, URI %s", hit.Host, hit.RequestURI)
		}
		for _, s := range segs[1:] {
			if s == "." || s == ".." || s == "" {
				t.Errorf("dot or empty segment in %s", hit.RequestURI)
			}
		}
	}
	if len(up.Hits()) != len(attacks) || wrong.Load() != 0 {
		t.Fatalf("%d requests to the plugin's host, %d elsewhere", len(up.Hits()), wrong.Load())
	}
	// An empty value would collapse the segment.
	res, err := h.call(t, p, `{"org":"","repo":"r"}`, nil)
	if err == nil || res.Error.Code != CodeInvalidArguments {
		t.Fatalf("empty path value: %s", resultJSON(t, res))
	}
}

// Issue 3, point 6: with the default policy, loopback is refused at dial
// time (the executor reports egress_denied); tests elsewhere allow it
// explicitly.
func TestEgressDenied(t *testing.T) {
	up := newUpstream(t, nil)
	client := egress.NewClient(egresstest.Dialer(""))
	t.Cleanup(client.CloseIdleConnections)
	ex := NewExecutor(client)
	res, err := ex.Execute(context.Background(), Call{Plugin: mustPlugin(t, getDoc, up.URL), Arguments: json.RawMessage(`{}`)})
	if err != nil || res.OK || res.Error.Code != CodeEgressDenied || res.Attempts != 1 {
		t.Fatalf("%v %s", err, resultJSON(t, res))
	}
	if n := len(up.Hits()); n != 0 {
		t.Fatalf("denied call reached the server %d times", n)
	}
}

// Issue 3, point 3 (as the executor drives it): payload credentials win
// over the store, the store fills the rest, missing keys are refused
// before anything is sent, and an oauth2 401 refreshes the token once.
func TestCredentials(t *testing.T) {
	up := newUpstream(t, nil)
	p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object"},
	  "execution":{"method":"GET","base_url":"%s/c"},
	  "auth_config":{"type":"api_key","mapping":[{"source":"A","target":"X-A"},{"source":"B","target":"X-B"}]}}`, up.URL)
	store := storeFunc(func(_ context.Context, user int64, keys []string) (map[string]string, error) {
		if user != 7 {
			return nil, nil
		}
		return map[string]string{"A": "store-a-value", "B": "store-b-value"}, nil
	})
	h := newHarness(t)
	h.Credentials = store
	res, err := h.call(t, p, `{}`, map[string]string{"A": "payload-a-value"})
	if err != nil || !res.OK {
		t.Fatalf("%v %s", err, resultJSON(t, res))
	}
	got := up.last(t)
	if got.Header.Get("X-A") != "payload-a-value" || got.Header.Get("X-B") != "store-b-value" {
		t.Fatalf("headers %v", got.Header)
	}

	res, err = h.Execute(context.Background(), Call{Plugin: p, Arguments: json.RawMessage(`{}`), Credentials: map[string]string{"A": "x-value"}})
	var refused *RefusedError
	if !errors.As(err, &refused) || res.Error.Code != CodeMissingCredentials || !strings.Contains(res.Error.Message, "B") {
		t.Fatalf("anonymous call without B: %v %s", err, resultJSON(t, res))
	}
	// Which of the two mistakes: a call naming no user (a caller who forgot
	// user_id) is told so, one naming a user without B where to put it.
	for _, tt := range []struct {
		user int64
		want string
	}{
		{0, "missing credentials: B (the call names no user (user_id), so no stored credential applies: name the user or pass them in the payload)"},
		{8, "missing credentials: B (store them for the user or pass them in the payload)"},
	} {
		res, _ = h.Execute(context.Background(), Call{Plugin: p, Arguments: json.RawMessage(`{}`), UserID: tt.user, Credentials: map[string]string{"A": "x-value"}})
		if res.Error == nil || res.Error.Message != tt.want {
			t.Errorf("user %d: %s, want %q", tt.user, resultJSON(t, res), tt.want)
		}
	}
	if n := len(up.Hits()); n != 1 {
		t.Fatalf("a call with missing credentials was sent")
	}

	t.Run("oauth2 401 refreshes once", func(t *testing.T) {
		var issued atomic.Int32
		tokens := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":"token-%d-abcdef","token_type":"bearer","expires_in":3600}`, issued.Add(1))
		})
		api := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer token-2-abcdef" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			io.WriteString(w, `{"done":true}`)
		})
		p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object","properties":{"x":{"type":"integer"}}},
		  "execution":{"method":"POST","base_url":"%s/create"},
		  "auth_config":{"type":"oauth2","oauth2":{"token_url":"`+tokens.URL+`/token","client_id":"CID","client_secret":"CS"}}}`, api.URL)
		h := newHarness(t)
		res, err := h.call(t, p, `{"x":1}`, map[string]string{"CID": "client-1", "CS": "secret-1"})
		if err != nil || !res.OK || res.Attempts != 2 || issued.Load() != 2 {
			t.Fatalf("%v attempts=%d tokens=%d %s", err, res.Attempts, issued.Load(), resultJSON(t, res))
		}
		for _, hit := range api.Hits() {
			if string(hit.Body) != `{"x":1}` {
				t.Fatalf("retried POST body %q", hit.Body)
			}
		}
	})
}

type storeFunc func(ctx context.Context, user int64, keys []string) (map[string]string, error)

func (f storeFunc) Resolve(ctx context.Context, user int64, keys []string) (map[string]string, error) {
	return f(ctx, user, keys)
}

// everyKey is a credential store holding secret under every key asked.
func everyKey(secret string) storeFunc {
	return func(_ context.Context, _ int64, keys []string) (map[string]string, error) {
		out := map[string]string{}
		for _, k := range keys {
			out[k] = secret
		}
		return out, nil
	}
}

// catalogStub is a CatalogRules answering Bind with a function and
// Identifiers from a list (auth.Catalog is tested in auth and api).
type catalogStub struct {
	bind func(p *plugins.Plugin, keys []string) (*plugins.Plugin, error)
	ids  []string
}

func (c catalogStub) Bind(_ context.Context, p *plugins.Plugin, keys []string) (*plugins.Plugin, error) {
	return c.bind(p, keys)
}

func (catalogStub) Row(context.Context, string) (*plugins.Plugin, error) { return nil, nil }

func (catalogStub) Copy(context.Context, *plugins.Plugin) (*plugins.Plugin, error) { return nil, nil }

func (catalogStub) Elsewhere(context.Context, *plugins.Plugin, auth.ServerSends, []string) error {
	return nil
}

func (c catalogStub) Identifiers(_ context.Context, keys []string) ([]string, error) {
	var out []string
	for _, k := range keys {
		if slices.Contains(c.ids, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// TestStoredCredentialsBound: a call bound to the catalog passes the keys
// it would take from the store to the binding rule and then is the
// catalog's plugin (its base_url, its fixed params); payload keys are not
// bound; without a catalog a bound call using stored credentials is
// refused (fail closed); a secret too short to mask is refused, an
// identifier is not.
func TestStoredCredentialsBound(t *testing.T) {
	up := newUpstream(t, nil)
	const doc = `{"name":"t","description":"d","parameters":{"type":"object","properties":{"tenant":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/PATH/{tenant}"}, FIXED
	  "auth_config":{"type":"basic","username":"U","password":"P","mapping":[{"source":"T","target":"X-Tenant","secret":false}]}}`
	p := mustPlugin(t, strings.NewReplacer("PATH", "inline", "FIXED", "").Replace(doc), up.URL)
	row := mustPlugin(t, strings.NewReplacer("PATH", "row", "FIXED", `"fixed_params":{"tenant":"acme"},`).Replace(doc), up.URL)
	stored := storeFunc(func(context.Context, int64, []string) (map[string]string, error) {
		return map[string]string{"U": "bob", "P": "stored-password", "T": "t1"}, nil
	})
	bindTo := func(r *plugins.Plugin, err error) func(*plugins.Plugin, []string) (*plugins.Plugin, error) {
		return func(*plugins.Plugin, []string) (*plugins.Plugin, error) { return r, err }
	}
	unbound := catalogStub{bind: func(_ *plugins.Plugin, keys []string) (*plugins.Plugin, error) {
		return nil, &auth.UnboundCredentialError{Key: slices.Min(keys), Plugin: "t", Field: "execution.base_url"}
	}}
	tests := []struct {
		name    string
		catalog CatalogRules
		bound   bool
		payload map[string]string
		code    string // "" for a call that is sent
		path    string // the path it is sent to
		checked []string
	}{
		{"not bound: no check", unbound, false, nil, "", "/inline/x", nil},
		{"bound: the stored keys checked, the call the row's", catalogStub{bind: bindTo(row, nil)}, true, map[string]string{"P": "payload-password"}, "", "/row/acme", []string{"T", "U"}},
		{"bound, refused", unbound, true, nil, CodeCredentialNotBound, "", []string{"P", "T", "U"}},
		{"bound, no catalog: fail closed", nil, true, nil, CodeCredentialNotBound, "", nil},
		{"bound, payload only: nothing to check", unbound, true, map[string]string{"U": "bob", "P": "payload-password", "T": "t1"}, "", "/inline/x", nil},
		{"short secret", nil, false, map[string]string{"P": "abc"}, CodeAuthError, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.Credentials = stored
			var checked []string
			if c, ok := tt.catalog.(catalogStub); ok {
				h.Catalog = catalogStub{ids: []string{"U", "T"}, bind: func(p *plugins.Plugin, keys []string) (*plugins.Plugin, error) {
					checked = slices.Sorted(slices.Values(keys))
					return c.bind(p, keys)
				}}
			}
			before := len(up.Hits())
			owner := OwnerAdmin // the administrator's inline plugins are not bound
			if tt.bound {
				owner = OwnerUser
			}
			res, err := h.Execute(t.Context(), Call{Plugin: p, Arguments: json.RawMessage(`{"tenant":"x"}`), UserID: 7, Credentials: tt.payload, Inline: true, Owner: owner})
			if tt.code == "" {
				if err != nil || !res.OK || len(up.Hits()) != before+1 {
					t.Fatalf("%v %s", err, resultJSON(t, res))
				}
				if got := up.Hits()[before].RequestURI; got != tt.path {
					t.Errorf("sent to %s, want %s", got, tt.path)
				}
			} else {
				var refused *RefusedError
				if !errors.As(err, &refused) || res.Error.Code != tt.code || len(up.Hits()) != before {
					t.Fatalf("want %s, nothing sent: %v %s", tt.code, err, resultJSON(t, res))
				}
				if strings.Contains(res.Error.Message, "stored-password") || strings.Contains(res.Error.Message, "abc") {
					t.Errorf("the refusal quotes a value: %s", res.Error.Message)
				}
			}
			if !slices.Equal(checked, tt.checked) {
				t.Errorf("checked keys %v, want %v", checked, tt.checked)
			}
		})
	}
}

// TestPayloadFixedParams: the plugin's (the catalog's) fixed params
// always win, over the LLM's arguments and the payload's fixed params; a
// payload may fill only a declared parameter the plugin left open, and is
// refused naming the rule otherwise, before anything is sent.
func TestPayloadFixedParams(t *testing.T) {
	up := newUpstream(t, nil)
	p := mustPlugin(t, `{"name":"t","description":"d",
	  "parameters":{"type":"object","properties":{"tenant":{"type":"string"},"q":{"type":"string"},"page":{"type":"integer"}}},
	  "fixed_params":{"tenant":"acme"},
	  "execution":{"method":"GET","base_url":"%s/{tenant}/search"}}`, up.URL)
	tests := []struct {
		name  string
		args  string
		fixed map[string]any
		code  string // "" for sent
		uri   string
		field string
	}{
		{"the catalog's over the LLM's", `{"tenant":"globex","q":"x"}`, nil, "", "/acme/search?q=x", ""},
		{"the payload fills an open parameter", `{"q":"x","page":1}`, map[string]any{"page": 2}, "", "/acme/search?page=2&q=x", ""},
		{"the payload repeats the catalog's value", `{"q":"x"}`, map[string]any{"tenant": "acme"}, "", "/acme/search?q=x", ""},
		{"the payload rewrites the catalog's", `{"q":"x"}`, map[string]any{"tenant": "globex"}, CodeFixedParamsNotAllowed, "", "fixed_params.tenant"},
		{"the payload adds an undeclared parameter", `{"q":"x"}`, map[string]any{"admin": 1}, CodeFixedParamsNotAllowed, "", "fixed_params.admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(up.Hits())
			res, err := newHarness(t).Execute(t.Context(), Call{Plugin: p, Arguments: json.RawMessage(tt.args), FixedParams: tt.fixed})
			if tt.code == "" {
				if err != nil || !res.OK || len(up.Hits()) != before+1 || up.Hits()[before].RequestURI != tt.uri {
					t.Fatalf("%v %s %v", err, resultJSON(t, res), up.Hits()[before:])
				}
				return
			}
			var refused *RefusedError
			if !errors.As(err, &refused) || res.Error.Code != tt.code || len(up.Hits()) != before ||
				!strings.Contains(res.Error.Message, tt.field) || strings.Contains(res.Error.Message, "globex") {
				t.Fatalf("want %s naming %s, nothing sent: %v %s", tt.code, tt.field, err, resultJSON(t, res))
			}
		})
	}
}

// An error body is read up to a limit: an echo the limit cuts in two must
// not show its start in the excerpt, even when masking the echoes before
// it shrank the text enough for the cut to fall inside the excerpt.
func TestCutEchoMasked(t *testing.T) {
	const secret = "sk/live/0123456789abcdef"
	var allU strings.Builder
	for _, r := range secret {
		fmt.Fprintf(&allU, `\u%04x`, r)
	}
	var body strings.Builder
	body.WriteString(`{"echo":["`)
	for body.Len() < 2*ErrorExcerptBytes-200 {
		body.WriteString(allU.String() + `","`)
	}
	body.WriteString(strings.Repeat("x", 2*ErrorExcerptBytes-8-body.Len()) + secret + `"]}`) // cut after "sk/live/"
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, body.String())
	})
	p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object"},
	  "execution":{"method":"GET","base_url":"%s/e"},"auth_config":{"type":"api_key","mapping":[{"source":"K","target":"X-K"}]}}`, up.URL)
	res, _ := newHarness(t).call(t, p, `{}`, map[string]string{"K": secret})
	out := resultJSON(t, res)
	if res.HTTPStatus != http.StatusBadRequest || !strings.Contains(out, "xxx") {
		t.Fatalf("the excerpt does not reach the cut: %s", out)
	}
	if strings.Contains(out, "sk/live") || strings.Contains(out, `sk\/live`) {
		t.Fatalf("the cut secret's start shows: %s", out)
	}
}

// TestEchoInContentTypeMasked: an upstream reflecting the credential it
// was sent in its Content-Type (a parameter of a binary type, or of a
// failure's) shows it nowhere: the description of binary content and an
// error's details carry the type, which is the upstream's text like its
// body.
func TestEchoInContentTypeMasked(t *testing.T) {
	for _, status := range []int{200, 400} {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream; note="+r.Header.Get("X-Api-Key"))
			w.WriteHeader(status)
			w.Write([]byte{0, 1, 2, 3})
		})
		h := newHarness(t)
		p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object"},
		  "execution":{"method":"GET","base_url":"%s/echo","retry":{"max_attempts":1}},
		  "auth_config":{"type":"api_key","mapping":[{"source":"KEY","target":"X-Api-Key"}]}}`, up.URL)
		res, _ := h.call(t, p, `{}`, map[string]string{"KEY": secretKey})
		out := resultJSON(t, res)
		if res.HTTPStatus != status || !strings.Contains(out, "application/octet-stream") {
			t.Fatalf("%d: %s", status, out)
		}
		all := out + fmt.Sprint(h.flush(t)) + h.logs.String()
		if f := leaked(all, secretKey); f != nil {
			t.Errorf("%d: leaked %q in %s", status, f, all)
		}
	}
}

// TestOwnPluginOutputBudget: a per-user token's own inline plugin (not
// a copy of a row) reads at most the engine's default output budget,
// whatever its execution.response.max_bytes says; the catalog's rows, a
// copy of one, and the service's plugins keep theirs (review64: a user's
// max_bytes up to the 10 MiB read cap made each call of a run a 10 MiB
// part of the model's request).
func TestOwnPluginOutputBudget(t *testing.T) {
	big := `"` + strings.Repeat("a", 200<<10) + `"`
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, big)
	})
	const doc = `{"name":"dump","description":"Dumps.","parameters":{"type":"object","properties":{}},
	  "execution":{"method":"GET","base_url":"%s/dump","response":{"max_bytes":1048576}}}`
	// Two documents: ParseJSON shares the plugin of the same bytes, and a
	// catalog's row is never the payload's.
	p, row := mustPlugin(t, doc, up.URL), mustPlugin(t, doc+" ", up.URL)
	for _, tt := range []struct {
		name   string
		owner  Owner
		inline bool
		whole  bool
	}{
		{"a user's own inline plugin: the default budget", OwnerUser, true, false},
		{"the service's inline plugin: its own budget", OwnerService, true, true},
		{"the row, by name, for a user: the row's budget", OwnerUser, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			plugin := p
			if !tt.inline {
				plugin = row
			}
			res, err := h.Execute(t.Context(), Call{Plugin: plugin, Inline: tt.inline, Owner: tt.owner, UserID: 7, Arguments: json.RawMessage(`{}`)})
			if err != nil || !res.OK {
				t.Fatalf("%v %+v", err, res)
			}
			if whole := len(res.Output) >= 200<<10; whole != tt.whole || !whole && len(res.Output) > DefaultOutputBytes+100 {
				t.Fatalf("output of %d bytes, want whole: %v", len(res.Output), tt.whole)
			}
		})
	}
	t.Run("a user's copy of the row: the row's budget", func(t *testing.T) {
		h := newHarness(t)
		h.Catalog = rowCatalog{"dump": row}
		res, err := h.Execute(t.Context(), Call{Plugin: p, Inline: true, Owner: OwnerUser, UserID: 7, Arguments: json.RawMessage(`{}`)})
		if err != nil || len(res.Output) < 200<<10 {
			t.Fatalf("%v: output of %d bytes, want the whole answer", err, len(res.Output))
		}
	})
}

// Review 69: a token endpoint answering 307 or 308 with another origin
// got the client secret sent there in the re-posted form (auth_style
// params; net/http re-sends a body on those codes). The redirect is not
// followed; the call fails naming why, and the other host gets nothing.
func TestTokenRequestBodyStaysOnItsOrigin(t *testing.T) {
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			other := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"access_token":%q,"token_type":"bearer","expires_in":3600}`, secretToken)
			})
			tokenServer := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/token", code)
			})
			api := newUpstream(t, nil)
			p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object"},
			  "execution":{"method":"GET","base_url":"%s/x","retry":{"max_attempts":1}},
			  "auth_config":{"type":"oauth2","oauth2":{"token_url":"`+tokenServer.URL+`/token","client_id":"CID","client_secret":"CSECRET","auth_style":"params"}}}`, api.URL)
			h := newHarness(t)
			res, _ := h.call(t, p, `{}`, map[string]string{"CID": "client-id-1", "CSECRET": "client-secret-1"})
			if hits := tokenServer.Hits(); len(hits) != 1 || !strings.Contains(string(hits[0].Body), "client-secret-1") {
				t.Fatalf("the token endpoint did not get the secret: the test proves nothing: %v", hits)
			}
			if hits := other.Hits(); len(hits) > 0 {
				t.Fatalf("the other origin got %s %s", hits[0].Method, hits[0].Body)
			}
			if res.OK || res.Error.Code != CodeAuthError || !strings.Contains(res.Error.Message, "another origin") {
				t.Fatalf("%s", resultJSON(t, res))
			}
			if len(api.Hits()) > 0 {
				t.Fatal("the API was called without a token")
			}
		})
	}
}

// Review 69: a plugin's body (the arguments, and the catalog's fixed
// params, which may hold a value pasted there) does not follow a 307 or
// 308 to another origin, as its static headers do not, and the refusal
// is not retried; a same-origin 307 keeps it, and a 303 to another
// origin is followed without one.
func TestRequestBodyStaysOnItsOrigin(t *testing.T) {
	other := newUpstream(t, nil)
	first := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/landed", http.StatusTemporaryRedirect)
		case "/other":
			http.Redirect(w, r, other.URL+"/landing", http.StatusPermanentRedirect)
		case "/see-other":
			http.Redirect(w, r, other.URL+"/landing", http.StatusSeeOther)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}
	})
	tests := []struct {
		path, method, body string // what the other host got ("" nothing)
		ok                 bool
	}{
		{"/same", "", "", true},
		{"/other", "", "", false},
		{"/see-other", http.MethodGet, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			before := len(other.Hits())
			p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
			  "execution":{"method":"PUT","base_url":"%s`+tt.path+`","retry":{"max_attempts":3,"backoff_ms":1}}}`, first.URL)
			res, _ := newHarness(t).call(t, p, `{"q":"private words"}`, nil)
			if res.OK != tt.ok {
				t.Fatalf("%s", resultJSON(t, res))
			}
			// Not retried either: every attempt would be refused alike.
			if !tt.ok && (res.Error.Code != CodeTransportError || !strings.Contains(res.Error.Message, "another origin") || res.Attempts != 1) {
				t.Fatalf("%s", resultJSON(t, res))
			}
			hits := other.Hits()[before:]
			switch {
			case tt.method == "" && len(hits) > 0:
				t.Fatalf("the other origin got %s %s", hits[0].Method, hits[0].Body)
			case tt.method != "" && (len(hits) != 1 || hits[0].Method != tt.method || len(hits[0].Body) > 0):
				t.Fatalf("the other origin got %v", hits)
			}
		})
	}
	if hits := first.Hits(); hits[1].RequestURI != "/landed" || string(hits[1].Body) != `{"q":"private words"}` {
		t.Fatalf("the same-origin 307 lost the body: %v", hits[1])
	}
}

// An object sent in form style, exploded (OpenAPI's default for a query
// object, RFC 6570 {?x*}: ?R=100&G=200, the argument's name dropped), has
// its keys sent as parameters of their own. A key naming another
// parameter of the same query or form body would set or shadow it (a
// fixed param, another argument, the tool's own query): a value escaping
// its parameter. Such a call is refused, naming neither the key nor a
// parameter the tool sets; an object that collides with nothing, and a
// deepObject (whose keys stay under its name), are sent.
func TestExplodedObjectKeysStayInTheirParameter(t *testing.T) {
	up := newUpstream(t, nil)
	const doc = `{"name":"t","description":"d",
	  "parameters":{"type":"object","properties":{"filter":{"type":"object","additionalProperties":true},
	    "deep":{"type":"object","additionalProperties":true},"q":{"type":"string"},"version":{"const":"2"},
	    "form":{"type":"object","additionalProperties":true},"name":{"type":"string"},"json":{"type":"object","additionalProperties":true}}},
	  "fixed_params":{"version":"2"},
	  "execution":{"method":"METHOD","base_url":"%s/search","query":{"tenant":"acme"},"content_type":"CT",
	    "param_placement":{"filter":"query","q":"query","version":"query","deep":{"in":"query","style":"deepObject","explode":true},
	      "form":{"in":"body","style":"form","explode":true},"name":"body","json":{"in":"query","content_type":"application/json"}}}}`
	get := mustPlugin(t, strings.NewReplacer("METHOD", "GET", "CT", "application/json").Replace(doc), up.URL)
	post := mustPlugin(t, strings.NewReplacer("METHOD", "POST", "CT", "application/x-www-form-urlencoded").Replace(doc), up.URL)
	postJSON := mustPlugin(t, strings.NewReplacer("METHOD", "POST", "CT", "application/json").Replace(doc), up.URL)
	tests := []struct {
		name  string
		p     *plugins.Plugin
		args  string
		sent  string // the request URI, or the body for post; "" for refused
		owner string
	}{
		{"no collision", get, `{"filter":{"color":"red"},"q":"x"}`, "/search?tenant=acme&color=red&q=x&version=2", ""},
		{"a deepObject keeps its keys under its name", get, `{"deep":{"version":"1"}}`, "/search?tenant=acme&deep[version]=1&version=2", ""},
		{"a parameter given as content is one value", get, `{"json":{"q":"y"},"q":"x"}`, "/search?tenant=acme&json=%7B%22q%22%3A%22y%22%7D&q=x&version=2", ""},
		{"over a fixed param", get, `{"filter":{"version":"1"}}`, "", "the argument version sends"},
		{"over another argument", get, `{"filter":{"q":"y"},"q":"x"}`, "", "the argument q sends"},
		{"over the tool's own query", get, `{"filter":{"tenant":"evil"}}`, "", "the tool sets itself"},
		{"over a deepObject's names", get, `{"filter":{"deep[x]":"1"},"deep":{"x":"2"}}`, "", "the argument deep sends"},
		{"in a form body", post, `{"form":{"name":"evil"},"name":"ann"}`, "", "the argument name sends"},
		{"a form body without collision", post, `{"form":{"a":"1"},"name":"ann"}`, "a=1&name=ann", ""},
		// A JSON body has no style: the object stays one field.
		{"a JSON body", postJSON, `{"form":{"name":"x"},"name":"ann"}`, `{"form":{"name":"x"},"name":"ann"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(up.Hits())
			res, err := newHarness(t).call(t, tt.p, tt.args, nil)
			if tt.sent != "" {
				if err != nil || !res.OK {
					t.Fatalf("%v %s", err, resultJSON(t, res))
				}
				hits := up.Hits()
				if len(hits) != before+1 {
					t.Fatalf("upstream received %d requests, want 1", len(hits)-before)
				}
				h := hits[before]
				got := h.RequestURI
				if tt.p != get {
					got = string(h.Body)
				}
				if got != tt.sent {
					t.Fatalf("sent %s, want %s", got, tt.sent)
				}
				return
			}
			var refused *RefusedError
			if !errors.As(err, &refused) || res.Error.Code != CodeInvalidArguments || len(up.Hits()) != before ||
				!strings.Contains(res.Error.Message, tt.owner) || strings.Contains(res.Error.Message, "evil") || strings.Contains(res.Error.Message, "tenant") {
				t.Fatalf("want invalid_arguments naming %q, nothing sent: %v %s %v", tt.owner, err, resultJSON(t, res), up.Hits()[before:])
			}
		})
	}
}

// A cookie argument named like the API key's cookie (an OpenAPI document
// declaring both, or an inline plugin) must not shadow it: servers read
// the first of two cookies of one name, and the LLM's came first
// (sid=chosen; sid=secret). The credential's cookie replaces it, as the
// credential's query parameter replaces an argument of its name.
func TestCredentialCookieNotShadowed(t *testing.T) {
	up := newUpstream(t, nil)
	p := mustPlugin(t, `{"name":"t","description":"d",
	  "parameters":{"type":"object","properties":{"sid":{"type":"string"},"lang":{"type":"string"},"key":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/c","param_placement":{"sid":"cookie","lang":"cookie","key":"query"}},
	  "auth_config":{"type":"api_key","mapping":[{"source":"S","target":"sid","location":"cookie"},{"source":"K","target":"key","location":"query"}]}}`, up.URL)
	res, err := newHarness(t).call(t, p, `{"sid":"chosen","lang":"en","key":"chosen"}`, map[string]string{"S": "secret-session-1", "K": "secret-key-0001"})
	if err != nil || !res.OK {
		t.Fatalf("%v %s", err, resultJSON(t, res))
	}
	got := up.last(t)
	if c := got.Header.Get("Cookie"); c != "lang=en; sid=secret-session-1" {
		t.Errorf("Cookie: %q, want lang=en; sid=secret-session-1", c)
	}
	if got.RequestURI != "/c?key=secret-key-0001" {
		t.Errorf("sent %s, want /c?key=secret-key-0001", got.RequestURI)
	}
}

// An exploded object's keys are compared with the tool's parameters as
// servers read names, not byte for byte (review81): ASP.NET reads a query
// name in any case and the first of two (API_KEY=evil before the API
// key's api_key=secret), PHP turns '.' and ' ' of a name into '_' and
// reads the last (api.version=1 after the fixed api_version=2; it also
// drops leading spaces and what follows a NUL), and PHP's
// $_REQUEST, Laravel's input() and Rack's params merge a form body over
// the query (a body field api_key over the query's credential).
func TestExplodedKeysComparedAsServersReadThem(t *testing.T) {
	up := newUpstream(t, nil)
	const doc = `{"name":"t","description":"d",
	  "parameters":{"type":"object","properties":{"filter":{"type":"object","additionalProperties":true},
	    "form":{"type":"object","additionalProperties":true},"body":{"type":"object","additionalProperties":true}}},
	  "execution":{"method":"POST","base_url":"%s/s","query":{"api_version":"2"},"content_type":"application/x-www-form-urlencoded",
	    "param_placement":{"filter":"query","form":{"in":"body","style":"form","explode":true},"body":{"in":"body","name":"$"}}},
	  "auth_config":{"type":"api_key","mapping":[{"source":"K","target":"api_key","location":"query"}]}}`
	p := mustPlugin(t, doc, up.URL)
	creds := map[string]string{"K": "secret-key-0001"}
	tests := []struct {
		name, args string
		sent       string // the body sent; "" for refused
	}{
		{"no collision", `{"filter":{"color":"red"},"form":{"size":"9"}}`, "size=9"},
		{"a whole body without collision", `{"body":{"size":"9"}}`, "size=9"},
		{"the credential's name in capitals", `{"filter":{"API_KEY":"evil"}}`, ""},
		{"the fixed param's name with a dot", `{"filter":{"api.version":"1"}}`, ""},
		{"the fixed param's name with a space", `{"filter":{"api version":"1"}}`, ""},
		{"the credential's name after spaces", `{"filter":{"  api_key":"evil"}}`, ""},
		{"the credential's name before a NUL", `{"filter":{"api_key\u0000x":"evil"}}`, ""},
		{"the credential's name in a form body", `{"form":{"api_key":"evil"}}`, ""},
		{"the fixed param's name in a form body", `{"form":{"Api_Version":"1"}}`, ""},
		{"the credential's name as a whole body's key", `{"body":{"api_key":"evil"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(up.Hits())
			res, err := newHarness(t).call(t, p, tt.args, creds)
			if tt.sent != "" {
				if err != nil || !res.OK {
					t.Fatalf("%v %s", err, resultJSON(t, res))
				}
				if got := string(up.Hits()[before].Body); got != tt.sent {
					t.Fatalf("sent %s, want %s", got, tt.sent)
				}
				return
			}
			var refused *RefusedError
			if !errors.As(err, &refused) || res.Error.Code != CodeInvalidArguments || len(up.Hits()) != before ||
				!strings.Contains(res.Error.Message, "the tool sets itself") || strings.Contains(res.Error.Message, "evil") || strings.Contains(res.Error.Message, "api") {
				t.Fatalf("want invalid_arguments, nothing sent: %v %s %v", err, resultJSON(t, res), up.Hits()[before:])
			}
		})
	}
}
