package engine

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStrictMode: a strict plugin shows the LLM OpenAI's strict form, and
// the nulls the LLM sends for optional arguments it leaves out are dropped
// before validation and encoding; a required nullable argument keeps its
// null.
func TestStrictMode(t *testing.T) {
	up := newUpstream(t, nil)
	h := newHarness(t)
	p := mustPlugin(t, `{"name":"create_note","description":"d","strict":true,
		"parameters":{"type":"object","required":["title","due"],"properties":{
			"title":{"type":"string"},
			"due":{"type":["string","null"]},
			"tags":{"type":"array","items":{"type":"string"}},
			"meta":{"type":"object","properties":{"color":{"type":"string"},"pinned":{"type":"boolean"}}}}},
		"execution":{"method":"POST","base_url":"%s/notes"}}`, up.URL)

	var view map[string]any
	if err := json.Unmarshal(p.Tool(nil).Function.Parameters, &view); err != nil {
		t.Fatal(err)
	}
	if view["additionalProperties"] != false || len(view["required"].([]any)) != 4 || !p.Tool(nil).Function.Strict {
		t.Fatalf("strict view: %v", view)
	}
	tags := view["properties"].(map[string]any)["tags"].(map[string]any)
	if b, _ := json.Marshal(tags); !strings.Contains(string(b), "null") {
		t.Fatalf("an optional argument must become nullable: %s", b)
	}

	res, err := h.call(t, p, `{"title":"t","due":null,"tags":null,"meta":{"color":null,"pinned":true}}`, nil)
	if err != nil || !res.OK {
		t.Fatalf("call: %v %s", err, resultJSON(t, res))
	}
	if got, want := string(up.last(t).Body), `{"due":null,"meta":{"pinned":true},"title":"t"}`; got != want {
		t.Fatalf("body %s, want %s", got, want)
	}

	// Not strict: nulls are the LLM's values, validated as such.
	loose := *p // p is shared (ParseJSON caches): change a copy
	loose.Strict = false
	if _, err := h.call(t, &loose, `{"title":"t","due":null,"tags":null}`, nil); err == nil {
		t.Fatal("a null for a non-nullable argument of a non-strict plugin must be refused")
	}
}
