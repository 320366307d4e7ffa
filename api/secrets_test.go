package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// Secrets of the echo test: slashes (PHP writes \/), '+', '=', non-ASCII
// (\u-escaped by PHP and Java), a surrogate pair.
var echoSecrets = map[string]string{
	"QCC_KEY":    "sk/live/0123456789abcdef",
	"QCC_SECRET": "qcc+secret/é中=fedcba😀",
	"PASS":       "hunter2/pässwörd",
	"CSECRET":    "cs/secret+é=1",
	"FAIL_KEY":   "fk/0123456789",
}

// Identifiers of the echo test: data of their own.
var echoIdentifiers = map[string]string{"USER": "approver", "CID": "client-app"}

// echoForms are the ways the echoing upstream writes a value inside a
// JSON string: as is, as PHP does (\/ and \u for non-ASCII), all \u in
// lower and upper case, URL-escaped, in base64.
func echoForms(v string) []string {
	return []string{
		strings.ReplaceAll(v, `"`, `\"`),
		phpEscape(v),
		allEscaped(v, "%04x"),
		allEscaped(v, "%04X"),
		url.QueryEscape(v),
		base64.StdEncoding.EncodeToString([]byte(v)),
		base64.RawURLEncoding.EncodeToString([]byte(v)),
	}
}

