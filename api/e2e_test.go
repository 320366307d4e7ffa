package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/questions"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

const (
	adminToken   = "admin-secret-token"
	serviceToken = "service-secret-token"
	qccKey       = "sk-qcc-0123456789abcdef"
	qccSecret    = "qcc-secret-fedcba9876543210"
)

// upstream records what a stand-in API received, as raw as the server
// sees it.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	method, uri string
	header      http.Header
	body        []byte
}

func newUpstream(t testing.TB, h http.HandlerFunc) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, recorded{r.Method, r.RequestURI, r.Header.Clone(), body})
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) received() []recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]recorded(nil), u.reqs...)
}

// env is one engine on one database, served over HTTP.
type env struct {
	t     testing.TB
	st    *store.Store
	url   string
	creds *auth.CredentialService
	keys  *auth.Keyring
	rec   *engine.Recorder
	logs  *api.SyncBuffer
	// changes is the server's watcher, polled only by the API's own writes
	// and by tests.
	changes *store.Watcher
	// handler is what url serves, unchecked against the description: the
	// allocation counts call it in-process to measure the engine alone.
	handler http.Handler
}

func newEnv(t testing.TB, st *store.Store, opts ...func(*api.Server)) *env {
	key := make([]byte, 32)
	rand.Read(key)
	kr, err := auth.ParseKeyring(base64.StdEncoding.EncodeToString(key), "")
	if err != nil {
		t.Fatal(err)
	}
	logs := &api.SyncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	creds := auth.NewCredentialService(st, kr)
	rec := engine.NewRecorder(api.StoreSink{Store: st}, engine.RecorderOptions{Logger: log})
	// Closed (its records flushed) before st is: a recorder left running
	// retries the records a closed store refuses every 200 ms, for the
	// rest of the package's tests, and its work is counted as theirs
	// (TestTracingOffAllocs counts the whole process's allocations).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rec.Close(ctx)
	})
	// Wired as serve wires it, the watcher polled by hand (writes through
	// the API poll it themselves).
	changes := store.NewWatcher(st, time.Hour, log)
	changes.Poll(context.Background())
	creds.Changes = changes
	// The catalogs follow the server's watcher, whichever an option gives
	// it (a test polling its own by hand), as serve wires them to one.
	var srv *api.Server
	follow := versionsFunc(func() store.Versions { return srv.Changes.Current() })
	served := catalog.New(st, follow, log)
	rules := auth.NewCatalog(st, served, follow)
	creds.Identifiers = rules
	ex := engine.NewExecutor(egresstest.Client(t))
	ex.Credentials, ex.Recorder, ex.Logger, ex.Catalog = creds, rec, log, rules
	ex.Answers = &questions.Inbox{Store: st}
	reg := prometheus.NewRegistry()
	var err2 error
	if ex.Metrics, err2 = engine.NewMetrics(reg); err2 != nil {
		t.Fatal(err2)
	}
	srv = &api.Server{Store: st, Catalog: served, Creds: creds, Executor: ex, AdminToken: adminToken, ServiceToken: serviceToken,
		Registry: reg, Logger: log, HTTPClient: egresstest.Client(t), Changes: changes}
	for _, o := range opts {
		o(srv)
	}
	h := srv.Handler()
	hs := httptest.NewServer(api.CheckedHandler(t, h))
	t.Cleanup(hs.Close)
	return &env{t: t, st: st, url: hs.URL, creds: creds, keys: kr, rec: rec, logs: logs, changes: changes, handler: h}
}

// versionsFunc is a function as the catalogs' Versions.
type versionsFunc func() store.Versions

func (f versionsFunc) Current() store.Versions { return f() }

// addLookup adds the catalog plugin "lookup" (GET url?q=, the credential
// API_KEY sent as X-Api-Key), stores key as user 7's API_KEY and returns
// a per-user token of user 7, the change counters polled.
func (e *env) addLookup(url, key string) string {
	e.t.Helper()
	ctx := context.Background()
	plugin := `{"name":"lookup","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]},
	"execution":{"method":"GET","base_url":"` + url + `","param_placement":"query"},
	"auth_config":{"type":"api_key","mapping":[{"source":"API_KEY","target":"X-Api-Key","location":"header"}]}}`
	if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		e.t.Fatalf("add plugin: %d %v", code, body)
	}
	if err := e.creds.Set(ctx, 7, "API_KEY", key, "test"); err != nil {
		e.t.Fatal(err)
	}
	token, _, err := api.IssueToken(ctx, e.st, 7, "lookup", 0, "")
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.changes.Poll(ctx); err != nil {
		e.t.Fatal(err)
	}
	return token
}

