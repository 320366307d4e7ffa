package api_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/internal/mcpts"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMCPCallWaitsForTheUser: over /mcp a consequential call is answered
// at once with a tool error naming the pending call (never held open),
// nothing sent; the user approves it through the API (another user
// cannot); the same call then sends exactly the approved request, once.
func TestMCPCallWaitsForTheUser(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
		deletes := func() int { return up.count(http.MethodDelete) }
		e := newEnv(t, st, func(s *api.Server) {
			s.Confirm = confirm.Consequential
			s.MCP = &api.MCPConfig{PublicURL: "https://engine.example"}
		})
		plugin := map[string]any{"name": "delete_repo", "description": "Delete a repository",
			"parameters":  map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}},
			"execution":   map[string]any{"method": "DELETE", "base_url": up.URL + "/repo"},
			"auth_config": map[string]any{"type": "api_key", "mapping": []map[string]string{{"source": "GH_TOKEN", "target": "X-Token"}}}}
		if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, body)
		}
		e.do("PUT", "/v1/credentials/7/GH_TOKEN", serviceToken, map[string]string{"value": ghToken})
		token := func(user int) string {
			_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": user, "name": "t"})
			return tok["token"].(string)
		}
		seven, eight := token(7), token(8)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
			Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(seven)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		call := func() (*sdk.CallToolResult, map[string]any) {
			t.Helper()
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "delete_repo", Arguments: map[string]any{"repo": "blindexec"}})
			if err != nil {
				t.Fatal(err)
			}
			var out map[string]any
			json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out)
			return res, out
		}
		res, out := call()
		if !res.IsError || deletes() != 0 {
			t.Fatalf("first call: %+v, %d sent; want a tool error, nothing sent", out, deletes())
		}
		pending := out["error"].(map[string]any)["pending"].(map[string]any)
		id := pending["id"].(string)
		if req := pending["request"].(map[string]any); req["method"] != "DELETE" || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "waits for the user's approval") {
			t.Errorf("the tool error: %v", out)
		}
		if at := out["error"].(map[string]any)["approve_at"]; at != "https://engine.example/console/#/approvals" {
			t.Errorf("the tool error names the approval page %v", at)
		}
		// A client that declared URL elicitation gets the specification's
		// URL-elicitation-required error, at once.
		uc, err := sdk.NewClient(&sdk.Implementation{Name: "u", Version: "1"}, &sdk.ClientOptions{
			Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{URL: &sdk.URLElicitationCapabilities{}}}}).
			Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(seven)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer uc.Close()
		_, err = uc.CallTool(t.Context(), &sdk.CallToolParams{Name: "delete_repo", Arguments: map[string]any{"repo": "blindexec"}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != sdk.CodeURLElicitationRequired ||
			!strings.Contains(string(rpcErr.Data), `"url":"https://engine.example/console/#/approvals"`) || !strings.Contains(string(rpcErr.Data), id) || deletes() != 0 {
			t.Errorf("a URL-elicitation client: %v (%+v), %d sent", err, rpcErr, deletes())
		}
		if _, again := call(); again["error"].(map[string]any)["pending"].(map[string]any)["id"] != id || deletes() != 0 {
			t.Errorf("the same call again: %v, want the same pending id, nothing sent", again)
		}
		// The official TypeScript SDK's client: the tool's annotations, and
		// the tool error naming the approval page.
		t.Run("TypeScript client", func(t *testing.T) {
			mcpts.Require(t)
			out := mcpts.Run(t, time.Minute, nil, "client.mjs", e.url+"/mcp", seven, "delete_repo", `{"repo":"blindexec"}`)
			var got struct {
				Tools []struct {
					Name        string
					Annotations struct{ ReadOnlyHint, DestructiveHint, IdempotentHint, OpenWorldHint bool }
				}
				Result struct {
					IsError bool
					Content []struct{ Text string }
				}
			}
			if err := json.Unmarshal(out, &got); err != nil || len(got.Tools) != 1 || !got.Tools[0].Annotations.DestructiveHint ||
				got.Tools[0].Annotations.ReadOnlyHint || !got.Tools[0].Annotations.IdempotentHint || !got.Tools[0].Annotations.OpenWorldHint {
				t.Fatalf("client.mjs printed %s: %v", out, err)
			}
			if !got.Result.IsError || !strings.Contains(got.Result.Content[0].Text, `"approve_at":"https://engine.example/console/#/approvals"`) || deletes() != 0 {
				t.Errorf("the TypeScript client's call: %+v, %d sent", got.Result, deletes())
			}
		})
		if code, list := e.do("GET", "/v1/pending", seven, nil); code != 200 || len(list["pending"].([]any)) != 1 {
			t.Errorf("user 7's pending calls: %d %v", code, list)
		}
		if code, _ := e.do("POST", "/v1/pending/"+id, eight, map[string]string{"decision": "approve"}); code != http.StatusNotFound {
			t.Errorf("user 8 approves user 7's call: %d, want 404", code)
		}
		if code, body := e.do("POST", "/v1/pending/"+id, seven, map[string]string{"decision": "approve"}); code != http.StatusOK {
			t.Fatalf("approve: %d %v", code, body)
		}
		if res, out := call(); res.IsError || deletes() != 1 {
			t.Fatalf("after approval: %v, %d sent", out, deletes())
		}
		if last := up.received()[len(up.received())-1]; last.uri != "/repo?repo=blindexec" || last.header.Get("X-Token") != ghToken {
			t.Errorf("sent %s", last.uri)
		}
		// One approval, one call.
		if res, _ := call(); !res.IsError || deletes() != 1 {
			t.Errorf("a second call after one approval was sent")
		}
	})
}

