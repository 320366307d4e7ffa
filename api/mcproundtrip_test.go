package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// roundTripEnv is an engine under the consequential policy with
// requestStates sealed, the plugin delete_repo (DELETE upstream/repo),
// and per-user tokens of users 7 and 8.
type roundTripEnv struct {
	*env
	up           *upstream
	seven, eight string
}

func newRoundTripEnv(t *testing.T, st *store.Store, via string, opts ...func(*api.Server)) *roundTripEnv {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
	key, err := mcpserver.StateKey("a master key of this test")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, st, func(s *api.Server) {
		s.Confirm, s.ConfirmVia = confirm.Consequential, via
		s.MCP = &api.MCPConfig{PublicURL: "https://engine.example", StateKey: key}
		for _, o := range opts {
			o(s)
		}
	})
	plugin := map[string]any{"name": "delete_repo", "description": "Delete a repository",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}},
		"execution":  map[string]any{"method": "DELETE", "base_url": up.URL + "/repo"}}
	if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	token := func(user int) string {
		_, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": user, "name": "t"})
		return tok["token"].(string)
	}
	return &roundTripEnv{env: e, up: up, seven: token(7), eight: token(8)}
}

func (e *roundTripEnv) deletes() int { return e.up.count(http.MethodDelete) }

// TestMCPRoundTripForm: the go-sdk v1.8 client at 2026-07-28, declaring
// form elicitation, is answered input_required with the decision form
// showing the prepared request; its retry with approve sends exactly that
// request once; deny, decline and cancel send nothing.
func TestMCPRoundTripForm(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newRoundTripEnv(t, st, "")
		answer := make(chan *sdk.ElicitResult, 1)
		var asked []*sdk.ElicitParams
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
			ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked = append(asked, r.Params)
				return <-answer, nil
			}}).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: api.Bearer(e.seven)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s", v)
		}
		for i, tc := range []struct {
			answer *sdk.ElicitResult
			sent   int
		}{
			{&sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny", "reason": "not now"}}, 0},
			{&sdk.ElicitResult{Action: "decline"}, 0},
			{&sdk.ElicitResult{Action: "cancel"}, 0},
			{&sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, 1},
		} {
			answer <- tc.answer
			repo := fmt.Sprintf("r%d", i)
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "delete_repo", Arguments: map[string]any{"repo": repo}})
			if err != nil {
				t.Fatalf("%s: %v", tc.answer.Action, err)
			}
			text := res.Content[0].(*sdk.TextContent).Text
			if tc.sent == 0 && (!res.IsError || !strings.Contains(text, "not_confirmed") || e.deletes() != 0) {
				t.Errorf("%s %v: %s, %d sent", tc.answer.Action, tc.answer.Content, text, e.deletes())
			}
			if tc.sent == 1 && (res.IsError || e.deletes() != 1 || e.up.received()[0].uri != "/repo?repo="+repo) {
				t.Errorf("approve: %s, sent %v", text, e.up.received())
			}
			p := asked[len(asked)-1]
			if p.Mode != "form" || !strings.Contains(p.Message, "DELETE "+e.up.URL+"/repo?repo="+repo) ||
				!strings.Contains(fmt.Sprint(p.RequestedSchema), "approve deny") {
				t.Errorf("the form asked: %+v", p)
			}
		}
		// The record says who approved, and how.
		if err := e.rec.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, list := e.do("GET", "/v1/executions?plugin_name=delete_repo", adminToken, nil)
		var confirmations []string
		for _, x := range list["executions"].([]any) {
			c, _ := x.(map[string]any)["confirmation"].(string)
			confirmations = append(confirmations, c)
		}
		if len(confirmations) != 1 || !strings.HasPrefix(confirmations[0], "approved by elicitation:mcp:user:7, pending ") {
			t.Errorf("the records: %q", confirmations)
		}
	})
}

// rawCall posts one tools/call of delete_repo as a 2026-07-28 client
// declaring caps, with the retry's fields (extra, JSON members), as
// token: the status and body.
func (e *roundTripEnv) rawCall(token, repo, caps, extra string) (int, string) {
	e.t.Helper()
	return e.rawCallAt("/mcp", token, repo, caps, extra)
}

