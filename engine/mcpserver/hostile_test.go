package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/questions"
)

// TestHostileUpstreamQuestions: an upstream nobody vetted asks during a
// call (issue 48 point 4), through a client of each era that declared
// elicitation, and on the approval page. A link whose userinfo spoofs its
// host, a link to the engine's own pages (another user's start URL there)
// and forms MCP forbids are refused at once, never shown; a host in
// look-alike letters is shown in punycode; a question passing for the
// engine's own still names the server asking, apart from its message; the
// credential the upstream echoes (in a form, once with an escape) is
// masked wherever the question is shown; the upstream learns only what the person answered as the
// question asked — a decline's content dropped, content not asked for
// never sent (a client of 2026-07-28 is asked again).
func TestHostileUpstreamQuestions(t *testing.T) {
	a := askingEngine(t)
	url, records, st := a.url, a.records, a.st
	all := &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}}
	tests := []struct {
		name string
		tool string
		caps *sdk.ClientCapabilities // nil: none, the question goes on the approval page
		// answers are the client's, in turn (the last one repeated).
		answers []*sdk.ElicitResult
		page    *engine.Answer
		// want and never are substrings of what the upstream learned, by
		// era ("" for both); asked the times the client was asked.
		want  map[string][]string
		never []string
		asked map[string]int
		shown func(t *testing.T, p *sdk.ElicitParams, it *questions.Item)
	}{
		{
			name: "a link whose userinfo spoofs its host: refused at once", tool: "ask_spoof", caps: all,
			want: map[string][]string{"": {"elicitation refused", "carries a user name before its host"}},
		},
		{
			name: "the same on the approval page: refused at once", tool: "ask_spoof", page: &engine.Answer{Action: "accept"},
			want: map[string][]string{"": {"elicitation refused", "carries a user name before its host"}},
		},
		{
			name: "a host in look-alike letters shown in punycode", tool: "ask_idn", caps: all, answers: []*sdk.ElicitResult{{Action: "decline"}},
			want: map[string][]string{"": {`"answer":{"action":"decline"}`}}, asked: map[string]int{"": 1},
			shown: func(t *testing.T, p *sdk.ElicitParams, _ *questions.Item) {
				if !strings.Contains(p.Message, "a link to xn--pple-43d.example,") {
					t.Errorf("message %q does not show the host in punycode", p.Message)
				}
			},
		},
		{
			name: "a look-alike host on the approval page", tool: "ask_idn", page: &engine.Answer{Action: "decline"},
			want: map[string][]string{"": {`"answer":{"action":"decline"}`}},
			shown: func(t *testing.T, _ *sdk.ElicitParams, it *questions.Item) {
				if it.Host != "xn--pple-43d.example" || !strings.Contains(it.Prompt, "xn--pple-43d.example") {
					t.Errorf("page shows the host %q, prompt %q", it.Host, it.Prompt)
				}
			},
		},
		{
			name: "a link to the engine's own pages: refused at once", tool: "ask_engine_link", caps: all,
			want: map[string][]string{"": {"elicitation refused", "the engine's own pages (ai.example.com)"}},
		},
		{
			name: "a link to the engine's own pages on the approval page: refused at once", tool: "ask_engine_link", page: &engine.Answer{Action: "accept"},
			want: map[string][]string{"": {"elicitation refused", "the engine's own pages"}},
		},
		{
			name: "a form by $ref: refused at once", tool: "ask_ref", caps: all,
			want: map[string][]string{"": {"elicitation refused", "$ref"}},
		},
		{
			name: "a form by $ref on the approval page: refused at once", tool: "ask_ref", page: &engine.Answer{Action: "accept"},
			want: map[string][]string{"": {"elicitation refused", "$ref"}},
		},
		{
			name: "a nested form: refused at once", tool: "ask_nested", caps: all,
			want: map[string][]string{"": {`"error":`, "nested"}},
		},
		{
			name: "passing for the engine's own: the server named apart", tool: "ask_impostor", caps: all,
			answers: []*sdk.ElicitResult{{Action: "decline"}}, want: map[string][]string{"": {`"answer":{"action":"decline"}`}}, asked: map[string]int{"": 1},
			shown: func(t *testing.T, p *sdk.ElicitParams, _ *questions.Item) {
				if !strings.HasPrefix(p.Message, `The MCP server "shop" asks: blindexec asks you`) || p.Meta["io.blindexec/mcpServer"] != "shop" {
					t.Errorf("the question %q (_meta %v) passes for the engine's own", p.Message, p.Meta)
				}
			},
		},
		{
			name: "passing for the engine's own on the approval page", tool: "ask_impostor", page: &engine.Answer{Action: "decline"},
			want: map[string][]string{"": {`"answer":{"action":"decline"}`}},
			shown: func(t *testing.T, _ *sdk.ElicitParams, it *questions.Item) {
				if it.Server != "shop" || it.Message != "blindexec asks you to approve the payment of 900 EUR" || !strings.HasPrefix(it.Prompt, `The MCP server "shop" asks: `) {
					t.Errorf("page shows %+v", it)
				}
			},
		},
		{
			name: "the credential echoed in a form", tool: "ask_echo", caps: all, answers: []*sdk.ElicitResult{{Action: "cancel"}},
			want: map[string][]string{"": {`"answer":{"action":"cancel"}`}}, asked: map[string]int{"": 1},
		},
		{
			name: "the credential echoed in a form, on the approval page", tool: "ask_echo", page: &engine.Answer{Action: "cancel"},
			want: map[string][]string{"": {`"answer":{"action":"cancel"}`}},
		},
		{
			name: "the credential echoed in a link and its id", tool: "ask_echo_url", caps: all, answers: []*sdk.ElicitResult{{Action: "decline"}},
			want: map[string][]string{"": {`"answer":{"action":"decline"}`}}, asked: map[string]int{"": 1},
		},
		{
			name: "the credential echoed in a link, on the approval page", tool: "ask_echo_url", page: &engine.Answer{Action: "decline"},
			want: map[string][]string{"": {`"answer":{"action":"decline"}`}},
		},
		{
			name: "declined carrying content: dropped", tool: "ask_form", caps: all,
			answers: []*sdk.ElicitResult{{Action: "decline", Content: map[string]any{"size": "L", "gift": true}}},
			want:    map[string][]string{"": {`"answer":{"action":"decline"}`}}, never: []string{`"size":"L"`}, asked: map[string]int{"": 1},
		},
		{
			name: "accepted with a field not asked: never sent", tool: "ask_form", caps: all,
			answers: []*sdk.ElicitResult{{Action: "accept", Content: map[string]any{"size": "L", "password": "hunter2"}}, {Action: "accept", Content: map[string]any{"size": "S"}}},
			// 2025: the session's answer is refused, the upstream told so;
			// 2026-07-28: the client is asked again and answers as asked.
			want:  map[string][]string{"2025-11-25": {"not one the question asked for"}, "2026-07-28": {`"answer":{"action":"accept","content":{"gift":false,"size":"S"}}`}},
			never: []string{"hunter2"}, asked: map[string]int{"2025-11-25": 1, "2026-07-28": 2},
		},
	}
	for _, tc := range tests {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				var (
					mu  sync.Mutex
					got []*sdk.ElicitParams
				)
				opts := &sdk.ClientOptions{Capabilities: tc.caps}
				if tc.caps != nil {
					opts.ElicitationHandler = func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						mu.Lock()
						defer mu.Unlock()
						got = append(got, req.Params)
						if len(tc.answers) == 0 {
							t.Errorf("the client was asked %+v", req.Params)
							return &sdk.ElicitResult{Action: "cancel"}, nil
						}
						return tc.answers[min(len(got), len(tc.answers))-1], nil
					}
				}
				text, shown := callAsked(t, st, url, version, opts, bearer{"user-7-token"}, tc.tool, tc.page)
				want := tc.want[version]
				if want == nil {
					want = tc.want[""]
				}
				for _, w := range want {
					if !strings.Contains(text, w) {
						t.Errorf("the upstream learned %s, which lacks %s", text, w)
					}
				}
				for _, n := range tc.never {
					if strings.Contains(text, n) {
						t.Errorf("the upstream learned %s, which holds %s", text, n)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				asked, ok := tc.asked[version]
				if !ok {
					asked = tc.asked[""]
				}
				if len(got) != asked {
					t.Fatalf("the client was asked %d times, want %d", len(got), asked)
				}
				var page []*questions.Item
				if shown != nil {
					page = shown()
				}
				for _, p := range got {
					if b, _ := json.Marshal(p); strings.Contains(string(b), mcpSecret) {
						t.Errorf("the client was shown the credential: %s", b)
					}
				}
				for _, it := range page {
					// The schema decoded too: the upstream's bytes are kept,
					// and ask_echo writes the credential with an escape.
					var schema any
					json.Unmarshal(it.RequestedSchema, &schema)
					b, _ := json.Marshal(it)
					s, _ := json.Marshal(schema)
					if strings.Contains(string(b)+string(s), mcpSecret) {
						t.Errorf("the approval page shows the credential: %s", b)
					}
				}
				if tc.shown != nil {
					var p *sdk.ElicitParams
					var it *questions.Item
					if len(got) > 0 {
						p = got[0]
					}
					if len(page) > 0 {
						it = page[0]
					}
					if p == nil && it == nil {
						t.Fatal("the question was shown nowhere")
					}
					tc.shown(t, p, it)
				}
			})
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(records()) < 2*len(tests) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, r := range records() {
		if strings.Contains(r.Questions, mcpSecret) || strings.Contains(r.Questions, "hunter2") {
			t.Errorf("a record keeps the credential or content not asked for: %s", r.Questions)
		}
	}
}