func (e *env) do(method, path, token string, body any) (int, map[string]any) {
	e.t.Helper()
	return api.DoJSON(e.t, e.url, method, path, token, body)
}

// seedPlugin is seed 001's example, comments and all, aimed at url.
func seedPlugin(t *testing.T, url string) string {
	data, err := os.ReadFile("../plugins/testdata/seed001.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(data), "http://api.qichacha.com", url, 1)
}

// TestFirstBlindExecution is the foundation's end-to-end path: the seed's
// plugin added over HTTP, the user's credentials stored encrypted, one
// blind call reaching a real server with the decrypted credentials.
func TestFirstBlindExecution(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"Status":"200","Result":[{"Name":"北京字节跳动科技有限公司","OperName":"张利东"}]}`)
		})
		e := newEnv(t, st)

		if code, body := e.do("POST", "/v1/plugins", adminToken, seedPlugin(t, up.URL)); code != http.StatusCreated {
			t.Fatalf("add plugin: %d %v", code, body)
		}
		for k, v := range map[string]string{"QCC_KEY": qccKey, "QCC_SECRET": qccSecret} {
			if code, body := e.do("PUT", "/v1/credentials/7/"+k, adminToken, map[string]string{"value": v}); code != http.StatusNoContent {
				t.Fatalf("store %s: %d %v", k, code, body)
			}
		}

		code, res := e.do("POST", "/v1/execute", serviceToken, map[string]any{
			"name": "search_company_basic", "arguments": map[string]any{"keyword": "字节跳动"}, "user_id": "7",
		})
		if code != http.StatusOK || res["ok"] != true {
			t.Fatalf("execute: %d %v", code, res)
		}
		got := up.received()
		if len(got) != 1 {
			t.Fatalf("upstream received %d requests", len(got))
		}
		r := got[0]
		if want := "/ECIV4/Search?keyword=%E5%AD%97%E8%8A%82%E8%B7%B3%E5%8A%A8"; r.method != "GET" || r.uri != want {
			t.Fatalf("upstream got %s %s, want GET %s", r.method, r.uri, want)
		}
		if r.header.Get("Token") != qccKey || r.header.Get("Timespan") != qccSecret {
			t.Fatalf("credentials not mapped: Token=%q Timespan=%q", r.header.Get("Token"), r.header.Get("Timespan"))
		}
		out, _ := res["output"].(map[string]any)
		if out["Status"] != "200" {
			t.Fatalf("output = %v, want the server's JSON", res["output"])
		}
		for _, k := range []string{"ok", "http_status", "output", "error", "execution_id", "latency_ms"} {
			if _, ok := res[k]; !ok {
				t.Errorf("envelope lacks %q: %v", k, res)
			}
		}

		// A user without the credentials: refused before anything is sent.
		code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{
			"name": "search_company_basic", "arguments": map[string]any{"keyword": "x"}, "user_id": 8,
		})
		if code != http.StatusUnprocessableEntity || !strings.Contains(errMessage(body), "QCC_KEY") {
			t.Fatalf("missing credentials: %d %v", code, body)
		}
		if n := len(up.received()); n != 1 {
			t.Fatalf("upstream received %d requests; a refused call must send nothing", n)
		}

		// Invalid arguments: 422 naming the field, nothing sent.
		code, body = e.do("POST", "/v1/execute", serviceToken, map[string]any{
			"name": "search_company_basic", "arguments": map[string]any{"keyword": 5}, "user_id": 7,
		})
		if code != http.StatusUnprocessableEntity || !strings.Contains(errMessage(body), "keyword") {
			t.Fatalf("invalid arguments: %d %v", code, body)
		}
		if n := len(up.received()); n != 1 {
			t.Fatalf("upstream received %d requests after an invalid call", n)
		}

		// The database holds no plaintext credential.
		rows, err := st.DB().QueryContext(context.Background(), "SELECT credential_value FROM sys_user_credential")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var v string
			rows.Scan(&v)
			n++
			if strings.Contains(v, qccKey) || strings.Contains(v, qccSecret) || !strings.HasPrefix(v, "v1:") {
				t.Fatalf("stored credential is not ciphertext: %q", v)
			}
		}
		rows.Close()
		if n != 2 {
			t.Fatalf("%d credential rows, want 2", n)
		}

		// Prometheus counts the calls per plugin and outcome.
		req, _ := http.NewRequest("GET", e.url+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		mresp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(mresp.Body)
		mresp.Body.Close()
		for _, want := range []string{
			`blindexec_tool_calls_total{outcome="ok",plugin="search_company_basic"} 1`,
			`blindexec_tool_calls_total{outcome="missing_credentials",plugin="search_company_basic"} 1`,
			`blindexec_tool_call_duration_seconds_bucket{outcome="ok",plugin="search_company_basic",le=`,
		} {
			if !strings.Contains(string(metrics), want) {
				t.Fatalf("/metrics lacks %s:\n%s", want, metrics)
			}
		}

		// Execution records: flushed, listed, secret-free.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.rec.Close(ctx); err != nil {
			t.Fatal(err)
		}
		code, list := e.do("GET", "/v1/executions?plugin=search_company_basic", adminToken, nil)
		execs, _ := list["executions"].([]any)
		if code != http.StatusOK || len(execs) != 3 {
			t.Fatalf("executions: %d %v", code, list)
		}
		for q, n := range map[string]int{
			"user_id=7": 2, "user_id=8": 1,
			"since=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339): 0,
			"until=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339): 3,
		} {
			_, l := e.do("GET", "/v1/executions?"+q, adminToken, nil)
			if got := len(l["executions"].([]any)); got != n {
				t.Errorf("executions?%s: %d, want %d", q, got, n)
			}
		}
		raw, _ := json.Marshal(list)
		for _, s := range []string{qccKey, qccSecret} {
			if bytes.Contains(raw, []byte(s)) || strings.Contains(e.logs.String(), s) {
				t.Fatalf("a credential leaked into records or logs")
			}
		}
	})
}

func errMessage(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	b, _ := json.Marshal(e)
	return string(b)
}

func TestTokens(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
		e := newEnv(t, st)
		if code, _ := e.do("POST", "/v1/plugins", adminToken, seedPlugin(t, up.URL)); code != http.StatusCreated {
			t.Fatal(code)
		}
		code, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "laptop"})
		if code != http.StatusCreated {
			t.Fatalf("create token: %d %v", code, tok)
		}
		user := tok["token"].(string)

		tests := []struct {
			name, method, path, token string
			body                      any
			want                      int
		}{
			{"health needs no token", "GET", "/healthz", "", nil, 200},
			{"ready needs no token", "GET", "/readyz", "", nil, 200},
			{"no token", "GET", "/v1/tools", "", nil, 401},
			{"wrong token", "GET", "/v1/tools", "nope", nil, 401},
			{"user lists tools", "GET", "/v1/tools", user, nil, 200},
			{"user may not add plugins", "POST", "/v1/plugins", user, seedPlugin(t, up.URL), 403},
			{"service may not add plugins", "POST", "/v1/plugins", serviceToken, seedPlugin(t, up.URL), 403},
			{"user sets own credential", "PUT", "/v1/credentials/7/QCC_KEY", user, map[string]string{"value": qccKey}, 204},
			{"user may not touch another's", "PUT", "/v1/credentials/8/QCC_KEY", user, map[string]string{"value": "x"}, 403},
			{"user acts only for itself", "POST", "/v1/execute", user, map[string]any{"name": "search_company_basic", "arguments": map[string]any{"keyword": "x"}, "user_id": 8}, 403},
			{"user runs only for itself", "POST", "/v1/runs", user, map[string]any{"user_id": 8, "messages": []any{}}, 403},
			{"no LLM configured", "POST", "/v1/runs", user, map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}, 503},
			{"a payload's fault before the LLM's", "POST", "/v1/runs", user, map[string]any{"messages": []any{}}, 400},
			{"metrics need admin", "GET", "/metrics", user, nil, 403},
			{"admin reads metrics", "GET", "/metrics", adminToken, nil, 200},
			{"malformed body names the field", "POST", "/v1/execute", serviceToken, `{"name": 5}`, 400},
			{"unknown plugin", "POST", "/v1/execute", serviceToken, map[string]any{"name": "nope"}, 404},
			// A token with a space is the whole field: the scheme is
			// case-insensitive (RFC 9110 §11.1; newcomer80: "bearer x"
			// was 401), the token compared exactly.
			{"the scheme in lower case", "GET", "/v1/tools", "bearer " + serviceToken, nil, 200},
			{"the scheme in upper case", "GET", "/v1/tools", "BEARER " + user, nil, 200},
			{"the token in another case", "GET", "/v1/tools", "bearer " + strings.ToUpper(serviceToken), nil, 401},
			{"another scheme", "GET", "/v1/tools", "Basic " + serviceToken, nil, 401},
			{"the metrics' scheme in lower case", "GET", "/metrics", "bearer " + adminToken, nil, 200},
		}
		for _, tt := range tests {
			req, _ := http.NewRequest(tt.method, e.url+tt.path, nil)
			if tt.body != nil {
				var b []byte
				if s, ok := tt.body.(string); ok {
					b = []byte(s)
				} else {
					b, _ = json.Marshal(tt.body)
				}
				req.Body = io.NopCloser(bytes.NewReader(b))
			}
			switch {
			case strings.Contains(tt.token, " "):
				req.Header.Set("Authorization", tt.token)
			case tt.token != "":
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.want)
			}
		}
		// Revoked tokens stop working.
		id := int64(tok["token_id"].(float64))
		if code, _ := e.do("DELETE", "/v1/tokens/"+itoa(id), adminToken, nil); code != 204 {
			t.Fatalf("revoke: %d", code)
		}
		if code, _ := e.do("GET", "/v1/tools", user, nil); code != 401 {
			t.Fatalf("revoked token still accepted: %d", code)
		}
	})
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestImportOpenAPIRoute(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		doc := `{"openapi":"3.0.3","info":{"title":"Pets","version":"1"},"paths":{
			"/pets":{"get":{"operationId":"listPets","parameters":[{"name":"limit","in":"query","schema":{"type":"integer"}}],"responses":{"200":{"description":"ok"}}}},
			"/pets/{id}":{"delete":{"operationId":"deletePet","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"204":{"description":"gone"}}}}}}`
		var hits []string
		var mu sync.Mutex
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/openapi.json" {
				io.WriteString(w, doc)
				return
			}
			mu.Lock()
			hits = append(hits, r.Method+" "+r.RequestURI)
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		})
		e := newEnv(t, st)
		// The document has no servers: base_url is required, and named.
		code, body := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": up.URL + "/openapi.json"})
		if code != http.StatusBadRequest || !strings.Contains(errMessage(body), "base_url") {
			t.Fatalf("no server: %d %v", code, body)
		}
		code, body = e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": up.URL + "/openapi.json", "base_url": up.URL + "/api", "dry_run": true})
		if code != http.StatusOK || body["dry_run"] != true || len(body["added"].([]any)) != 2 {
			t.Fatalf("dry run: %d %v", code, body)
		}
		if code, list := e.do("GET", "/v1/plugins", adminToken, nil); code != 200 || len(list["plugins"].([]any)) != 0 {
			t.Fatalf("a dry run wrote: %v", list)
		}
		code, body = e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": up.URL + "/openapi.json", "base_url": up.URL + "/api"})
		if code != http.StatusOK || len(body["added"].([]any)) != 2 {
			t.Fatalf("import: %d %v", code, body)
		}
		// The imported plugin works, and a 204 is a success.
		code, res := e.do("POST", "/v1/execute", adminToken, map[string]any{"name": "deletePet", "arguments": map[string]any{"id": "a/b"}})
		if code != http.StatusOK || res["ok"] != true || res["http_status"] != float64(204) {
			t.Fatalf("execute imported: %d %v", code, res)
		}
		if len(hits) != 1 || hits[0] != "DELETE /api/pets/a%2Fb" {
			t.Fatalf("upstream got %v", hits)
		}
		// Inline (a YAML string), and an upload (the body itself).
		yamlDoc := "openapi: 3.0.3\ninfo: {title: Inline, version: '1'}\nservers: [{url: 'https://inline.example'}]\npaths:\n  /x:\n    get: {operationId: getX, responses: {'200': {description: ok}}}\n"
		code, body = e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"document": yamlDoc, "prefix": "inl"})
		if code != http.StatusOK || len(body["added"].([]any)) != 1 || body["added"].([]any)[0] != "inl_getX" {
			t.Fatalf("inline: %d %v", code, body)
		}
		req, _ := http.NewRequest("POST", e.url+"/v1/plugins/import/openapi?prefix=up&location=upload.yaml", strings.NewReader(yamlDoc))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/yaml")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var up2 map[string]any
		json.NewDecoder(resp.Body).Decode(&up2)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(up2["added"].([]any)) != 1 || up2["added"].([]any)[0] != "up_getX" {
			t.Fatalf("upload: %d %v", resp.StatusCode, up2)
		}
		// curl -d sends its JSON with a form's content type: the request
		// naming url is read as the JSON request it is, not as an upload
		// (which is refused as no OpenAPI document); a JSON document so sent
		// is still an upload. (Unchecked: the description names no form
		// type, on this route or any other that reads such a body as JSON.)
		for _, tc := range []struct {
			body string
			want func(map[string]any) bool
		}{
			{`{"url": "` + up.URL + `/openapi.json", "base_url": "` + up.URL + `/api", "dry_run": true}`,
				func(got map[string]any) bool { return got["up_to_date"] == true }}, // imported above
			{`{"openapi": "3.0.3", "info": {"title": "Form", "version": "1"}, "servers": [{"url": "https://form.example"}],
			  "paths": {"/y": {"get": {"operationId": "getY", "responses": {"200": {"description": "ok"}}}}}}`,
				func(got map[string]any) bool {
					added, _ := got["added"].([]any)
					return slices.Equal(added, []any{"getY"})
				}},
		} {
			req := httptest.NewRequest("POST", "/v1/plugins/import/openapi?dry_run=true", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+adminToken)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, req)
			var got map[string]any
			json.Unmarshal(w.Body.Bytes(), &got)
			if w.Code != http.StatusOK || got["dry_run"] != true || !tc.want(got) {
				t.Errorf("a form-typed %.20s…: %d %v", tc.body, w.Code, got)
			}
		}
		// curl -d @museum.yaml sends the file without its line breaks, form
		// typed: the YAML then does not parse, and the answer says how to
		// send it (newcomer80: it said "mapping values are not allowed in
		// this context" alone).
		req = httptest.NewRequest("POST", "/v1/plugins/import/openapi?dry_run=true", strings.NewReader(strings.ReplaceAll(yamlDoc, "\n", "")))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		e.handler.ServeHTTP(w, req)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "send it with --data-binary @FILE") {
			t.Errorf("a YAML document sent by curl -d: %d %s", w.Code, w.Body)
		}
		// A document that is not one: 400 naming the problem.
		code, body = e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"document": "openapi: 3.0.3\n  bad: [indent"})
		if code != http.StatusBadRequest || !strings.Contains(errMessage(body), "line") {
			t.Fatalf("bad document: %d %v", code, body)
		}

		// Files are not a source over HTTP.
		code, _ = e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": "/etc/passwd"})
		if code != http.StatusBadRequest {
			t.Fatalf("file source over HTTP: %d", code)
		}
		if code, _ := e.do("POST", "/v1/plugins/import/openapi", serviceToken, map[string]any{"url": up.URL + "/openapi.json"}); code != http.StatusForbidden {
			t.Fatalf("import needs the admin token: %d", code)
		}
	})
}

