package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// boundsEnv is a server holding consequential calls for a person, with
// a DELETE plugin whose calls wait, and per-user tokens.
type boundsEnv struct {
	*env
	up    *upstream
	llm   *openaitest.Server
	token func(user int) string
}

func newBoundsEnv(t *testing.T, st *store.Store, opts ...func(*api.Server)) *boundsEnv {
	t.Helper()
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
	llm := openaitest.New(t)
	e := newEnv(t, st, append([]func(*api.Server){func(s *api.Server) {
		withConfirmingModel(llm)(s)
		s.Confirm = confirm.Consequential
		s.MCP = &api.MCPConfig{}
	}}, opts...)...)
	plugin := map[string]any{"name": "delete_repo", "description": "Delete a repository",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}},
		"execution":  map[string]any{"method": "DELETE", "base_url": up.URL + "/repo"}}
	if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	return &boundsEnv{env: e, up: up, llm: llm, token: func(user int) string {
		_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": user, "name": "t"})
		return tok["token"].(string)
	}}
}

func prepareDelete(repo string) map[string]any {
	return map[string]any{"name": "delete_repo", "arguments": map[string]string{"repo": repo}, "prepare": true}
}

// TestPendingItemsAreBounded is issue 44's case 7: a per-user token
// cannot hold more than BLINDEXEC_PENDING_MAX_PER_USER calls waiting for
// a person — not by preparing, not by the 409 confirmation_required
// path, not over MCP, not by a run pausing — each refused 429
// too_many_pending naming the setting, nothing sent; another user is not
// affected; an item larger than the cap is refused 413 pending_too_large
// and nothing of it is stored.
func TestPendingItemsAreBounded(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		st.SetPendingMax(3)
		e := newBoundsEnv(t, st)
		seven, eight := e.token(7), e.token(8)
		for i := range 3 {
			if code, body := e.do("POST", "/v1/execute", seven, prepareDelete(fmt.Sprint("r", i))); code != http.StatusOK {
				t.Fatalf("prepare %d: %d %v", i, code, body)
			}
		}
		tooMany := func(what string, code int, h http.Header, body map[string]any) {
			t.Helper()
			d, _ := body["error"].(map[string]any)["details"].(map[string]any)
			if code != http.StatusTooManyRequests || errCode(body) != "too_many_pending" || d["setting"] != api.EnvPendingMax ||
				!strings.Contains(errMessage(body), api.EnvPendingMax) || (h != nil && h.Get("Retry-After") == "") {
				t.Errorf("%s past the limit: %d %v, want 429 too_many_pending naming %s", what, code, body, api.EnvPendingMax)
			}
		}
		code, h, body := api.DoJSONHeader(t, e.url, "POST", "/v1/execute", seven, prepareDelete("r3"))
		tooMany("prepare", code, h, body)
		code, h, body = api.DoJSONHeader(t, e.url, "POST", "/v1/execute", seven, map[string]any{"name": "delete_repo", "arguments": map[string]string{"repo": "r4"}})
		tooMany("a call the rule holds (409 path)", code, h, body)
		code, h, body = api.DoJSONHeader(t, e.url, "POST", "/v1/tools/delete_repo/call", seven, map[string]string{"repo": "r5"})
		tooMany("POST /v1/tools/{name}/call", code, h, body)

		// Over MCP: a tool error saying so, nothing held.
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
			Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(seven)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "delete_repo", Arguments: map[string]any{"repo": "mcp"}})
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out)
		tooMany("an MCP call", http.StatusTooManyRequests, nil, out)

		// A run of user 7 pausing: refused, ended failed, nothing held.
		e.llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "delete_repo", Arguments: `{"repo":"run"}`}}})
		code, body = e.do("POST", "/v1/runs", seven, map[string]any{
			"messages": []map[string]string{{"role": "user", "content": "delete run"}}, "plugin_names": []string{"delete_repo"}})
		if code != http.StatusTooManyRequests || body["status"] != "failed" || body["error"].(map[string]any)["code"] != "too_many_pending" || body["pending"] != nil {
			t.Errorf("a run pausing past the limit: %d %v, want 429, failed too_many_pending, nothing pending", code, body)
		}
		if n, _ := st.CountWaiting(t.Context(), new(int64(7))); n != 3 {
			t.Errorf("user 7 has %d calls waiting, want 3", n)
		}
		if code, body := e.do("POST", "/v1/execute", eight, prepareDelete("r0")); code != http.StatusOK {
			t.Errorf("another user past the first's limit: %d %v", code, body)
		}
		// Arguments past what an item holds.
		huge := map[string]any{"name": "delete_repo", "arguments": map[string]string{"repo": strings.Repeat("x", store.MaxPendingItem)}, "prepare": true}
		if code, body := e.do("POST", "/v1/execute", eight, huge); code != http.StatusRequestEntityTooLarge || errCode(body) != "pending_too_large" {
			t.Errorf("an item past %d bytes: %d %v, want 413 pending_too_large", store.MaxPendingItem, code, body)
		}
		if n, _ := st.CountWaiting(t.Context(), new(int64(8))); n != 1 {
			t.Errorf("user 8 has %d calls waiting, want 1 (the large one not stored)", n)
		}
		if n := e.up.count(http.MethodDelete); n != 0 {
			t.Errorf("%d DELETEs sent", n)
		}
	})
}

