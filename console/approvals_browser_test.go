package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

type bearerRT string

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// confirmingConsole is a console over st whose engine holds consequential
// calls for a person, and the administrator's signed-in client with its
// CSRF token.
func confirmingConsole(t *testing.T, st *store.Store) (*env, *http.Client, string) {
	t.Helper()
	e := newEnv(t, st, newMasterKey(), func(s *api.Server) { s.Confirm = confirm.Consequential })
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	return e, admin, csrf
}

// TestApprovalInBrowser: an MCP client's consequential call waits; the
// user opens the console's Approvals page in chromium, reads the request
// in full (opening the page decides nothing), approves it with a reason
// (a POST with the session's CSRF token), and the same call then sends
// it; the decision is in the audit log.
func TestApprovalInBrowser(t *testing.T) {
	needBrowser(t)
	var mu sync.Mutex
	var sent []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		io.WriteString(w, `{"ok":true}`)
	}))
	defer up.Close()
	st := testdb.Open(t, "sqlite")
	e, admin, csrf := confirmingConsole(t, st)
	plugin := `{"name": "delete_repo", "description": "Delete a repository", "parameters": {"type": "object", "properties": {"repo": {"type": "string"}}},
		"execution": {"method": "DELETE", "base_url": "` + up.URL + `/repo"},
		"auth_config": {"type": "api_key", "mapping": [{"source": "GH_TOKEN", "target": "X-Token"}]}}`
	if code, body := do(t, admin, "POST", e.url+"/v1/plugins", csrf, plugin); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	if code, _ := do(t, admin, "PUT", e.url+"/v1/credentials/7/GH_TOKEN", csrf, `{"value":"`+secretValue+`"}`); code/100 != 2 {
		t.Fatal("credential")
	}
	_, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 7, "name": "agent"}`)
	user := tok["token"].(string)

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: bearerRT(user)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callTool := func() *sdk.CallToolResult {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "delete_repo", Arguments: map[string]any{"repo": "blindexec"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := callTool()
	var waits struct {
		Error struct{ Pending struct{ ID string } }
	}
	json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &waits)
	id := waits.Error.Pending.ID
	if !res.IsError || id == "" || len(sent) != 0 {
		t.Fatalf("the MCP call: %+v, sent %v", res, sent)
	}

	tb := newTab(t)
	tb.signIn(e.url, user)
	tb.open(e.url, "approvals", "approvals")
	text := tb.text("#page")
	for _, want := range []string{"delete_repo", "DELETE", up.URL + "/repo?repo=blindexec", "X-Token", "added when sent", "Direct call by an MCP client of user 7"} {
		if !strings.Contains(text, want) {
			t.Errorf("the Approvals page lacks %q: %s", want, text)
		}
	}
	if strings.Contains(text, secretValue) {
		t.Error("the Approvals page shows the credential")
	}
	tb.screenshot("approvals")
	if it, err := st.GetPendingItem(context.Background(), id); err != nil || it.Status != store.PendingWaiting {
		t.Fatalf("opening the page decided: %+v %v", it, err)
	}
	tb.do(chromedp.SendKeys(chromedp.CSS(`.approval input.reason`), "I asked for it"), chromedp.Click(chromedp.CSS(`.approval button.approve`)))
	tb.wait(`.approval .outcome p.ok`)
	if got := tb.text(".approval .outcome"); !strings.Contains(got, "Approved: the client sends the call when it makes it again.") {
		t.Errorf("after Approve: %s", got)
	}
	it, err := st.GetPendingItem(context.Background(), id)
	if err != nil || it.Status != confirm.Approved || it.DecidedBy != "user:7" || it.Reason != "I asked for it" {
		t.Fatalf("after Approve: %+v %v", it, err)
	}
	if res := callTool(); res.IsError || len(sent) != 1 || sent[0] != "DELETE /repo?repo=blindexec" {
		t.Fatalf("the call after approval: %+v, sent %v", res, sent)
	}
	events, err := st.ListAdminEvents(context.Background(), store.AdminEventFilter{Kind: "decision"})
	if err != nil || len(events) != 1 || events[0].Target != "/v1/pending/"+id+" digest "+it.Digest || len(it.Digest) != 64 || events[0].Actor == "" {
		t.Errorf("the audit log: %+v %v", events, err)
	}

	// The administrator classifies the tool as not consequential on its
	// page: the next call runs at once.
	at := newTab(t)
	at.signIn(e.url, adminToken)
	at.open(e.url, "plugin/delete_repo", "plugin")
	at.do(chromedp.SetValue(chromedp.CSS(`#plugin-consequential`), "false"), chromedp.Click(chromedp.CSS(`#plugin-consequential-save`)))
	at.wait(`#page .ok`)
	if row, err := st.GetPlugin(context.Background(), "delete_repo"); err != nil || row.Consequential == nil || *row.Consequential != "0" {
		t.Fatalf("after the console's classification: %+v %v", row, err)
	}
	// The engine's tool set follows the catalog's change counter, which
	// its own write moves; under load the reload may trail the page's
	// answer by a moment: a call before it waits again (nothing is sent).
	res = callTool()
	for deadline := time.Now().Add(2 * time.Second); res.IsError && time.Now().Before(deadline); res = callTool() {
		time.Sleep(50 * time.Millisecond)
	}
	if res.IsError || len(sent) != 2 {
		t.Errorf("a call of a tool classified not consequential: %+v %s, sent %v", res, res.Content[0].(*sdk.TextContent).Text, sent)
	}
}

// TestApprovalsPaged (issue 44 point 5): the Approvals page reads each
// inbox one page at a time, newest first; More reads the next page.
func TestApprovalsPaged(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, "sqlite")
	e, admin, csrf := confirmingConsole(t, st)
	plugin := `{"name": "delete_repo", "description": "Delete a repository", "parameters": {"type": "object", "properties": {"repo": {"type": "string"}}},
		"execution": {"method": "DELETE", "base_url": "https://repos.example/repo"}}`
	if code, body := do(t, admin, "POST", e.url+"/v1/plugins", csrf, plugin); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	_, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 7, "name": "agent"}`)
	user := &http.Client{Transport: bearerRT(tok["token"].(string))}
	n := store.DefaultPage + 1
	var last time.Time
	for i := range n {
		// The store keeps a call's time to the millisecond and orders calls
		// of one millisecond by their random ids: the newest is the newest
		// only once the clock has passed the millisecond of the one before.
		if i == n-1 {
			for !time.Now().Truncate(time.Millisecond).After(last) {
				runtime.Gosched()
			}
		}
		if code, body := do(t, user, "POST", e.url+"/v1/execute", "", `{"name": "delete_repo", "arguments": {"repo": "r`+strconv.Itoa(i)+`"}, "prepare": true}`); code != http.StatusOK {
			t.Fatalf("prepare %d: %d %v", i, code, body)
		}
		last = time.Now()
	}
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.open(e.url, "approvals", "approvals")
	count := func() int { return eval[int](tb, `document.querySelectorAll('#page section.approval').length`) }
	if got := count(); got != store.DefaultPage {
		t.Fatalf("the first page shows %d calls, want %d", got, store.DefaultPage)
	}
	if text := tb.text("#approvals-calls section.approval"); !strings.Contains(text, "r"+strconv.Itoa(n-1)) {
		t.Errorf("the newest call is not first: %s", text)
	}
	tb.do(chromedp.Click(chromedp.CSS(`#approvals-calls button.more`)))
	tb.wait(`#approvals-calls div section.approval`)
	if got := count(); got != n {
		t.Errorf("after More: %d calls shown, want %d", got, n)
	}
}
