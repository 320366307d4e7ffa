package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSearchCommand(t *testing.T) {
	c := newCLI(t)
	for _, p := range [][3]string{
		{"issues_create", "Create an issue", "Opens a new issue."},
		{"repos_delete", "Delete a repository", "Deleting a repository needs admin rights."},
		{"system_user_list", "获取用户列表", "分页查询系统用户"},
	} {
		doc := fmt.Sprintf(`{"name": %q, "title": %q, "description": %q, "parameters": {"type": "object"},
			"execution": {"method": "GET", "base_url": "https://api.example.com/x"}}`, p[0], p[1], p[2])
		if code, _, errs := c.run(doc, "plugin", "add", "-"); code != 0 {
			t.Fatalf("plugin add: %d %s", code, errs)
		}
	}
	code, out, errs := c.run("", "search", "--json", "--limit", "1", "remove", "the", "repo")
	if code != 0 {
		t.Fatalf("search --json: %d %s", code, errs)
	}
	var got struct {
		Results []struct {
			Name  string  `json:"name"`
			Score float64 `json:"score"`
			Tool  struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool"`
		} `json:"results"`
		TookMS *float64 `json:"took_ms"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("search --json is not JSON: %v\n%s", err, out)
	}
	if len(got.Results) != 1 || got.Results[0].Name != "repos_delete" || got.Results[0].Tool.Function.Name != "repos_delete" || got.TookMS == nil {
		t.Fatalf("search --json = %s", out)
	}
	if code, out, _ := c.run("", "search", "查看所有用户"); code != 0 || !strings.Contains(out, "system_user_list") {
		t.Fatalf("search in Chinese: %d %s", code, out)
	}
	if code, out, _ := c.run("", "search", "zzzz"); code != 0 || !strings.Contains(out, "no tool") {
		t.Fatalf("search finding nothing: %d %s", code, out)
	}
	if code, _, _ := c.run("", "search"); code == 0 {
		t.Fatal("search without a query succeeded")
	}
}

// TestCLISourceAliases: an administrator names an import source with
// `import aliases`; a search naming the alias (or the document's title)
// finds that source's tools first, and a later sync keeps the aliases
// (issue 49 point 1).
func TestCLISourceAliases(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	write := func(name, title, summary string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("openapi: 3.0.3\ninfo: {title: "+title+", version: '1'}\nservers: [{url: 'https://api.example'}]\npaths:\n"+
			"  /servers:\n    get: {operationId: listServers, summary: \""+summary+"\", responses: {'200': {description: ok}}}\n"), 0o600)
		return p
	}
	other := write("other.yaml", "Other Cloud API", "List all servers and machines")
	mine := write("mine.yaml", "Hetzner Cloud API", "Get Servers")
	for _, args := range [][]string{{"import", "openapi", other, "--prefix", "oc"}, {"import", "openapi", mine, "--prefix", "hz"}} {
		if code, out, errs := c.run("", args...); code != 0 {
			t.Fatalf("%v: %d %q %q", args, code, out, errs)
		}
	}
	if code, out, errs := c.run("", "import", "aliases", "2", "赫兹纳", "our provider"); code != 0 || !strings.Contains(out, "赫兹纳") {
		t.Fatalf("import aliases: %d %q %q", code, out, errs)
	}
	os.WriteFile(mine, []byte(strings.Replace(readFile(t, mine), "Get Servers", "Get all Servers", 1)), 0o600)
	if code, out, errs := c.run("", "import", "openapi", mine, "--prefix", "hz"); code != 0 {
		t.Fatalf("sync: %d %q %q", code, out, errs)
	}
	for q, want := range map[string]string{
		"list all servers":                 "oc_listServers",
		"list all servers on hetzner":      "hz_listServers",
		"赫兹纳 list all servers":             "hz_listServers",
		"list all servers of our provider": "hz_listServers",
	} {
		code, out, errs := c.run("", "search", "--limit", "1", q)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("search %q: %d %q %q, want %s first", q, code, out, errs, want)
		}
	}
	if code, _, errs := c.run("", "import", "aliases", "x"); code == 0 || !strings.Contains(errs, "SOURCE_ID") {
		t.Errorf("a bad source id: %d %q", code, errs)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEmbeddingsKeyNeverShown: an embeddings endpoint echoing the key it
// was sent in its error leaves it out of the error (logged when semantic
// ranking fails).
func TestEmbeddingsKeyNeverShown(t *testing.T) {
	const key = "sk-embeddings-0123456789abcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	defer srv.Close()
	sem := embeddingsSettings{url: srv.URL, apiKey: key, model: "m"}.semantic(nil, nil)
	_, err := sem.Embedder.Embed(t.Context(), []string{"hello"})
	if err == nil || !strings.Contains(err.Error(), "status 401") || strings.Contains(err.Error(), key) {
		t.Errorf("Embed: %v; want the 401 without the key", err)
	}
}