// TestInboxesArePaged is issue 44's cases 7 and 8: GET /v1/pending and
// GET /v1/runs?status=paused answer newest first, one bounded page at a
// time with a cursor to the next; one user's hundred items do not hide
// another's, whose item is on the first page and found by user; a page
// reads only its rows (a hundred items of near the cap each make an
// inbox of megabytes, a page of two stays small).
func TestInboxesArePaged(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newBoundsEnv(t, st)
		seven, eight := e.token(7), e.token(8)
		big := strings.Repeat("j", store.MaxPendingItem/2-2048)
		for i := range store.DefaultPendingMaxPerUser {
			if code, body := e.do("POST", "/v1/execute", seven, prepareDelete(fmt.Sprintf("%03d-%s", i, big))); code != http.StatusOK {
				t.Fatalf("junk item %d: %d %v", i, code, body)
			}
		}
		_, prep := e.do("POST", "/v1/execute", eight, prepareDelete("real"))
		real := prep["pending"].(map[string]any)["id"]

		resp := getRaw(t, e.url+"/v1/pending?limit=2", adminToken)
		if len(resp) > store.MaxPendingItem*3 {
			t.Errorf("a page of 2 items is %d bytes: more than two items' worth", len(resp))
		}
		var pg struct {
			Pending []map[string]any `json:"pending"`
			Next    string           `json:"next"`
		}
		json.Unmarshal(resp, &pg)
		if len(pg.Pending) != 2 || pg.Pending[0]["id"] != real || pg.Next == "" {
			t.Fatalf("first page: %d items, first %v, next %q; want 2, user 8's newest first, a cursor", len(pg.Pending), pg.Pending[0]["id"], pg.Next)
		}
		seen := map[any]bool{}
		for cursor, pages := "", 0; ; pages++ {
			code, body := e.do("GET", "/v1/pending?limit=40&cursor="+cursor, adminToken, nil)
			if code != http.StatusOK || pages > 3 {
				t.Fatalf("page %d: %d %v", pages, code, errCode(body))
			}
			for _, p := range body["pending"].([]any) {
				seen[p.(map[string]any)["id"]] = true
			}
			next, _ := body["next"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		if len(seen) != store.DefaultPendingMaxPerUser+1 {
			t.Errorf("paging through the inbox saw %d items, want %d", len(seen), store.DefaultPendingMaxPerUser+1)
		}
		if code, body := e.do("GET", "/v1/pending?user_id=8", adminToken, nil); code != http.StatusOK || len(body["pending"].([]any)) != 1 || body["next"] != nil {
			t.Errorf("user 8's inbox: %d %v", code, body)
		}
		if code, body := e.do("GET", "/v1/pending?limit=1", eight, nil); code != http.StatusOK || len(body["pending"].([]any)) != 1 ||
			body["pending"].([]any)[0].(map[string]any)["id"] != real {
			t.Errorf("user 8's own inbox: %d %v", code, body)
		}
		for _, q := range []string{"limit=0", "limit=101", "cursor=forged"} {
			if code, body := e.do("GET", "/v1/pending?"+q, adminToken, nil); code != http.StatusBadRequest {
				t.Errorf("?%s: %d %v, want 400", q, code, body)
			}
		}

		// Paused runs: newest first, by page.
		for i := range 3 {
			e.llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "delete_repo", Arguments: fmt.Sprintf(`{"repo":"run%d"}`, i)}}})
			if code, body := e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": 9,
				"messages": []map[string]string{{"role": "user", "content": "delete"}}, "plugin_names": []string{"delete_repo"}}); code != http.StatusOK || body["status"] != "paused" {
				t.Fatalf("run %d: %d %v", i, code, body)
			}
		}
		code, body := e.do("GET", "/v1/runs?status=paused&limit=2", serviceToken, nil)
		runs, _ := body["runs"].([]any)
		if code != http.StatusOK || len(runs) != 2 || body["next"] == nil {
			t.Fatalf("paused runs, first page: %d %v", code, body)
		}
		first := runs[0].(map[string]any)
		if args := fmt.Sprint(first["pending"].([]any)[0].(map[string]any)["arguments"]); !strings.Contains(args, "run2") {
			t.Errorf("newest run first: its item's arguments %s", args)
		}
		code, body = e.do("GET", "/v1/runs?status=paused&limit=2&cursor="+body["next"].(string), serviceToken, nil)
		if runs, _ := body["runs"].([]any); code != http.StatusOK || len(runs) != 1 || body["next"] != nil {
			t.Errorf("paused runs, last page: %d %v", code, body)
		}
	})
}