// TestCachesFollowTheCounter: the runtime path reads the catalog, tokens
// and credentials from memory; writes through the API apply at once; rows
// changed behind the engine's back (RuoYi with plain SQL) once the change
// counters are polled, and not before.
func TestCachesFollowTheCounter(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
		e := newEnv(t, st)
		changes := e.changes
		if code, _ := e.do("POST", "/v1/plugins", adminToken, seedPlugin(t, up.URL)); code != http.StatusCreated {
			t.Fatal(code)
		}
		code, created := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "t"})
		if code != http.StatusCreated {
			t.Fatalf("create token: %d %v", code, created)
		}
		tok := created["token"].(string)
		for _, k := range []string{"QCC_KEY", "QCC_SECRET"} {
			if code, body := e.do("PUT", "/v1/credentials/7/"+k, serviceToken, map[string]string{"value": "v-" + k}); code != http.StatusNoContent && code != http.StatusOK {
				t.Fatalf("put credential: %d %v", code, body)
			}
		}
		exec := func() (int, string) {
			code, body := e.do("POST", "/v1/execute", tok, map[string]any{"name": "search_company_basic",
				"arguments": map[string]any{"keyword": "x"}})
			return code, errMessage(body)
		}
		sql := func(q string) {
			if _, err := st.DB().ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if code, msg := exec(); code != http.StatusOK {
			t.Fatalf("execute: %d %s", code, msg)
		}
		if code, _ := e.do("PATCH", "/v1/plugins/search_company_basic", adminToken, map[string]string{"status": "1"}); code != 200 {
			t.Fatal("disable")
		}
		if code, _ := exec(); code != http.StatusConflict {
			t.Fatalf("a plugin disabled through the API must be refused at once: %d", code)
		}
		e.do("PATCH", "/v1/plugins/search_company_basic", adminToken, map[string]string{"status": "0"})
		if code, _ := exec(); code != http.StatusOK {
			t.Fatalf("re-enabled: %d", code)
		}

		// Behind the engine's back: served from memory until the poll.
		sql("UPDATE sys_ai_plugin SET status = '1' WHERE name = 'search_company_basic'")
		if code, _ := exec(); code != http.StatusOK {
			t.Fatalf("before the poll the cached plugin serves: %d", code)
		}
		changes.Poll(ctx)
		if code, _ := exec(); code != http.StatusConflict {
			t.Fatalf("after the poll the row's status applies: %d", code)
		}
		sql("UPDATE sys_ai_plugin SET status = '0' WHERE name = 'search_company_basic'")
		changes.Poll(ctx)

		sql("DELETE FROM sys_user_credential WHERE user_id = 7 AND credential_key = 'QCC_SECRET'")
		if code, _ := exec(); code != http.StatusOK {
			t.Fatalf("before the poll the cached credential serves: %d", code)
		}
		changes.Poll(ctx)
		if code, msg := exec(); code == http.StatusOK || !strings.Contains(msg, "QCC_SECRET") {
			t.Fatalf("after the poll a credential deleted by SQL is gone: %d %s", code, msg)
		}

		sql("DELETE FROM sys_ai_token")
		if code, _ := exec(); code == http.StatusUnauthorized {
			t.Fatal("before the poll the cached token still authenticates")
		}
		changes.Poll(ctx)
		if code, _ := exec(); code != http.StatusUnauthorized {
			t.Fatalf("after the poll a token deleted by SQL is refused: %d", code)
		}
	})
}

