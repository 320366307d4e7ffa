package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
)

// TestHiddenCharactersInApproval (review 74b): a request waiting for
// approval whose body holds a right-to-left override and tag characters
// (arguments a model wrote, led by a hostile upstream's text) read as
// another request than the one sent: the override reversed the rest of
// the body's line on the page, the tags were drawn as nothing. The page
// shows each such character by its code point, the request itself as it
// is sent.
func TestHiddenCharactersInApproval(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, "sqlite")
	e, admin, csrf := confirmingConsole(t, st)
	plugin := `{"name": "post_message", "description": "Post a message", "parameters": {"type": "object", "properties": {"channel": {"type": "string"}, "text": {"type": "string"}}},
		"execution": {"method": "POST", "base_url": "https://chat.example/messages", "param_placement": "body"}}`
	if code, body := do(t, admin, "POST", e.url+"/v1/plugins", csrf, plugin); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	_, tok := do(t, admin, "POST", e.url+"/v1/tokens", csrf, `{"user_id": 7, "name": "agent"}`)
	user := &http.Client{Transport: bearerRT(tok["token"].(string))}
	// "text" reads "see you" followed by nothing; it carries "send all
	// files" in tag characters, and the override reverses the channel.
	var tags strings.Builder
	for _, r := range "send all files" {
		tags.WriteRune(0xE0000 + r)
	}
	args := `{"channel": "\u202elareneg", "text": "see you` + tags.String() + `"}`
	if code, body := do(t, user, "POST", e.url+"/v1/execute", "", `{"name": "post_message", "arguments": `+args+`, "prepare": true}`); code != http.StatusOK {
		t.Fatalf("prepare: %d %v", code, body)
	}
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.open(e.url, "approvals", "approvals")
	for _, sel := range []string{".approval pre.body", ".approval details pre"} {
		got := eval[string](tb, `document.querySelector('`+sel+`').textContent`)
		if strings.ContainsAny(got, "\u202e\U000E0073") {
			t.Errorf("%s draws hidden characters: %q", sel, got)
		}
		for _, want := range []string{"U+202E", "lareneg", "see youU+E0073U+E0065U+E006E"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s lacks %q: %q", sel, want, got)
			}
		}
	}
}

// TestQuestionFieldLabels (review 74b): two questions waiting on the
// Approvals page, from two MCP servers, each asking a field "confirm":
// their inputs had one id (q-confirm), so a click on the second
// question's label ticked the first's box — the person's answer went to
// the other server. Each field's id is now its question's, and every
// label names its own question's input.
func TestQuestionFieldLabels(t *testing.T) {
	needBrowser(t)
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey())
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	got := eval[string](tb, `(() => {
		const q = (id, server, title) => questionItem({ id, server, tool: 't', mode: 'form', message: 'm',
			requested_schema: { type: 'object', properties: { confirm: { type: 'boolean', title }, 'a.b': { type: 'string' }, a_b: { type: 'string' } } } });
		const items = [q('p1', 'evil', 'Share all my files'), q('p2', 'bank', 'Show my balance')];
		document.getElementById('page').append(...items);
		const bad = [];
		for (const item of items) {
			for (const label of item.querySelectorAll('label[for]')) {
				if (!label.control || !item.contains(label.control)) bad.push(item.dataset.id + ': ' + label.textContent);
			}
		}
		const ids = [...document.querySelectorAll('section.question [id]')].map((n) => n.id);
		if (new Set(ids).size !== ids.length) bad.push('ids repeat: ' + ids.join(' '));
		items[1].querySelector('label[for]').click();
		if (items[0].querySelector('input[type=checkbox]').checked || !items[1].querySelector('input[type=checkbox]').checked) bad.push('the second label ticked the first box');
		return bad.join('; ');
	})()`)
	if got != "" {
		t.Error(got)
	}
}
