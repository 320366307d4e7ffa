package mcpserver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/internal/githubcatalog"
	"github.com/blindexec/blindexec/internal/mcpts"
)

// TestGitHubCatalogWithTypeScriptClient: the official TypeScript SDK's
// client on GitHub's whole REST API (1,100+ tools) sees the meta-tools,
// searches, lists again on notifications/tools/list_changed, and calls
// the tool it found directly and through call_tool, against a loopback
// upstream.
func TestGitHubCatalogWithTypeScriptClient(t *testing.T) {
	mcpts.Require(t)
	var (
		mu  sync.Mutex
		got []string
	)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"README.md","content":"SGVsbG8="}`)
	}))
	t.Cleanup(up.Close)
	cat := catalog(githubcatalog.Plugins(t, up.URL))
	svc := mcpserver.NewService(cat, engine.NewExecutor(egresstest.Client(t)), mcpserver.Options{})
	authn := func(r *http.Request) (mcpserver.Identity, error) {
		if r.Header.Get("Authorization") != "Bearer ts-token" {
			return mcpserver.Identity{}, errors.New("token needed")
		}
		return mcpserver.Identity{User: 7, Principal: "ts"}, nil
	}
	srv := httptest.NewServer(svc.Handler(authn))
	t.Cleanup(srv.Close)

	stdout := mcpts.Run(t, 60*time.Second, nil, "search_client.mjs", srv.URL, "ts-token",
		"get the README of a repository", "repos_get-readme", `{"owner":"octocat","repo":"hello-world"}`)
	type result struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	var out struct {
		Before, After               []string
		Search, Direct, ViaCallTool result
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("search_client.mjs printed %s: %v", stdout, err)
	}
	if !slices.Equal(out.Before, []string{"search_tools", "call_tool"}) {
		t.Errorf("tools before the search = %v", out.Before)
	}
	if out.Search.IsError || !strings.Contains(out.Search.Content[0].Text, `"repos_get-readme"`) {
		t.Errorf("search = %+v", out.Search)
	}
	if !slices.Contains(out.After, "repos_get-readme") || len(out.After) > 2+toolset.DefaultThreshold {
		t.Errorf("tools after the notification = %v", out.After)
	}
	for name, r := range map[string]result{"direct": out.Direct, "call_tool": out.ViaCallTool} {
		if r.IsError || len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, "README.md") {
			t.Errorf("%s call = %+v", name, r)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"GET /repos/octocat/hello-world/readme", "GET /repos/octocat/hello-world/readme"}; !slices.Equal(got, want) {
		t.Errorf("upstream got %v, want %v", got, want)
	}
}
