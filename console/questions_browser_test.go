package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestQuestionInBrowser (issue 48 point 4): an MCP server asks during a
// call made through POST /v1/execute, which cannot ask the person in its
// own channel; the user opens Approvals in chromium and reads which server
// asks, during which tool, its message, and a form drawn from its
// requestedSchema with the defaults filled (in English and Chinese);
// a value outside the enum is refused naming the field, and the question
// still waits; the answer reaches the upstream and the call answers. A
// link question shows the link and its host, and the engine never opens
// it.
func TestQuestionInBrowser(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, "sqlite")
	e := newEnv(t, st, newMasterKey())
	admin := e.client()
	e.signIn(admin, adminToken)
	_, csrf := sessionOf(t, e, admin)
	up := mcptest.New(t)
	t.Cleanup(up.Close)
	echo := func(res *sdk.ElicitResult, err error) (*sdk.CallToolResult, error) {
		text := ""
		if err != nil {
			text = "error " + err.Error()
		} else {
			b, _ := json.Marshal(res)
			text = "answered " + string(b)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
	}
	up.MCP.AddTool(&sdk.Tool{Name: "order_shirt", Description: "Orders a shirt.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return echo(req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Which shirt? <b>bold</b>",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{
					"size":{"type":"string","title":"Size","enum":["S","M","L"],"default":"M"},
					"quantity":{"type":"integer","minimum":1,"maximum":5,"default":2},
					"gift":{"type":"boolean","default":true},
					"note":{"type":"string","title":"Note","maxLength":40}},"required":["size"]}`)}))
		})
	up.MCP.AddTool(&sdk.Tool{Name: "sign_in", Description: "Signs in.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return echo(req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: "Sign in to the shop",
				URL: "https://login.shop.example/authorize?state=abc", ElicitationID: "el-1"}))
		})
	if code, body := do(t, admin, "POST", e.url+"/v1/mcp/servers", csrf, `{"name": "shop", "url": "`+up.Endpoint+`"}`); code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, body)
	}
	if code, body := do(t, admin, "POST", e.url+"/v1/plugins/import/mcp", csrf, `{"server": "shop"}`); code != http.StatusOK {
		t.Fatalf("import: %d %v", code, body)
	}
	_, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 7, "name": "agent"}`)
	user := tok["token"].(string)
	userClient := &http.Client{Transport: bearerRT(user)}
	execute := func(tool string) chan string {
		out := make(chan string, 1)
		go func() {
			_, body := do(t, userClient, "POST", e.url+"/v1/execute", "", `{"name": "`+tool+`", "arguments": {}}`)
			b, _ := json.Marshal(body)
			out <- string(b)
		}()
		return out
	}
	waitQuestion := func() {
		u := int64(7)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if n, _ := st.CountWaiting(context.Background(), &u); n == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("no question waits")
			}
		}
	}

	done := execute("order_shirt")
	waitQuestion()
	// GET /v1/pending keeps the fields in the upstream's order, not sorted.
	resp, err := userClient.Get(e.url + "/v1/pending")
	if err != nil {
		t.Fatal(err)
	}
	pending, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `"properties":{"size":{"type":"string","title":"Size","enum":["S","M","L"],"default":"M"},"quantity":{`; !strings.Contains(string(pending), want) {
		t.Errorf("GET /v1/pending lacks %s: %s", want, pending)
	}
	tb := newTab(t)
	tb.signIn(e.url, user)
	tb.open(e.url, "approvals", "approvals")
	tb.wait("section.question form")
	text := tb.text("#page")
	for _, want := range []string{`The MCP server "shop" asks`, "order_shirt", "Which shirt? <b>bold</b>", "Size", "required", "Note", "Answer", "Decline"} {
		if !strings.Contains(text, want) {
			t.Errorf("the Approvals page lacks %q: %s", want, text)
		}
	}
	if got := eval[string](tb, `Array.from(document.querySelectorAll('section.question form [name]'), f => f.name).join(',')`); got != "size,quantity,gift,note" {
		t.Errorf("the form's fields are %s, want the upstream's order size,quantity,gift,note", got)
	}
	if n := eval[int](tb, `document.querySelectorAll('section.question b').length`); n != 0 {
		t.Error("the server's message was read as HTML")
	}
	for expr, want := range map[string]string{
		`document.querySelector('section.question [name=size]').selectedOptions[0].textContent`: "M",
		`document.querySelector('section.question [name=quantity]').value`:                      "2",
		`String(document.querySelector('section.question [name=gift]').checked)`:                "true",
	} {
		if got := eval[string](tb, expr); got != want {
			t.Errorf("%s = %q, want %q (the default)", expr, got, want)
		}
	}
	tb.screenshot("question")
	tb.setLang("zh-CN")
	tb.open(e.url, "approvals", "approvals")
	tb.wait("section.question form")
	if text := tb.text("#page"); !strings.Contains(text, `MCP 服务器 "shop" 提问`) || !strings.Contains(text, "回答") {
		t.Errorf("in Chinese: %s", text)
	}
	tb.setLang("en")
	tb.open(e.url, "approvals", "approvals")
	tb.wait("section.question form")

	// A value the schema does not allow (past the page's own bounds):
	// refused naming the field, the question still waits.
	eval[bool](tb, `(() => { const q = document.querySelector('section.question [name=quantity]'); q.removeAttribute('max'); q.value = '9'; return true; })()`)
	tb.do(chromedp.Click(chromedp.CSS(`section.question button.approve`)))
	tb.wait("section.question .outcome .error")
	if got := tb.text("section.question .outcome"); !strings.Contains(got, "content.quantity: expected an integer from 1 to 5") {
		t.Errorf("a value outside the bounds: %s", got)
	}
	tb.open(e.url, "catalog", "catalog")
	tb.open(e.url, "approvals", "approvals")
	tb.wait("section.question form")
	tb.do(chromedp.SetValue(chromedp.CSS(`section.question [name=size]`), "2"), chromedp.SendKeys(chromedp.CSS(`section.question [name=note]`), "blue box"),
		chromedp.Click(chromedp.CSS(`section.question button.approve`)))
	tb.wait("section.question .outcome p.ok")
	select {
	case got := <-done:
		if !strings.Contains(got, `answered {\"action\":\"accept\",\"content\":{\"gift\":true,\"note\":\"blue box\",\"quantity\":2,\"size\":\"L\"}}`) {
			t.Errorf("/v1/execute after the answer: %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("/v1/execute did not answer after the person did")
	}

	// The audit log says who answered and how, never what: one row, from
	// the console.
	events, err := st.ListAdminEvents(context.Background(), store.AdminEventFilter{Kind: "decision"})
	if err != nil || len(events) != 1 || events[0].Action != "answered" || events[0].Via != "console" {
		t.Fatalf("the audit log: %+v %v", events, err)
	}
	if got := api.Summary(api.LangEN, &events[0]); got != "question of the MCP server “shop” during the call “order_shirt” for user 7 answered by user 7 on the approval page" ||
		strings.Contains(events[0].Detail, "blue box") {
		t.Errorf("the audit log says %q (%s)", got, events[0].Detail)
	}

	// A link: shown with its host, opened by nobody.
	done = execute("sign_in")
	waitQuestion()
	tb.open(e.url, "catalog", "catalog")
	tb.open(e.url, "approvals", "approvals")
	tb.wait("section.question .question-link a")
	if href := eval[string](tb, `document.querySelector('section.question .question-link a').href`); href != "https://login.shop.example/authorize?state=abc" {
		t.Errorf("the link: %q", href)
	}
	if got := tb.text("section.question .question-link"); !strings.Contains(got, "login.shop.example. The engine does not open it") {
		t.Errorf("the link's host: %s", got)
	}
	tb.do(chromedp.Click(chromedp.CSS(`section.question button.decline`)))
	tb.wait("section.question .outcome p")
	if got := <-done; !strings.Contains(got, `answered {\"action\":\"decline\"}`) {
		t.Errorf("/v1/execute after declining: %s", got)
	}
}
