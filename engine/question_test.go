package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/idna"
)

const questionSecret = "sk-live-0123456789abcdef"

// TestAsk: the executor's decision on an upstream's question — masked
// (an upstream may echo the credential it was sent, anywhere it writes),
// a link checked and its host shown as a browser reaches it, a link to
// the engine's own pages refused, a form MCP
// forbids refused, refused at once when nobody can be asked — what the
// upstream gets of the answer (only what the person gave, as asked), and
// what the record keeps.
func TestAsk(t *testing.T) {
	size := json.RawMessage(`{"type":"object","properties":{"size":{"type":"string","enum":["S","L"],"default":"S","description":"` + questionSecret + `"},"note":{"type":"string"}}}`)
	form := Question{Server: "shop", Mode: QuestionForm, Message: "Size?", Schema: size}
	accepted := Answer{Action: "accept", Content: map[string]any{"size": "L", "note": "mine: " + questionSecret}}
	link := func(u string) Question {
		return Question{Server: "shop", Mode: QuestionURL, Message: "Sign in", URL: u}
	}
	schema := func(s string) Question {
		return Question{Server: "shop", Mode: QuestionForm, Message: "?", Schema: json.RawMessage(s)}
	}
	for _, tc := range []struct {
		name    string
		q       Question
		answer  Answer // what the person gave (zero: accepted for a form, accept for a link)
		noAsker bool
		noOwn   bool   // BLINDEXEC_BROWSER_URL unset (else https://AI.example.com/engine)
		own     string // BLINDEXEC_BROWSER_URL, when another
		want    Answer // what the upstream gets (zero: the answer as given)
		wantErr string // a substring; "" for none
		host    string // a link's host as shown
	}{
		{name: "form", q: Question{Server: "shop", Mode: QuestionForm, Message: "Size? token " + questionSecret, Schema: size}},
		{name: "https link", q: link("https://login.example/a?t=" + questionSecret), host: "login.example"},
		{name: "link with a port", q: link("https://login.example:8443/a"), host: "login.example:8443"},
		{name: "an internationalised host, in punycode", q: link("https://аpple.example/login"), host: "xn--pple-43d.example"},
		{name: "punycode as written", q: link("https://xn--pple-43d.example/"), host: "xn--pple-43d.example"},
		{name: "an IPv6 host", q: link("http://[2001:db8::1]:8080/x"), host: "[2001:db8::1]:8080"},
		{name: "the secret as the elicitation id", q: Question{Server: "shop", Mode: QuestionURL, Message: "Sign in", URL: "https://login.example/", ElicitationID: questionSecret}, host: "login.example"},
		{name: "javascript link", q: link("javascript:alert(1)"), wantErr: "not an absolute http or https URL"},
		{name: "data link", q: link("data:text/html,<script>alert(1)</script>"), wantErr: "not an absolute http or https URL"},
		{name: "relative link", q: link("/login"), wantErr: "not an absolute http or https URL"},
		{name: "userinfo spoofing the host", q: link("https://bank.example@evil.example/"), wantErr: "carries a user name before its host"},
		{name: "userinfo with a password", q: link("https://bank.example:x@evil.example/"), wantErr: "carries a user name before its host"},
		{name: "a backslash before @", q: link(`https://evil.example\@bank.example/`), wantErr: "not an absolute http or https URL"},
		{name: "a host no browser reaches", q: link("https://xn--a.example/"), wantErr: "no host a browser would reach"},
		{name: "another user's start URL at the engine", q: link("https://ai.example.com/engine/oauth/start/Q3vXhandle"), wantErr: "leads to the engine's own pages (ai.example.com)"},
		{name: "the engine's console, written otherwise", q: link("http://AI.EXAMPLE.COM.:8080/console/#/credentials/9"), wantErr: "leads to the engine's own pages"},
		{name: "the engine's host in other letters", q: link("https://ａｉ.example.com/"), wantErr: "leads to the engine's own pages"},
		{name: "a subdomain of the engine's host", q: link("https://login.ai.example.com/"), host: "login.ai.example.com"},
		// A browser reads an IPv4 host in hex, octal, decimal or short
		// form, an IPv6 one in any of its spellings: the engine at an
		// address is refused however the link writes it.
		{name: "the engine's IPv4 address in hex", q: link("http://0x0a.0.0.5:8080/console/"), own: "http://10.0.0.5:8080", wantErr: "leads to the engine's own pages (10.0.0.5)"},
		{name: "the engine's IPv4 address as one number", q: link("http://167772165/"), own: "http://10.0.0.5:8080", wantErr: "leads to the engine's own pages"},
		{name: "the engine's IPv4 address in octal, short", q: link("http://012.5./"), own: "http://10.0.0.5:8080", wantErr: "leads to the engine's own pages"},
		{name: "the engine's IPv4 address in full-width digits", q: link("http://１０.０.０.５/"), own: "http://10.0.0.5:8080", wantErr: "leads to the engine's own pages"},
		{name: "the engine's IPv4 address mapped in IPv6", q: link("http://[::ffff:10.0.0.5]/"), own: "http://10.0.0.5:8080", wantErr: "leads to the engine's own pages"},
		{name: "the engine's IPv6 address written in full", q: link("http://[fd00:0:0:0:0:0:0:5]/"), own: "http://[FD00::5]:8080", wantErr: "leads to the engine's own pages (fd00::5)"},
		{name: "another address in hex, shown as reached", q: link("http://0x0a.0.0.6/"), own: "http://10.0.0.5:8080", host: "10.0.0.6"},
		{name: "an IPv4 host no browser reaches", q: link("http://10.0.0.256/"), own: "http://10.0.0.5:8080", wantErr: "no host a browser would reach"},
		// The person's own machine and its link: whatever listens there
		// (a developer's server, a router's page, the cloud's metadata)
		// is not the upstream's to send a person to, however written.
		{name: "localhost", q: link("http://localhost:8080/admin"), wantErr: "leads to the person's own machine or its link (localhost)"},
		{name: "localhost in capitals, with its dot", q: link("http://LOCALHOST.:3000/"), wantErr: "leads to the person's own machine"},
		{name: "localhost in full-width letters", q: link("http://ｌｏｃａｌｈｏｓｔ/"), wantErr: "leads to the person's own machine"},
		{name: "a name under localhost", q: link("http://app.localhost:5173/"), wantErr: "leads to the person's own machine or its link (app.localhost)"},
		{name: "IPv4 loopback", q: link("http://127.0.0.1:631/"), wantErr: "leads to the person's own machine or its link (127.0.0.1)"},
		{name: "IPv4 loopback, short", q: link("http://127.1/"), wantErr: "(127.0.0.1)"},
		{name: "IPv4 loopback as one number", q: link("http://2130706433/"), wantErr: "(127.0.0.1)"},
		{name: "IPv4 loopback in hex", q: link("http://0x7f.0.0.2/"), wantErr: "(127.0.0.2)"},
		{name: "IPv6 loopback", q: link("http://[::1]:8080/x"), wantErr: "(::1)"},
		{name: "IPv6 loopback written in full", q: link("http://[0:0:0:0:0:0:0:1]/"), wantErr: "(::1)"},
		{name: "IPv4 loopback mapped in IPv6", q: link("http://[::ffff:127.0.0.1]/"), wantErr: "(127.0.0.1)"},
		{name: "the unspecified address", q: link("http://0.0.0.0:8080/"), wantErr: "(0.0.0.0)"},
		{name: "the unspecified address as a number", q: link("http://0/"), wantErr: "(0.0.0.0)"},
		{name: "the IPv6 unspecified address", q: link("http://[::]/"), wantErr: "(::)"},
		{name: "the cloud's metadata address", q: link("http://169.254.169.254/latest/meta-data/"), wantErr: "(169.254.169.254)"},
		{name: "IPv6 link-local with a zone", q: link("http://[fe80::1%25eth0]/"), wantErr: "(fe80::1)"},
		{name: "a name that begins as localhost", q: link("https://localhost.example.com/"), host: "localhost.example.com"},
		{name: "a name ending in localhost, no dot", q: link("https://notlocalhost/"), host: "notlocalhost"},
		{name: "a private address", q: link("http://192.168.1.1/"), host: "192.168.1.1"},
		{name: "the engine's host, no browser URL set", q: link("https://ai.example.com/engine/oauth/start/x"), noOwn: true, host: "ai.example.com"},
		{name: "unknown mode", q: Question{Server: "shop", Mode: "telepathy", Message: "?"}, wantErr: `unknown elicitation mode "telepathy"`},
		{name: "nested object", q: schema(`{"type":"object","properties":{"card":{"type":"object","properties":{"number":{"type":"string"}}}}}`), wantErr: "properties.card: a nested object"},
		{name: "list of objects", q: schema(`{"type":"object","properties":{"cards":{"type":"array","items":{"type":"object","properties":{"n":{"type":"string"}}}}}}`), wantErr: "properties.cards: items: expected enum values"},
		{name: "a field's $ref", q: schema(`{"type":"object","properties":{"card":{"$ref":"#/$defs/card"}},"$defs":{"card":{"type":"string"}}}`), wantErr: "properties.card: $ref"},
		{name: "the form's $ref", q: schema(`{"$ref":"#/$defs/f","$defs":{"f":{"type":"object","properties":{"pin":{"type":"string"}}}}}`), wantErr: "$ref: a reference"},
		{name: "not an object", q: schema(`{"type":"string"}`), wantErr: `type: expected "object"`},
		{name: "a boolean schema field", q: schema(`{"type":"object","properties":{"x":true}}`), wantErr: "properties.x"},
		{name: "a list of titled values", q: schema(`{"type":"object","properties":{"tags":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}`),
			answer: Answer{Action: "accept", Content: map[string]any{"tags": []any{"a"}}}},
		{name: "a list of titled values, one not offered", q: schema(`{"type":"object","properties":{"tags":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}`),
			answer: Answer{Action: "accept", Content: map[string]any{"tags": []any{"zz"}}}, wantErr: "not one the question asked for"},
		{name: "an object where a titled value is", q: schema(`{"type":"object","properties":{"tags":{"type":"array","items":{"anyOf":[{"const":{"a":1},"title":"A"}]}}}}`),
			answer: Answer{Action: "accept", Content: map[string]any{"tags": []any{map[string]any{"a": 1.0}}}}, wantErr: "not one the question asked for"},
		{name: "nobody to ask", q: form, noAsker: true, wantErr: "nobody can be asked: the call's client cannot be asked"},
		{name: "too large", q: Question{Server: "shop", Mode: QuestionForm, Message: strings.Repeat("Size? ", 3000)}, wantErr: "the question is 18004 bytes, more than the 16384 a question may be"},
		{name: "an enormous enum", q: schema(`{"type":"object","properties":{"x":{"type":"string","enum":["` + strings.Repeat(`a","`, 5000) + `b"]}}}`), wantErr: "more than the 16384 a question may be"},
		{name: "largest kept", q: Question{Server: "shop", Mode: QuestionForm, Message: strings.Repeat("s", MaxQuestion-4-32),
			Schema: json.RawMessage(`{"enum":["S","L"],"default":"S"}`)}, answer: Answer{Action: "decline"}},
		{name: "declined carrying content", q: form, answer: Answer{Action: "decline", Content: map[string]any{"note": "typed, then declined"}}, want: Answer{Action: "decline"}},
		{name: "cancelled carrying content", q: form, answer: Answer{Action: "cancel", Content: map[string]any{"note": "x"}}, want: Answer{Action: "cancel"}},
		{name: "accepted, a field not asked", q: form, answer: Answer{Action: "accept", Content: map[string]any{"size": "L", "password": "hunter2"}}, wantErr: "the answer given is not one the question asked for"},
		{name: "a link accepted with content", q: link("https://login.example/"), host: "login.example", answer: Answer{Action: "accept", Content: map[string]any{"code": "123"}}, wantErr: "not one the question asked for"},
		{name: "huge content", q: form, answer: Answer{Action: "accept", Content: map[string]any{"note": strings.Repeat("x", MaxAnswer)}}, wantErr: "more than the 16384 an answer may be"},
		{name: "no action", q: form, answer: Answer{Action: "yes"}, wantErr: "not one the question asked for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Prepared{Credentials: map[string]string{"token": questionSecret}, browserURL: "https://AI.example.com/engine"}
			if tc.noOwn {
				p.browserURL = ""
			} else if tc.own != "" {
				p.browserURL = tc.own
			}
			given := tc.answer
			if given.Action == "" {
				given = Answer{Action: "accept"}
				if tc.q.Mode == QuestionForm {
					given = accepted
				}
			}
			var asked []Question
			ctx := context.Background()
			if !tc.noAsker {
				ctx = WithAsker(ctx, func(_ context.Context, q Question) (Answer, error) {
					asked = append(asked, q)
					return given, nil
				})
			}
			got, err := p.Ask(ctx, tc.q)
			want := tc.want
			if want.Action == "" {
				want = given
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Ask = %+v, %v; want error with %q", got, err, tc.wantErr)
				}
				_, nobody := errors.AsType[*NobodyToAskError](err)
				_, refused := errors.AsType[*AnswerError](err)
				if !nobody && !refused || nobody != (len(asked) == 0) {
					t.Errorf("error %T after %d questions: want *NobodyToAskError before asking, *AnswerError after", err, len(asked))
				}
				if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "123") {
					t.Errorf("the upstream reads what the person typed in the error: %v", err)
				}
			} else if b, w := mustJSON(got), mustJSON(want); err != nil || b != w {
				t.Errorf("Ask = %s, %v; want %s", b, err, w)
			}
			if len(asked) == 1 {
				b, _ := json.Marshal(asked[0])
				if strings.Contains(string(b), questionSecret) || strings.Contains(asked[0].Prompt(), questionSecret) {
					t.Errorf("the person was shown the credential: %s", b)
				}
				if !strings.Contains(asked[0].Prompt(), `The MCP server "shop" asks: `) {
					t.Errorf("prompt %q does not name the server", asked[0].Prompt())
				}
				if tc.q.Mode == QuestionURL && (asked[0].Host() != tc.host || !strings.Contains(asked[0].Prompt(), "a link to "+tc.host+",")) {
					t.Errorf("host %q, prompt %q; want the host %q", asked[0].Host(), asked[0].Prompt(), tc.host)
				}
				if tc.q.Schema != nil && len(tc.q.Schema) == len(size) && !strings.Contains(string(asked[0].Schema), `"enum":["S","L"],"default":"S"`) {
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

// answerRows is an AnswerLog keeping what it was given.
type answerRows []Answer

func (r *answerRows) Answered(_ context.Context, _ Question, a Answer) error {
	*r = append(*r, a)
	return nil
}

// TestAskLogsAnswers: Ask hands the audit log (Executor.Answers) every
// answer a person gave that goes upstream, as it goes — a decline
// without the content the client sent with it — and nothing else: no
// answer nobody gave (a question closed unanswered is answered cancel), no
// answer the question did not ask for, no question nobody was asked.
func TestAskLogsAnswers(t *testing.T) {
	form := Question{Server: "shop", Mode: QuestionForm, Message: "Size?", Schema: json.RawMessage(`{"type":"object","properties":{"size":{"type":"string"}}}`)}
	by := &Answerer{Actor: "user 7", Via: "mcp", Route: RouteElicitation}
	for _, tc := range []struct {
		name    string
		given   Answer
		noAsker bool
		want    []Answer
	}{
		{name: "accepted", given: Answer{Action: "accept", Content: map[string]any{"size": "L"}, By: by},
			want: []Answer{{Action: "accept", Content: map[string]any{"size": "L"}, By: by}}},
		{name: "declined, its content dropped", given: Answer{Action: "decline", Content: map[string]any{"size": "L"}, By: by},
			want: []Answer{{Action: "decline", By: by}}},
		{name: "closed unanswered", given: Answer{Action: "cancel"}},
		{name: "not asked for", given: Answer{Action: "accept", Content: map[string]any{"pin": "1234"}, By: by}},
		{name: "nobody to ask", noAsker: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rows answerRows
			p := &Prepared{answers: &rows, log: slog.Default()}
			ctx := context.Background()
			if !tc.noAsker {
				ctx = WithAsker(ctx, func(context.Context, Question) (Answer, error) { return tc.given, nil })
			}
			p.Ask(ctx, form)
			if got, want := mustJSON(rows), mustJSON(tc.want); got != want {
				t.Errorf("logged %s, want %s", got, want)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
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

// FuzzLinkHost: a link an upstream sends that unshowable lets through
// leads, as Go's own net/url and netip read its host, to no loopback,
// link-local or unspecified address, to no localhost, and not to the
// engine's own host; read again with the WHATWG IPv4 forms written out
// independently (inet_aton's), and by idna's display profile, the same.
func FuzzLinkHost(f *testing.F) {
	for _, u := range []string{
		"https://a.example/x", "http://[2001:db8::1]:8080/x", "https://ai.example.com/engine/oauth/start/Q3vXhandle",
		"http://AI.EXAMPLE.COM.:8080/console/", "https://ａｉ.example.com/", "http://localhost:8080/admin", "http://LOCALHOST.:3000/",
		"http://ｌｏｃａｌｈｏｓｔ/", "http://app.localhost:5173/", "http://127.0.0.1:631/", "http://127.1/", "http://2130706433/",
		"http://0x7f.0.0.2/", "http://[::1]:8080/x", "http://[0:0:0:0:0:0:0:1]/", "http://[::ffff:127.0.0.1]/",
		"http://169.254.169.254/latest/meta-data/", "http://[fe80::1%25eth0]/", "https://localhost.example.com/", "https://notlocalhost/",
		"http://0/", "http://0.0.0.0/", "http://[::]/", "http://017700000001/", "http://127。0。0。1/", "http://%6c%6fcalhost/",
		"http://localhost%2e/", "http://[::ffff:169.254.169.254]/", "http://0x7f000001/", "http://127.0.0.1.:80/",
	} {
		f.Add(u)
	}
	const own = "https://ai.example.com/engine"
	ownName := ownHost(own)
	f.Fuzz(func(t *testing.T, link string) {
		if (Question{Mode: QuestionURL, URL: link}).unshowable(ownName) != "" {
			return
		}
		u, err := url.Parse(link)
		if err != nil {
			t.Fatalf("%q accepted, and net/url cannot parse it: %v", link, err)
		}
		h := u.Hostname()
		readings := []string{h}
		if a, err := idna.Display.ToASCII(h); err == nil {
			readings = append(readings, a)
		}
		if a, err := idna.Lookup.ToUnicode(h); err == nil {
			readings = append(readings, a)
		}
		for _, r := range readings {
			r = strings.TrimSuffix(strings.ToLower(r), ".")
			if r == "localhost" || strings.HasSuffix(r, ".localhost") || r == ownName {
				t.Fatalf("%q accepted: its host reads %q", link, r)
			}
			addrs := []netip.Addr{}
			if a, err := netip.ParseAddr(r); err == nil {
				addrs = append(addrs, a)
			}
			if ip := net.ParseIP(r); ip != nil {
				a, _ := netip.AddrFromSlice(ip)
				addrs = append(addrs, a)
			}
			if a, ok := inetAton(r); ok {
				addrs = append(addrs, a)
			}
			for _, a := range addrs {
				a = a.Unmap().WithZone("")
				if a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsUnspecified() || a.String() == ownName {
					t.Fatalf("%q accepted: its host reads %s", link, a)
				}
			}
		}
	})
}

// inetAton reads s as C's inet_aton does, which browsers' IPv4 parser
// follows: one to four parts, each decimal, 0x hex or 0-led octal, the
// last filling the bytes left.
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		var n uint64
		var err error
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			n, err = strconv.ParseUint(p[2:], 16, 32)
		case len(p) > 1 && p[0] == '0':
			n, err = strconv.ParseUint(p[1:], 8, 32)
		default:
			n, err = strconv.ParseUint(p, 10, 32)
		}
		if err != nil {
			return netip.Addr{}, false
		}
		room := uint(8)
		if i == len(parts)-1 {
			room = 8 * uint(5-len(parts))
		}
		if n >= 1<<room {
			return netip.Addr{}, false
		}
		v = v<<room | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