func phpEscape(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '/':
			b.WriteString(`\/`)
		case r == '"':
			b.WriteString(`\"`)
		case r > 0x7e:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func allEscaped(v, verb string) string {
	var b strings.Builder
	for _, u := range utf16.Encode([]rune(v)) {
		b.WriteString(`\u` + fmt.Sprintf(verb, u))
	}
	return b.String()
}

// echoBody is a JSON document echoing every value in every form.
func echoBody(values ...string) []byte {
	var forms []string
	for _, v := range values {
		for _, f := range echoForms(v) {
			forms = append(forms, `"`+f+`"`)
		}
	}
	return []byte(`{"approved_by":"approver","client":"client-app","echo":[` + strings.Join(forms, ",") + `]}`)
}

// echoed is what the upstream received of credentials: headers, query,
// body, and the parts of a basic-auth pair.
func echoed(r *http.Request, body []byte) []string {
	var vs []string
	for _, h := range []string{"Token", "Timespan", "Authorization", "X-Key"} {
		if v := r.Header.Get(h); v != "" {
			vs = append(vs, v)
		}
	}
	if user, pass, ok := r.BasicAuth(); ok {
		vs = append(vs, user+":"+pass, pass)
		if p, err := url.QueryUnescape(pass); err == nil { // oauth2 escapes both parts
			vs = append(vs, p)
		}
	}
	vs = append(vs, r.URL.RawQuery)
	if len(body) > 0 {
		vs = append(vs, string(body))
		if form, err := url.ParseQuery(string(body)); err == nil && form.Get("client_secret") != "" {
			vs = append(vs, form.Get("client_secret"))
		}
	}
	return vs
}

// leaked returns the secrets found in text, read as it is and through up
// to three layers of JSON and URL unescaping, as they are, URL-escaped or
// in base64.
func leaked(text string) []string {
	layers := []string{text}
	for range 3 {
		for _, l := range layers {
			for _, next := range []string{jsonUnescape(l), percentUnescape(l)} {
				if next != l && !contains(layers, next) {
					layers = append(layers, next)
				}
			}
		}
	}
	var found []string
	for k, s := range echoSecrets {
		needles := []string{s, url.QueryEscape(s),
			strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(s)), "="),
			base64.RawURLEncoding.EncodeToString([]byte(s))}
		for _, l := range layers {
			for _, n := range needles {
				if strings.Contains(l, n) {
					found = append(found, fmt.Sprintf("%s as %q", k, n))
				}
			}
		}
	}
	return found
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// jsonUnescape decodes every JSON string escape in s, leniently.
func jsonUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch c := s[i+1]; c {
		case 'u':
			var units []uint16
			j := i
			for j+6 <= len(s) && s[j] == '\\' && s[j+1] == 'u' {
				var u uint16
				if _, err := fmt.Sscanf(s[j+2:j+6], "%04x", &u); err != nil {
					break
				}
				units = append(units, u)
				j += 6
			}
			if len(units) == 0 {
				b.WriteByte('\\')
				continue
			}
			b.WriteString(string(utf16.Decode(units)))
			i = j - 1
		case 'n':
			b.WriteByte('\n')
			i++
		case 't':
			b.WriteByte('\t')
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func percentUnescape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		var v byte
		if s[i] == '%' && i+2 < len(s) {
			if _, err := fmt.Sscanf(s[i+1:i+3], "%02x", &v); err == nil {
				b = append(b, v)
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	if !utf8.Valid(b) {
		return s
	}
	return string(b)
}

// TestEchoingUpstreamLeaksNothing: an upstream on loopback that echoes
// every credential it receives, in every JSON escape style, URL-escaped
// and in base64 — in a success, in an error, and from an oauth2 token
// endpoint — gets no secret through to the LLM, the tool output, the
// logs, the errors, the execution records or the stored run. Identifiers
// (the basic-auth username, the oauth2 client id) stay readable data.
func TestEchoingUpstreamLeaksNothing(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		var sent atomic.Int64 // the handler runs on the server's goroutines
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			status := http.StatusOK
			switch r.URL.Path {
			case "/fail", "/token":
				status = http.StatusBadRequest
			}
			w.WriteHeader(status)
			w.Write(echoBody(echoed(r, body)...))
			sent.Add(1)
		})
		llm := openaitest.New(t)
		e := newEnv(t, st, withModel(llm))

		plugin := func(name, path, auth string) string {
			return `{"name":"` + name + `","description":"` + name + `","parameters":{"type":"object","properties":{"keyword":{"type":"string"}}},
				"execution":{"method":"POST","base_url":"` + up.URL + path + `"},"auth_config":` + auth + `}`
		}
		for _, doc := range []string{
			seedPlugin(t, up.URL),
			plugin("approve", "/approve", `{"type":"basic","username":"USER","password":"PASS"}`),
			plugin("fail", "/fail", `{"type":"api_key","mapping":[{"source":"FAIL_KEY","target":"key","location":"query"},{"source":"FAIL_KEY","target":"X-Key"}]}`),
			plugin("oauth", "/api", `{"type":"oauth2","oauth2":{"token_url":"`+up.URL+`/token","client_id":"CID","client_secret":"CSECRET"}}`),
			plugin("oauth_form", "/api", `{"type":"oauth2","oauth2":{"token_url":"`+up.URL+`/token","client_id":"CID","client_secret":"CSECRET","auth_style":"params"}}`),
		} {
			if code, body := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
				t.Fatalf("add plugin: %d %v", code, body)
			}
		}
		for _, m := range []map[string]string{echoSecrets, echoIdentifiers} {
			for k, v := range m {
				if code, body := e.do("PUT", "/v1/credentials/7/"+k, adminToken, map[string]string{"value": v}); code != http.StatusNoContent {
					t.Fatalf("store %s: %d %v", k, code, body)
				}
			}
		}

		var sinks []string // everything a caller, the LLM, a log or a record shows
		tools := []string{"search_company_basic", "approve", "fail", "oauth", "oauth_form"}
		for _, name := range tools {
			code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": name, "arguments": map[string]any{"keyword": "x"}, "user_id": 7})
			if code != http.StatusOK {
				t.Fatalf("%s: %d %v", name, code, body)
			}
			sinks = append(sinks, string(mustJSON(t, body)))
			if name == "approve" {
				// The username is an identifier: data, not [REDACTED].
				out, _ := body["output"].(map[string]any)
				if out["approved_by"] != "approver" || !strings.Contains(string(mustJSON(t, out)), auth.Redacted) {
					t.Errorf("approve output: %v", body["output"])
				}
			}
			if strings.HasPrefix(name, "oauth") && !strings.Contains(errMessage(body), auth.Redacted) {
				t.Errorf("%s: the token endpoint's echo is not in the error, masked: %v", name, body)
			}
		}

		llm.Script(
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{
				{Name: "search_company_basic", Arguments: `{"keyword":"x"}`}, {Name: "approve", Arguments: `{}`},
				{Name: "fail", Arguments: `{}`}, {Name: "oauth", Arguments: `{}`}, {Name: "oauth_form", Arguments: `{}`}}},
			openaitest.Turn{Content: "done"},
		)
		payload := map[string]any{"user_id": "7", "messages": []map[string]string{{"role": "user", "content": "go"}}, "plugin_names": tools}
		code, reply := e.do("POST", "/v1/runs", serviceToken, payload)
		if code != http.StatusOK || reply["status"] != "completed" {
			t.Fatalf("run: %d %v", code, reply)
		}
		sinks = append(sinks, string(mustJSON(t, reply)))
		runID := reply["run_id"].(string)
		_, stored := e.do("GET", "/v1/runs/"+runID, serviceToken, nil)
		sinks = append(sinks, string(mustJSON(t, stored)))
		toLLM := llm.Requests()
		if len(toLLM) != 2 || !strings.Contains(string(toLLM[1]), "approver") {
			t.Fatalf("the model got %d requests; the second must carry the tool outputs, the username readable", len(toLLM))
		}
		for _, b := range toLLM {
			sinks = append(sinks, string(b))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.rec.Close(ctx)
		_, recs := e.do("GET", "/v1/executions", adminToken, nil)
		if n := len(recs["executions"].([]any)); n != 2*len(tools) {
			t.Fatalf("%d execution records, want %d", n, 2*len(tools))
		}
		sinks = append(sinks, string(mustJSON(t, recs)), e.logs.String())

		if sent := int(sent.Load()); sent != 2*len(tools) { // an oauth call reaches the token endpoint only
			t.Fatalf("the upstream echoed %d times", sent)
		}
		// The check can fail: the upstream's own answers hold the secrets.
		if len(leaked(string(echoBody(echoSecrets["QCC_KEY"])))) == 0 {
			t.Fatal("leaked() finds nothing in a raw echo")
		}
		for i, s := range sinks {
			if found := leaked(s); len(found) > 0 {
				t.Errorf("sink %d leaks %v:\n%.2000s", i, found, s)
			}
		}
	})
}
