package openapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestStripeText: Stripe's operations have no summary and HTML
// descriptions; each becomes a tool with a title (its description's first
// sentence) and a plain-text description. The golden file holds every
// operation's title and description.
func TestStripeText(t *testing.T) {
	const name = "stripe/spec3.2022-04-12.e0123a38.json.gz"
	doc, err := Load(readCorpus(t, name), name)
	if err != nil {
		t.Fatal(err)
	}
	ops, _, err := Convert(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	type text struct{ Title, Description string }
	got := map[string]text{}
	markup := regexp.MustCompile(`(?i)</?(p|a|code|strong|em|ul|li|br)\b[^>]*>|&[a-z]+;|&#\d+;`)
	for _, op := range ops {
		p := op.Plugin
		if p.Title == "" {
			t.Errorf("%s: no title", op.Key)
		}
		if m := markup.FindString(p.Title + p.Description); m != "" {
			t.Errorf("%s: markup %q left in %q", op.Key, m, p.Description)
		}
		got[op.Key] = text{p.Title, p.Description}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(got); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden", "stripe-text.json")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, buf.Bytes()) {
		t.Errorf("%s differs from the conversion (run with -update and review the diff)", path)
	}
	// Spot checks a reader can verify against the document.
	for key, w := range map[string]text{
		"POST /v1/refunds":                   {"Create a refund", ""},
		"DELETE /v1/accounts/{account}":      {"With Connect, you can delete accounts you manage", ""},
		"GET /v1/3d_secure/{three_d_secure}": {"Retrieves a 3D Secure object", "Retrieves a 3D Secure object."},
	} {
		if got[key].Title != w.Title || w.Description != "" && got[key].Description != w.Description {
			t.Errorf("%s: title %q, description %q; want %q, %q", key, got[key].Title, got[key].Description, w.Title, w.Description)
		}
	}
}

func TestTitleWithoutSummary(t *testing.T) {
	doc, err := Load([]byte(`{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://api.example.com"}],
	"paths": {
	  "/a": {"get": {"operationId": "a", "description": "<p>Lists the <code>a</code> items, e.g. those of today. Paged.</p>", "responses": {"200": {"description": "ok"}}}},
	  "/b": {"get": {"operationId": "b", "responses": {"200": {"description": "ok"}}}},
	  "/c": {"get": {"operationId": "c", "summary": "Get <b>c</b>", "description": "Whatever.", "responses": {"200": {"description": "ok"}}}}
	}}`), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	ops, _, err := Convert(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"GET /a": {"Lists the a items, e.g. those of today", "Lists the `a` items, e.g. those of today. Paged."},
		"GET /b": {"GET /b", "GET /b"},
		"GET /c": {"Get c", "Get c\n\nWhatever."},
	}
	for _, op := range ops {
		if w := want[op.Key]; op.Plugin.Title != w[0] || op.Plugin.Description != w[1] {
			t.Errorf("%s: title %q, description %q; want %q, %q", op.Key, op.Plugin.Title, op.Plugin.Description, w[0], w[1])
		}
	}
}
