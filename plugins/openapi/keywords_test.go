package openapi

import (
	"slices"
	"testing"
)

// TestTagsAndKeywords: an operation's tags and x-keywords (an array or a
// comma-separated string) reach the plugin, for tool search.
func TestTagsAndKeywords(t *testing.T) {
	doc := loadDoc(t, []byte(`{"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
	  "servers": [{"url": "https://api.example.com"}],
	  "paths": {
	    "/a": {"get": {"operationId": "a", "tags": ["contacts", "crm"], "x-keywords": ["dedupe", "merge duplicates"], "responses": {"200": {"description": "ok"}}}},
	    "/b": {"get": {"operationId": "b", "x-keywords": "invoice, bill ,", "responses": {"200": {"description": "ok"}}}},
	    "/c": {"get": {"operationId": "c", "responses": {"200": {"description": "ok"}}}}}}`))
	ops, failures, err := Convert(doc, Options{})
	if err != nil || len(failures) > 0 {
		t.Fatal(err, failures)
	}
	got := map[string][2][]string{}
	for _, op := range ops {
		got[op.Plugin.Name] = [2][]string{op.Plugin.Tags, op.Plugin.Keywords}
	}
	for name, want := range map[string][2][]string{
		"a": {{"contacts", "crm"}, {"dedupe", "merge duplicates"}},
		"b": {nil, {"invoice", "bill"}},
		"c": {nil, nil},
	} {
		if !slices.Equal(got[name][0], want[0]) || !slices.Equal(got[name][1], want[1]) {
			t.Errorf("%s: tags %q keywords %q, want %q %q", name, got[name][0], got[name][1], want[0], want[1])
		}
	}
}
