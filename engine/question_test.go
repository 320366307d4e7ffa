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
		{name: "too large", q: Question{Server: "shop", Mode: QuestionForm, Message: strings.Repeat("Size? ", 3000)}, wantErr: "the question is 18004 bytes, more than the 16384 a question may be"},
		{name: "largest kept", q: Question{Server: "shop", Mode: QuestionForm, Message: strings.Repeat("s", MaxQuestion-4-32),
			Schema: json.RawMessage(`{"enum":["S","L"],"default":"S"}`)}, wantAsked: true},
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

// TestCheck: an answer a person gives on the approval page is one the
// question's requestedSchema asks for, or refused naming the field.
func TestCheck(t *testing.T) {
	form := Question{Mode: QuestionForm, Schema: json.RawMessage(`{"type":"object","properties":{
		"size":{"type":"string","enum":["S","L"],"default":"S"},
		"colour":{"type":"string","oneOf":[{"const":"red","title":"Red"},{"const":"blue","title":"Blue"}]},
		"note":{"type":"string","minLength":2,"maxLength":5},
		"count":{"type":"integer","minimum":1,"maximum":3},
		"price":{"type":"number"},
		"gift":{"type":"boolean"},
		"tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":2},
		"blob":{"type":"object"}},"required":["size"]}`)}
	link := Question{Mode: QuestionURL, URL: "https://a.example/"}
	for _, tc := range []struct {
		name string
		q    Question
		a    Answer
		want string // a substring of the error; "" for none
	}{
		{"accepted", form, Answer{Action: "accept", Content: map[string]any{"size": "L", "colour": "red", "note": "hé!", "count": 2.0, "price": 1.5, "gift": true, "tags": []any{"a"}}}, ""},
		{"declined", form, Answer{Action: "decline"}, ""},
		{"cancelled", form, Answer{Action: "cancel"}, ""},
		{"declined with content", form, Answer{Action: "decline", Content: map[string]any{"size": "L"}}, "only an accepted answer carries content"},
		{"no action", form, Answer{Action: "ok"}, `action: expected "accept", "decline" or "cancel"`},
		{"required missing", form, Answer{Action: "accept", Content: map[string]any{"gift": true}}, "content.size: required"},
		{"outside the enum", form, Answer{Action: "accept", Content: map[string]any{"size": "XL"}}, "content.size: expected one of [S L]"},
		{"outside oneOf", form, Answer{Action: "accept", Content: map[string]any{"size": "S", "colour": "green"}}, "content.colour: expected one of [red blue]"},
		{"too short", form, Answer{Action: "accept", Content: map[string]any{"size": "S", "note": "x"}}, "content.note: expected 2 to 5 characters"},
		{"not an integer", form, Answer{Action: "accept", Content: map[string]any{"size": "S", "count": 1.5}}, "content.count: expected an integer"},
		{"over the maximum", form, Answer{Action: "accept", Content: map[string]any{"size": "S", "count": 4.0}}, "content.count: expected an integer from 1 to 3"},
		{"not a number", form, Answer{Action: "accept", Content: map[string]any{"size": "S", "price": "1"}}, "content.price: expected a number"},
		{"not a boolean", form, Answer{Action: "accept", Content: map[string]any{"size": "S", "gift": "yes"}}, "content.gift: expected true or false"},
		{"a list outside its enum", form, Answer{Action: "accept", Content: map[string]any{"size": "S", "tags": []any{"c"}}}, "content.tags: [0]: expected one of [a b]"},
		{"a list too long", form, Answer{Action: "accept", Content: map[string]any{"size": "S", "tags": []any{"a", "b", "a"}}}, "content.tags: expected at most 2 values"},
		{"a field not primitive", form, Answer{Action: "accept", Content: map[string]any{"size": "S", "blob": map[string]any{}}}, `content.blob: a field of type "object" cannot be answered`},
		{"a field not asked", form, Answer{Action: "accept", Content: map[string]any{"size": "S", "card": "4111"}}, "content.card: not a field of the question"},
		{"a link accepted", link, Answer{Action: "accept"}, ""},
		{"a link with content", link, Answer{Action: "accept", Content: map[string]any{"x": "y"}}, "a link's question takes no content"},
		{"an unreadable schema", Question{Mode: QuestionForm, Schema: json.RawMessage(`[1]`)}, Answer{Action: "accept"}, "requestedSchema cannot be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.q.Check(tc.a)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Check = %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzCheck: an upstream writes the schema and a person the answer; Check
// never panics on either.
func FuzzCheck(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string","enum":["x"]}},"required":["a"]}`, `{"a":"x"}`)
	f.Add(`{"properties":{"a":{"type":"array","items":{"type":"array"}}}}`, `{"a":[[1]]}`)
	f.Add(`{"properties":{"a":{"type":"integer","minimum":1e308}}}`, `{"a":1e308}`)
	f.Fuzz(func(t *testing.T, schema, content string) {
		var c map[string]any
		if json.Unmarshal([]byte(content), &c) != nil {
			return
		}
		Question{Mode: QuestionForm, Schema: json.RawMessage(schema)}.Check(Answer{Action: "accept", Content: c})
	})
}