func getRaw(t *testing.T, url, token string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}

// TestConsoleRuleOnExpiredRuns is issue 44 point 8: under
// BLINDEXEC_CONFIRM_VIA=console a user's API token resumes nothing — a
// run that expired included (403 approval_via_console), and nothing is
// sent; the service token, RuoYi's own interface, still resumes it.
func TestConsoleRuleOnExpiredRuns(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newBoundsEnv(t, st, func(s *api.Server) { s.ConfirmVia = "console"; s.Runner.ConfirmTTL = time.Millisecond })
		seven := e.token(7)
		e.llm.Script(openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "delete_repo", Arguments: `{"repo":"x"}`}}},
			openaitest.Turn{Content: "Nothing was deleted."})
		_, reply := e.do("POST", "/v1/runs", seven, map[string]any{
			"messages": []map[string]string{{"role": "user", "content": "delete x"}}, "plugin_names": []string{"delete_repo"}})
		if reply["status"] != "paused" {
			t.Fatalf("run: %v", reply)
		}
		run := reply["run_id"].(string)
		id := reply["pending"].([]any)[0].(map[string]any)["id"]
		time.Sleep(20 * time.Millisecond)
		approve := map[string]any{"decisions": []map[string]any{{"id": id, "decision": "approve"}}}
		for _, body := range []map[string]any{approve, {}} {
			if code, out := e.do("POST", "/v1/runs/"+run+"/resume", seven, body); code != http.StatusForbidden || errCode(out) != "approval_via_console" {
				t.Errorf("the user's API token resumes the expired run (%v): %d %v, want 403 approval_via_console", body, code, out)
			}
		}
		if r, err := st.GetRun(t.Context(), run); err != nil || r.Status != store.RunExpired {
			t.Fatalf("the run after the refused resumes: %+v %v, want still expired", r, err)
		}
		if code, out := e.do("POST", "/v1/runs/"+run+"/resume", serviceToken, map[string]any{}); code != http.StatusOK || out["status"] != "completed" {
			t.Errorf("the service token's resume: %d %v", code, out)
		}
		if n := e.up.count(http.MethodDelete); n != 0 {
			t.Errorf("%d DELETEs sent", n)
		}
	})
}