// rawCallAt is rawCall on the MCP endpoint at path.
func (e *roundTripEnv) rawCallAt(path, token, repo, caps, extra string) (int, string) {
	e.t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_repo","arguments":{"repo":"` + repo + `"}` + extra +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer " + token, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "delete_repo"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const formCaps = `{"elicitation":{"form":{}}}`

// retryWith is the members of a retry: its state and the decision.
func retryWith(state, decision string) string {
	return `,"requestState":` + jsonString(state) + `,"inputResponses":{"decision":{"action":"accept","content":{"decision":"` + decision + `"}}}`
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestMCPRoundTripState: a requestState is good for one retry of the
// same call by the same token and user: altered, another user's, for
// other arguments or used twice, it is refused and nothing is sent.
func TestMCPRoundTripState(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newRoundTripEnv(t, st, "")
		status, body := e.rawCall(e.seven, "a", formCaps, "")
		state := gjson.Get(body, "result.requestState").String()
		if status != 200 || gjson.Get(body, "result.resultType").String() != "input_required" || state == "" ||
			gjson.Get(body, "result.inputRequests.decision.method").String() != "elicitation/create" ||
			gjson.Get(body, "result.inputRequests.decision.params.mode").String() != "form" || e.deletes() != 0 {
			t.Fatalf("first call: %d %s", status, body)
		}
		if strings.Contains(body, `"repo"`) && strings.Contains(state, "repo") {
			t.Errorf("the state is readable: %s", state)
		}
		altered := []byte(state)
		altered[len(altered)/2] ^= 1
		for _, tc := range []struct {
			name, token, repo, extra, want string
		}{
			{"altered", e.seven, "a", retryWith(string(altered), "approve"), "not a state this server issued"},
			{"not base64", e.seven, "a", retryWith("!!", "approve"), "not a state this server issued"},
			{"another user's token", e.eight, "a", retryWith(state, "approve"), "not a state this server issued"},
			{"other arguments", e.seven, "b", retryWith(state, "approve"), "the call differs"},
		} {
			status, body := e.rawCall(tc.token, tc.repo, formCaps, tc.extra)
			if gjson.Get(body, "error.code").Int() != -32602 || !strings.Contains(body, tc.want) || e.deletes() != 0 {
				t.Errorf("%s: %d %s, %d sent", tc.name, status, body, e.deletes())
			}
		}
		// Without the decision the person is asked again, with a new state.
		_, body = e.rawCall(e.seven, "a", formCaps, `,"requestState":`+jsonString(state))
		if gjson.Get(body, "result.resultType").String() != "input_required" || e.deletes() != 0 {
			t.Fatalf("a retry without the decision: %s", body)
		}
		if _, again := e.rawCall(e.seven, "a", formCaps, retryWith(state, "approve")); !strings.Contains(again, "already used") {
			t.Errorf("the first state again: %s", again)
		}
		state = gjson.Get(body, "result.requestState").String()
		if _, body := e.rawCall(e.seven, "a", formCaps, retryWith(state, "approve")); gjson.Get(body, "result.isError").Bool() || e.deletes() != 1 {
			t.Fatalf("the retry: %s, %d sent", body, e.deletes())
		}
		if _, body := e.rawCall(e.seven, "a", formCaps, retryWith(state, "approve")); !strings.Contains(body, "already used") || e.deletes() != 1 {
			t.Errorf("the state again: %s, %d sent", body, e.deletes())
		}
	})
}