// A plugin's status is "0" or "1", strings as RuoYi's char column holds
// them: a number, another string or none says what is expected and what
// came.
func TestPatchPluginStatusSaysWhatIsExpected(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite))
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	if code, _ := e.do("POST", "/v1/plugins", adminToken, seedPlugin(t, up.URL)); code != http.StatusCreated {
		t.Fatal(code)
	}
	for _, tc := range []struct {
		body any
		want string
	}{
		{map[string]any{"status": 1}, `status: expected "0" (enabled) or "1" (disabled), a string; got 1`},
		{map[string]any{"status": "2"}, `status: expected "0" (enabled) or "1" (disabled), a string; got "2"`},
		{map[string]any{"enabled": true}, `status: expected "0" (enabled) or "1" (disabled), a string; got nothing`},
	} {
		code, out := e.do("PATCH", "/v1/plugins/search_company_basic", adminToken, tc.body)
		errObj, _ := out["error"].(map[string]any)
		if code != http.StatusBadRequest || errObj["message"] != tc.want {
			t.Errorf("%v: %d %v, want 400 %q", tc.body, code, out, tc.want)
		}
	}
	if code, out := e.do("PATCH", "/v1/plugins/search_company_basic", adminToken, map[string]any{"status": "1"}); code != http.StatusOK || out["status"] != "1" {
		t.Errorf("disable: %d %v", code, out)
	}
}
