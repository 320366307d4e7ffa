package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/store"
)

// cli runs blindexec commands in-process against one SQLite file, with a
// loopback-only guard under the egress dialer.
type cli struct {
	t       *testing.T
	db      string
	llmHTTP *http.Client // the scripted model's client, for chat
}

func newCLI(t *testing.T) *cli {
	key := make([]byte, 32)
	rand.Read(key)
	t.Setenv("BLINDEXEC_MASTER_KEY", base64.StdEncoding.EncodeToString(key))
	t.Setenv("BLINDEXEC_EGRESS_ALLOW", "127.0.0.0/8")
	t.Setenv("BLINDEXEC_LOG_LEVEL", "error")
	c := &cli{t: t, db: "sqlite:" + filepath.Join(t.TempDir(), "cli.db")}
	if code, _, errs := c.run("", "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errs)
	}
	return c
}

func (c *cli) run(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	cfg := &config{dial: egresstest.LoopbackOnly((&net.Dialer{}).DialContext), llmHTTP: c.llmHTTP}
	code = run(cfg, append([]string{"--db", c.db}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCLIEndToEnd(t *testing.T) {
	var got *http.Request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(r.Context())
		if r.URL.Query().Get("keyword") == "fail" {
			http.Error(w, `{"Status":"500"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"Status":"200"}`)
	}))
	defer up.Close()
	c := newCLI(t)

	seed, err := os.ReadFile("../../plugins/testdata/seed001.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "plugin.jsonc")
	os.WriteFile(file, []byte(strings.Replace(string(seed), "http://api.qichacha.com", up.URL, 1)), 0o600)

	if code, out, errs := c.run("", "plugin", "add", file); code != 0 || out != "added search_company_basic (required credentials: QCC_KEY, QCC_SECRET)\n" {
		t.Fatalf("plugin add: %d %q %q", code, out, errs)
	}
	if code, _, errs := c.run("", "plugin", "add", file); code != 1 || !strings.Contains(errs, "exists") {
		t.Fatalf("duplicate add: %d %q", code, errs)
	}
	if code, out, errs := c.run("", "plugin", "add", file, "--replace"); code != 0 || out != "replaced search_company_basic (required credentials: QCC_KEY, QCC_SECRET)\n" {
		t.Fatalf("plugin add --replace: %d %q %q", code, out, errs)
	}
	for k, v := range map[string]string{"QCC_KEY": "sk-cli-0123456789abcd", "QCC_SECRET": "cli-secret-0123456789"} {
		if code, _, errs := c.run(v+"\n", "cred", "set", "7", k); code != 0 {
			t.Fatalf("cred set: %d %q", code, errs)
		}
	}
	code, out, _ := c.run("", "cred", "list", "7")
	if code != 0 || strings.Contains(out, "sk-cli-0123456789abcd") || !strings.Contains(out, "****abcd") {
		t.Fatalf("cred list must mask: %d %q", code, out)
	}

	code, out, _ = c.run("", "tools")
	if code != 0 || strings.Contains(out, up.URL) || strings.Contains(out, "QCC_KEY") || !strings.Contains(out, `"search_company_basic"`) {
		t.Fatalf("tools must show only the LLM view: %d %s", code, out)
	}

	// exec: 0 for success, with the envelope on stdout.
	code, out, errs := c.run("", "exec", "search_company_basic", "--args", `{"keyword":"字节跳动"}`, "--user", "7")
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["ok"] != true {
		t.Fatalf("exec: %d %q %q", code, out, errs)
	}
	if got.Header.Get("Token") != "sk-cli-0123456789abcd" || got.URL.RawQuery != "keyword=%E5%AD%97%E8%8A%82%E8%B7%B3%E5%8A%A8" {
		t.Fatalf("upstream got %q %v", got.URL.RawQuery, got.Header)
	}
	// 1 for a tool error (a non-2xx answer), the envelope still printed.
	code, out, errs = c.run("", "exec", "search_company_basic", "--args", `{"keyword":"fail"}`, "--user", "7")
	if code != 1 || !strings.Contains(out, `"ok": false`) || !strings.Contains(errs, "http_error") {
		t.Fatalf("tool error: %d %q %q", code, out, errs)
	}
	// 1 for a refused call: missing credentials, named.
	code, _, errs = c.run("", "exec", "search_company_basic", "--args", `{"keyword":"x"}`, "--user", "8")
	if code != 1 || !strings.Contains(errs, "QCC_KEY") {
		t.Fatalf("missing credentials: %d %q", code, errs)
	}
	// --cred wins over the store.
	code, _, _ = c.run("", "exec", "search_company_basic", "--args", `{"keyword":"x"}`, "--user", "7", "--cred", "QCC_KEY=from-flag-123456")
	if code != 0 || got.Header.Get("Token") != "from-flag-123456" {
		t.Fatalf("--cred: %d Token=%q", code, got.Header.Get("Token"))
	}
	// 2 for bad usage, errors on one line.
	for _, args := range [][]string{
		{"exec", "search_company_basic", "--args", "{not json"},
		{"exec"},
		{"exec", "nope", "--args", "{}"},
		{"exec", "search_company_basic", "--cred", "novalue"},
		{"exec", "search_company_basic", "--bogus"},
		{"cred", "set", "abc", "K"},
	} {
		code, _, errs := c.run("", args...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, errs)
		}
	}
	// Arguments that are not JSON say where and what to give.
	if _, _, errs := c.run("", "exec", "search_company_basic", "--args", "keyword=x"); !strings.Contains(errs,
		`exec: --args is not valid JSON (invalid character 'k' looking for beginning of value): give the arguments as one JSON object, e.g. --args '{"keyword":"x"}'`) {
		t.Errorf("--args keyword=x: %q", errs)
	}

	if code, _, _ := c.run("", "plugin", "disable", "search_company_basic"); code != 0 {
		t.Fatal("disable")
	}
	code, _, errs = c.run("", "exec", "search_company_basic", "--args", `{"keyword":"x"}`, "--user", "7")
	if code != 1 || !strings.Contains(errs, "plugin_disabled") {
		t.Fatalf("disabled plugin: %d %q", code, errs)
	}
	if code, out, _ := c.run("", "plugin", "list"); code != 0 || !strings.Contains(out, "disabled") {
		t.Fatalf("plugin list: %q", out)
	}
	// The administrator's classification (issue 33), kept in its column.
	if code, out, errs := c.run("", "plugin", "consequential", "true", "search_company_basic"); code != 0 || !strings.Contains(out, "classified 1 plugin") {
		t.Fatalf("plugin consequential: %d %q %q", code, out, errs)
	}
	if code, out, _ := c.run("", "plugin", "get", "search_company_basic"); code != 0 || !strings.Contains(out, `"consequential": true`) {
		t.Fatalf("plugin get after consequential true: %q", out)
	}
	if code, _, _ := c.run("", "plugin", "consequential", "maybe", "search_company_basic"); code != 2 {
		t.Fatalf("plugin consequential maybe: exit %d, want 2", code)
	}
	// The permissions a user needs (issue 46), by name or tag.
	if code, out, errs := c.run("", "plugin", "perms", "--plugin", "search_company_basic", "company:info:query", "*:*:*"); code != 0 || !strings.Contains(out, "set the perms of 1 plugin(s)") {
		t.Fatalf("plugin perms: %d %q %q", code, out, errs)
	}
	if code, out, _ := c.run("", "plugin", "get", "search_company_basic"); code != 0 || !strings.Contains(out, `"company:info:query"`) {
		t.Fatalf("plugin get after perms: %q", out)
	}
	for _, args := range [][]string{
		{"--plugin", "search_company_basic", "company:info:*"}, // a partial wildcard
		{"company:info:query"},                                 // no plugin named
		{"--plugin", "search_company_basic"},                   // neither perms nor --none
		{"--plugin", "search_company_basic", "--none", "a:b"},  // both
	} {
		if code, _, errs := c.run("", append([]string{"plugin", "perms"}, args...)...); code != 2 {
			t.Errorf("plugin perms %v: exit %d %q, want 2", args, code, errs)
		}
	}
	if code, out, errs := c.run("", "plugin", "perms", "--plugin", "search_company_basic", "--none"); code != 0 || !strings.Contains(out, "set the perms of 1 plugin(s) to []") {
		t.Fatalf("plugin perms --none: %d %q %q", code, out, errs)
	}
	// Agents (issue 46): a selection of tools, resolved as the catalog is
	// (search_company_basic, disabled above, is enabled again).
	if code, out, _ := c.run("", "agent", "add", "early", "--plugin", "search_company_basic"); code != 0 {
		t.Fatalf("agent add early: %q", out)
	}
	if code, out, _ := c.run("", "agent", "get", "early"); code != 0 || !strings.Contains(out, `"tool_names": []`) {
		t.Fatalf("agent get of a disabled plugin's agent: %q", out)
	}
	if code, _, _ := c.run("", "plugin", "enable", "search_company_basic"); code != 0 {
		t.Fatal("enable")
	}
	if code, out, errs := c.run("", "agent", "add", "companies", "--plugin", "search_company_basic", "--tag", "crm", "--perm", "crm:company:query", "--description", "Company lookups"); code != 0 || !strings.Contains(out, "added agent companies") {
		t.Fatalf("agent add: %d %q %q", code, out, errs)
	}
	if code, out, _ := c.run("", "agent", "get", "companies"); code != 0 || !strings.Contains(out, `"tool_names": [`+"\n"+`    "search_company_basic"`) || !strings.Contains(out, `"crm:company:query"`) {
		t.Fatalf("agent get: %q", out)
	}
	if code, out, _ := c.run("", "agent", "list"); code != 0 || !regexp.MustCompile(`companies\s+enabled\s+1\s+crm:company:query\s+Company lookups`).MatchString(out) {
		t.Fatalf("agent list: %q", out)
	}
	for _, args := range [][]string{
		{"agent", "add", "empty"},                                   // no tools
		{"agent", "add", "bad name", "--tag", "crm"},                // the name rule
		{"agent", "add", "wild", "--tag", "crm", "--perm", "crm:*"}, // a partial wildcard
	} {
		if code, _, errs := c.run("", args...); code != 2 {
			t.Errorf("%v: exit %d %q, want 2", args, code, errs)
		}
	}
	if code, _, errs := c.run("", "agent", "get", "nobody"); code != 1 || !strings.Contains(errs, "agent_not_found") {
		t.Errorf("agent get nobody: exit %d %q", code, errs)
	}
	if code, out, _ := c.run("", "agent", "rm", "companies"); code != 0 || !strings.Contains(out, "removed agent companies") {
		t.Fatalf("agent rm: %q", out)
	}
	if code, _, _ := c.run("", "plugin", "rm", "search_company_basic"); code != 0 {
		t.Fatal("rm")
	}
}

func TestCLITokensAndRotate(t *testing.T) {
	c := newCLI(t)
	code, out, _ := c.run("", "token", "create", "--user", "7", "--name", "laptop")
	if code != 0 || !strings.HasPrefix(out, "bx_") {
		t.Fatalf("token create: %d %q", code, out)
	}
	tok := strings.TrimSpace(out)
	if code, list, _ := c.run("", "token", "list"); code != 0 || !strings.Contains(list, "laptop") || strings.Contains(list, tok) {
		t.Fatalf("token list must show the label, never the token: %q", list)
	}
	// A token for the console only (issue 33: its sessions may approve
	// under BLINDEXEC_CONFIRM_VIA=console).
	if code, out, _ := c.run("", "token", "create", "--user", "7", "--name", "approvals", "--console-only"); code != 0 || !strings.HasPrefix(out, "bx_") {
		t.Fatalf("token create --console-only: %d %q", code, out)
	}
	if code, list, _ := c.run("", "token", "list"); code != 0 || !regexp.MustCompile(`(?m)laptop .*\bapi$`).MatchString(list) ||
		!regexp.MustCompile(`(?m)approvals .*\bconsole$`).MatchString(list) {
		t.Fatalf("token list must show each token's scope: %q", list)
	}
	if code, _, _ := c.run("", "token", "revoke", "1"); code != 0 {
		t.Fatal("revoke")
	}
	if code, _, _ := c.run("value-0123456789", "cred", "set", "7", "K"); code != 0 {
		t.Fatal("cred set")
	}
	// Every change at the command line is in the administrators' log,
	// in words, without a value or a token (issue 51 point 4).
	said, events := c.logged(t)
	want := []string{"cred set: credential “K” of user 7 set", "token revoke: token #1 revoked",
		"token create: token #2 created for user 7 “approvals”, console only", "token create: token #1 created for user 7 “laptop”"}
	if strings.Join(said, "\n") != strings.Join(want, "\n") || strings.Contains(fmt.Sprint(events), tok) || strings.Contains(fmt.Sprint(events), "value-0123456789") {
		t.Errorf("the log:\n%s\nwant:\n%s", strings.Join(said, "\n"), strings.Join(want, "\n"))
	}
	// Rotate to a new master key with the old one kept for reading.
	old := os.Getenv("BLINDEXEC_MASTER_KEY")
	key := make([]byte, 32)
	rand.Read(key)
	t.Setenv("BLINDEXEC_MASTER_KEY", base64.StdEncoding.EncodeToString(key))
	t.Setenv("BLINDEXEC_MASTER_KEYS_OLD", old)
	if code, out, errs := c.run("", "cred", "rotate"); code != 0 || !strings.Contains(out, "re-encrypted 1") {
		t.Fatalf("rotate: %d %q %q", code, out, errs)
	}
	t.Setenv("BLINDEXEC_MASTER_KEYS_OLD", "")
	if code, out, errs := c.run("", "cred", "list", "7"); code != 0 || !strings.Contains(out, "K") {
		t.Fatalf("list after rotate without the old key: %d %q %q", code, out, errs)
	}
	// cred rm (SPEC §10) removes the key; removing it again says so.
	if code, out, errs := c.run("", "cred", "rm", "7", "K"); code != 0 || !strings.Contains(out, "removed K for user 7") {
		t.Fatalf("cred rm: %d %q %q", code, out, errs)
	}
	if code, out, errs := c.run("", "cred", "list", "7"); code != 0 || regexp.MustCompile(`(?m)^K\s`).MatchString(out) {
		t.Fatalf("list after rm: %d %q %q", code, out, errs)
	}
	if code, _, errs := c.run("", "cred", "rm", "7", "K"); code != 1 || !strings.Contains(errs, "K") {
		t.Fatalf("cred rm of a key not stored: %d %q, want exit 1 naming it", code, errs)
	}
	// Without a master key, a credential command fails clearly.
	t.Setenv("BLINDEXEC_MASTER_KEY", "")
	if code, _, errs := c.run("value", "cred", "set", "7", "K"); code != 1 || !strings.Contains(errs, "BLINDEXEC_MASTER_KEY") {
		t.Fatalf("no master key: %d %q", code, errs)
	}
}

// TestPluginAddWithoutCredentials: a plugin that needs no credential is
// said to need none (newcomer 76: "(required credentials: )").
func TestPluginAddWithoutCredentials(t *testing.T) {
	c := newCLI(t)
	file := filepath.Join(t.TempDir(), "op_get.json")
	os.WriteFile(file, []byte(`{"name": "op_get", "description": "Reads something.", "parameters": {"type": "object"},
  "execution": {"method": "GET", "base_url": "https://ruoyi.example/op"}}`), 0o600)
	if code, out, errs := c.run("", "plugin", "add", file); code != 0 || out != "added op_get (required credentials: none)\n" {
		t.Fatalf("plugin add: %d %q %q", code, out, errs)
	}
}

// logged is the administrators' log, newest first, each row as its
// command and summary, every row checked to be the command line's.
func (c *cli) logged(t *testing.T) ([]string, []store.AdminEvent) {
	t.Helper()
	st, err := store.Open(t.Context(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	events, err := st.ListAdminEvents(t.Context(), store.AdminEventFilter{})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for i := range events {
		if events[i].Actor != "cli" || events[i].Via != "cli" {
			t.Errorf("event %+v: want actor and via cli", events[i])
		}
		said = append(said, events[i].Target+": "+api.Summary(api.LangEN, &events[i]))
	}
	return said, events
}

// TestCLIImportDryRunProvider: a dry run creates no OAuth provider, so it
// says the provider would be created (newcomer 76: it said "created",
// and oauth provider list then showed none). An import that changed the
// catalog is in the administrators' log, as the API's are (newcomer 76:
// none was); a dry run and a sync that changed nothing are not.
func TestCLIImportDryRunProvider(t *testing.T) {
	c := newCLI(t)
	src := filepath.Join(t.TempDir(), "trips.yaml")
	os.WriteFile(src, []byte(`openapi: 3.0.3
info: {title: Trips, version: "1"}
servers: [{url: "https://trips.example/v1"}]
components:
  securitySchemes:
    oauth: {type: oauth2, flows: {authorizationCode: {authorizationUrl: "https://trips.example/authorize", tokenUrl: "https://trips.example/token", scopes: {read: read}}}}
security: [{oauth: [read]}]
paths:
  /trips:
    get: {operationId: listTrips, responses: {"200": {description: ok}}}
`), 0o600)
	code, out, errs := c.run("", "import", "openapi", src, "--dry-run")
	if code != 0 || !strings.Contains(out, "oauth provider trips_oauth: would be created (") {
		t.Fatalf("dry run: %d %q %q", code, out, errs)
	}
	if _, list, _ := c.run("", "oauth", "provider", "list"); strings.Contains(list, "trips") {
		t.Fatalf("a dry run registered a provider: %q", list)
	}
	if said, _ := c.logged(t); len(said) != 0 {
		t.Errorf("a dry run is in the log: %q", said)
	}
	// The redirect URI to register is the one oauth provider add names,
	// once the setting gives it (it said <BLINDEXEC_BROWSER_URL>/… still).
	t.Setenv("BLINDEXEC_BROWSER_URL", "https://ai.example.com/engine/")
	if code, out, errs := c.run("", "import", "openapi", src); code != 0 || !strings.Contains(out, "oauth provider trips_oauth: created (") ||
		!strings.Contains(out, "(redirect URI https://ai.example.com/engine/oauth/callback)") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	c.run("", "import", "openapi", src)
	if said, _ := c.logged(t); strings.Join(said, "\n") != "import openapi: OpenAPI document "+src+" imported" {
		t.Errorf("the log: %q", said)
	}
}

func TestCLIImportOpenAPI(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o600)
		return p
	}
	doc := `openapi: 3.0.3
info: {title: Pets, version: "1"}
servers: [{url: "https://pets.example/v1"}]
paths:
  /pets:
    get: {operationId: listPets, responses: {"200": {description: ok}}}
  /pets/{id}:
    get:
      operationId: getPet
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
`
	src := write("pets.yaml", doc)
	if code, out, errs := c.run("", "import", "openapi", src, "--dry-run"); code != 0 || !strings.Contains(out, "added 2") || !strings.Contains(out, "dry run") {
		t.Fatalf("dry run: %d %q %q", code, out, errs)
	}
	if code, out, _ := c.run("", "plugin", "list"); code != 0 || strings.Contains(out, "listPets") {
		t.Fatalf("a dry run wrote plugins: %q", out)
	}
	if code, out, errs := c.run("", "import", "openapi", src); code != 0 || !strings.Contains(out, "+ getPet") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	if code, out, _ := c.run("", "import", "openapi", src); code != 0 || !strings.Contains(out, "up to date") {
		t.Fatalf("re-import of the same bytes: %d %q", code, out)
	}
	// listPets removed, a broken operation added: partial (3), removal disables.
	changed := strings.Replace(doc, "  /pets:\n    get: {operationId: listPets, responses: {\"200\": {description: ok}}}\n",
		"  /pets:\n    trace: {operationId: tracePets, responses: {\"200\": {description: ok}}}\n", 1)
	code, out, errs := c.run("", "import", "openapi", write("pets.yaml", changed))
	if code != exitPartial || !strings.Contains(out, "TRACE is not supported") {
		t.Fatalf("changed import: %d %q %q", code, out, errs)
	}
	if !strings.Contains(out, "- listPets") {
		t.Fatalf("removal not reported: %q", out)
	}
	if _, list, _ := c.run("", "plugin", "list"); !strings.Contains(list, "listPets") || !strings.Contains(list, "disabled") {
		t.Fatalf("a removed operation must stay, disabled: %q", list)
	}
	// No usable server: a clear error naming --base-url, exit 1.
	code, _, errs = c.run("", "import", "openapi", write("noserver.yaml", strings.Replace(doc, "servers: [{url: \"https://pets.example/v1\"}]\n", "", 1)))
	if code != 1 || !strings.Contains(errs, "--base-url") {
		t.Fatalf("no server: %d %q", code, errs)
	}
	// Seed 002 as given (indentation lost): a parse error naming its line.
	seeds, _ := filepath.Glob("../../../shared/seeds/002_*.txt")
	if len(seeds) == 1 {
		code, _, errs = c.run("", "import", "openapi", seeds[0], "--base-url", "https://rb.example")
		if code != 1 || !strings.Contains(errs, "line ") {
			t.Fatalf("seed 002 as given: %d %q", code, errs)
		}
	}
}

func TestCLIChat(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"Status":"200"}`)
	}))
	defer up.Close()
	llm := openaitest.New(t)
	c := newCLI(t)
	c.llmHTTP = egresstest.Client(t)
	t.Setenv("BLINDEXEC_LLM_BASE_URL", llm.URL)
	t.Setenv("BLINDEXEC_LLM_MODEL", "scripted")
	seed, _ := os.ReadFile("../../plugins/testdata/seed001.jsonc")
	file := filepath.Join(t.TempDir(), "plugin.jsonc")
	os.WriteFile(file, []byte(strings.Replace(string(seed), "http://api.qichacha.com", up.URL, 1)), 0o600)
	if code, _, errs := c.run("", "plugin", "add", file); code != 0 {
		t.Fatal(errs)
	}
	llm.Script(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "search_company_basic", Arguments: `{"keyword":"字节跳动"}`}}},
		openaitest.Turn{Content: "找到了。"},
	)
	code, _, errs := c.run("", "chat", "--plugins", "search_company_basic", "--cred", "QCC_KEY=k-123456", "查一下字节跳动")
	if code != 2 {
		t.Fatalf("chat has no --cred: want usage error, got %d %q", code, errs)
	}
	for k, v := range map[string]string{"QCC_KEY": "k-1234567890", "QCC_SECRET": "s-1234567890"} {
		c.run(v, "cred", "set", "7", k)
	}
	code, out, errs := c.run("", "chat", "--plugins", "search_company_basic", "--user", "7", "查一下字节跳动")
	if code != 0 {
		t.Fatalf("chat: %d %q %q", code, out, errs)
	}
	for _, want := range []string{"→ search_company_basic", "← search_company_basic: ok (HTTP 200)", "找到了。", "[completed: 1 step(s)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("chat output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := c.run("", "chat", "--plugins", "nope", "hi"); code != 2 || !strings.Contains(errs, "nope") {
		t.Fatalf("unknown plugin: %d %q", code, errs)
	}
}

// TestCLIImportURLSchemeInCapitals (review78): `import openapi
// HTTP://user:token@host/spec.json` read the URL as a file path and
// printed its error with the token; a scheme is any case, as Go's client
// takes it: the URL is fetched and nothing prints its userinfo.
func TestCLIImportURLSchemeInCapitals(t *testing.T) {
	const secret = "tok-CliCaps7Qz"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != secret {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `{"openapi":"3.0.3","info":{"title":"Caps","version":"1"},"servers":[{"url":"http://127.0.0.1:1"}],"paths":{"/items":{"get":{"operationId":"capsItems","responses":{"200":{"description":"ok"}}}}}}`)
	}))
	defer up.Close()
	c := newCLI(t)
	code, out, errs := c.run("", "import", "openapi", "HTTP://user:"+secret+"@"+strings.TrimPrefix(up.URL, "http://")+"/spec.json")
	if strings.Contains(out+errs, secret) || code != 0 {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
}