// TestMCPElicitation: the pinned TypeScript SDK client declares form
// elicitation and holds its GET stream; a consequential call asks it,
// with the prepared request in the message; accept sends the request
// once, decline sends nothing and says so.
func TestMCPElicitation(t *testing.T) {
	mcpts.Require(t)
	st := testdb.Open(t, "sqlite")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
	e := newEnv(t, st, func(s *api.Server) { s.Confirm = confirm.Consequential; s.MCP = &api.MCPConfig{} })
	plugin := map[string]any{"name": "delete_repo", "description": "Delete a repository",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}},
		"execution":  map[string]any{"method": "DELETE", "base_url": up.URL + "/repo"}}
	if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "t"})
	seven := tok["token"].(string)
	run := func(repo, action string) (asked []string, isError bool, text string) {
		out := mcpts.Run(t, time.Minute, nil, "elicit_client.mjs", e.url+"/mcp", seven, "delete_repo", `{"repo":"`+repo+`"}`, action)
		var got struct {
			Asked  []string
			Result struct {
				IsError bool
				Content []struct{ Text string }
			}
		}
		if err := json.Unmarshal(out, &got); err != nil || len(got.Result.Content) == 0 {
			t.Fatalf("elicit_client.mjs printed %s: %v", out, err)
		}
		return got.Asked, got.Result.IsError, got.Result.Content[0].Text
	}
	asked, isError, text := run("declined", "decline")
	if len(asked) != 1 || !strings.Contains(asked[0], "DELETE "+up.URL+"/repo?repo=declined") || !isError || up.count(http.MethodDelete) != 0 {
		t.Fatalf("decline: asked %v, error %v %s, %d sent", asked, isError, text, up.count(http.MethodDelete))
	}
	asked, isError, text = run("accepted", "accept")
	if len(asked) != 1 || isError || up.count(http.MethodDelete) != 1 || up.received()[0].uri != "/repo?repo=accepted" {
		t.Fatalf("accept: asked %v, error %v %s, sent %v", asked, isError, text, up.received())
	}
	// The audit log keeps both decisions, which outlive their items
	// (BLINDEXEC_PENDING_RETENTION_MS, issue 44 point 5).
	events, err := st.ListAdminEvents(t.Context(), store.AdminEventFilter{Kind: "decision"})
	if err != nil || len(events) != 2 || events[0].Action != confirm.Approved || events[1].Action != confirm.Denied ||
		events[0].Via != "mcp" || events[0].Actor != "user 7" || !strings.Contains(events[0].Target, " digest ") {
		t.Errorf("the audit log: %+v %v", events, err)
	}
}