// TestMCPRoundTripStateStaysOnItsEndpoint: a requestState issued on one
// agent's endpoint is refused on another agent's that holds the same
// tool, and on /mcp; nothing is sent, and the state still serves its
// own endpoint once (the refusals did not spend it).
func TestMCPRoundTripStateStaysOnItsEndpoint(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	e := newRoundTripEnv(t, st, "", func(s *api.Server) {
		checker := &access.Checker{} // open: agents need an access rule
		s.Executor.Access, s.Access = checker, checker
	})
	for _, name := range []string{"ops", "cleanup"} {
		agent := map[string]any{"name": name, "description": "d", "tools": map[string]any{"names": []string{"delete_repo"}}}
		if code, out := e.do("POST", "/v1/agents", adminToken, agent); code != http.StatusCreated {
			t.Fatalf("create %s: %d %v", name, code, out)
		}
	}
	_, body := e.rawCallAt("/mcp/agents/ops", e.seven, "a", formCaps, "")
	state := gjson.Get(body, "result.requestState").String()
	if gjson.Get(body, "result.resultType").String() != "input_required" || state == "" {
		t.Fatalf("first call on /mcp/agents/ops: %s", body)
	}
	for _, path := range []string{"/mcp/agents/cleanup", "/mcp"} {
		_, body := e.rawCallAt(path, e.seven, "a", formCaps, retryWith(state, "approve"))
		if gjson.Get(body, "error.code").Int() != -32602 || !strings.Contains(body, "not a state this server issued") || e.deletes() != 0 {
			t.Errorf("the state of /mcp/agents/ops on %s: %s, %d sent", path, body, e.deletes())
		}
	}
	if _, body := e.rawCallAt("/mcp/agents/ops", e.seven, "a", formCaps, retryWith(state, "approve")); gjson.Get(body, "result.isError").Bool() || e.deletes() != 1 {
		t.Errorf("the retry on its own endpoint: %s, %d sent", body, e.deletes())
	}
}

// TestMCPRoundTripURL: a client declaring only URL elicitation, or any
// client under BLINDEXEC_CONFIRM_VIA=console, is sent to the approval
// page; once the person approved there, the retry sends the request.
func TestMCPRoundTripURL(t *testing.T) {
	for _, tc := range []struct{ name, via, caps string }{
		{"URL only", "", `{"elicitation":{"url":{}}}`},
		{"via the console", "console", `{"elicitation":{"form":{},"url":{}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := testdb.Open(t, store.DialectSQLite)
			e := newRoundTripEnv(t, st, tc.via)
			_, body := e.rawCall(e.seven, "u", tc.caps, "")
			state, id := gjson.Get(body, "result.requestState").String(), gjson.Get(body, "result.inputRequests.approval.params.elicitationId").String()
			if gjson.Get(body, "result.inputRequests.approval.params.url").String() != "https://engine.example/console/#/approvals" || state == "" || id == "" {
				t.Fatalf("first call: %s", body)
			}
			// A retry before the approval is told the call still waits (the
			// client's own loop would ask the person again at once); the
			// call made afresh is asked again.
			_, body = e.rawCall(e.seven, "u", tc.caps, `,"requestState":`+jsonString(state))
			if !gjson.Get(body, "result.isError").Bool() || !strings.Contains(body, "confirmation_required") || e.deletes() != 0 {
				t.Fatalf("a retry before the approval: %s, %d sent", body, e.deletes())
			}
			_, body = e.rawCall(e.seven, "u", tc.caps, "")
			if state = gjson.Get(body, "result.requestState").String(); state == "" || gjson.Get(body, "result.inputRequests.approval.params.elicitationId").String() != id {
				t.Fatalf("the call again: %s", body)
			}
			if tc.via == "console" {
				// The console's decision, as it writes it.
				if won, err := st.DecideItem(t.Context(), id, confirm.Approved, "console:user:7", ""); !won || err != nil {
					t.Fatal(won, err)
				}
			} else if code, out := e.do("POST", "/v1/pending/"+id, e.seven, map[string]string{"decision": "approve"}); code != http.StatusOK {
				t.Fatalf("approve: %d %v", code, out)
			}
			_, body = e.rawCall(e.seven, "u", tc.caps, `,"requestState":`+jsonString(state))
			if gjson.Get(body, "result.isError").Bool() || e.deletes() != 1 || e.up.received()[0].uri != "/repo?repo=u" {
				t.Fatalf("the retry after the approval: %s, %d sent", body, e.deletes())
			}
		})
	}
}
