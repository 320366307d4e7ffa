package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const questionSecret = "sk-live-0123456789abcdef"

// TestAsk: the executor's decision on an upstream's question — masked,
// a link checked, refused at once when nobody can be asked — and what the
// record keeps.
func TestAsk(t *testing.T) {
	answer := Answer{Action: "accept", Content: map[string]any{"size": "L", "note": "mine: " + questionSecret}}
	for _, tc := range []struct {
		name      string
		q         Question
		noAsker   bool
		wantAsked bool
		wantErr   string // a substring; "" for none
	}{
		{name: "form", q: Question{Server: "shop", Mode: QuestionForm, Message: "Size? token " + questionSecret,
			Schema: json.RawMessage(`{"type":"object","properties":{"size":{"type":"string","enum":["S","L"],"default":"S","description":"` + questionSecret + `"}}}`)}, wantAsked: true},
		{name: "https link", q: Question{Server: "shop", Mode: QuestionURL, Message: "Sign in", URL: "https://login.example/a?t=" + questionSecret}, wantAsked: true},
		{name: "javascript link", q: Question{Server: "shop", Mode: QuestionURL, Message: "Sign in", URL: "javascript:alert(1)"}, wantErr: "not an absolute http or https URL"},
		{name: "relative link", q: Question{Server: "shop", Mode: QuestionURL, Message: "Sign in", URL: "/login"}, wantErr: "not an absolute http or https URL"},
		{name: "unknown mode", q: Question{Server: "shop", Mode: "telepathy", Message: "?"}, wantErr: `unknown elicitation mode "telepathy"`},
		{name: "nobody to ask", q: Question{Server: "shop", Mode: QuestionForm, Message: "Size?"}, noAsker: true, wantErr: "nobody can be asked: the call's client cannot be asked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Prepared{Credentials: map[string]string{"token": questionSecret}}
			var asked []Question
			ctx := context.Background()
			if !tc.noAsker {
				ctx = WithAsker(ctx, func(_ context.Context, q Question) (Answer, error) {
					asked = append(asked, q)
					return answer, nil
				})
			}
			got, err := p.Ask(ctx, tc.q)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Ask = %+v, %v; want error with %q", got, err, tc.wantErr)
				}
				if _, ok := errors.AsType[*NobodyToAskError](err); !ok {
					t.Errorf("error %T, want *NobodyToAskError", err)
				}
			} else if err != nil || got.Action != "accept" || got.Content["note"] != "mine: "+questionSecret {
				t.Errorf("Ask = %+v, %v; want the person's answer as given", got, err)
			}
			if (len(asked) == 1) != tc.wantAsked {
				t.Fatalf("asked %d times, want asked %v", len(asked), tc.wantAsked)
			}
			if tc.wantAsked {
				b, _ := json.Marshal(asked[0])
				if strings.Contains(string(b), questionSecret) {
					t.Errorf("the person was shown the credential: %s", b)
				}
				if !strings.Contains(asked[0].Prompt(), `The MCP server "shop" asks: `) {
					t.Errorf("prompt %q does not name the server", asked[0].Prompt())
				}
				if tc.q.Mode == QuestionURL && !strings.Contains(asked[0].Prompt(), "login.example") {
					t.Errorf("prompt %q does not show the link's host", asked[0].Prompt())
				}
				if tc.q.Mode == QuestionForm && !strings.Contains(string(asked[0].Schema), `"enum":["S","L"],"default":"S"`) {
					t.Errorf("schema %s not as written", asked[0].Schema)
				}
			}
			rec := p.askedRecord()
			if rec == "" || !json.Valid([]byte(rec)) || strings.Contains(rec, questionSecret) || !strings.Contains(rec, `"server":"shop"`) {
				t.Errorf("record %s", rec)
			}
		})
	}
}

// FuzzAsk: whatever an upstream asks, with a credential anywhere in it,
// neither the person nor the record sees the credential, and the record
// is JSON.
func FuzzAsk(f *testing.F) {
	f.Add("Size?", `{"type":"object"}`, "https://a.example/x", "form")
	f.Add("x", `{"d":"`+questionSecret[:8]+`"}`, "http://h/"+questionSecret, "url")
	f.Add("\xff\x00", `[`, "::", "")
	f.Fuzz(func(t *testing.T, msg, schema, link, mode string) {
		p := &Prepared{Credentials: map[string]string{"token": questionSecret}}
		ctx := WithAsker(context.Background(), func(_ context.Context, q Question) (Answer, error) {
			b, _ := json.Marshal(q)
			if strings.Contains(string(b), questionSecret) || strings.Contains(q.Prompt(), questionSecret) {
				t.Fatalf("the person was shown the credential: %s", b)
			}
			return Answer{Action: "decline"}, nil
		})
		q := Question{Server: "s", Mode: mode, Message: msg + questionSecret, URL: link + questionSecret}
		if json.Valid([]byte(schema)) {
			q.Schema = json.RawMessage(schema)
		}
		p.Ask(ctx, q)
		rec := p.askedRecord()
		if !json.Valid([]byte(rec)) || strings.Contains(rec, questionSecret) {
			t.Fatalf("record %q", rec)
		}
	})
}
