package engine

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/plugins"
)

// FuzzKeyGoesToItsOrigin: the where-keys-go rule (hosts76) places a
// plugin's stored keys at auth.Origin of its base_url, the origin the
// import's settleHosts and the executor's Catalog.Elsewhere compare; the
// request the engine then sends must go there and nowhere else. For any
// base_url a plugin is accepted with (an imported document's server, a row
// written by SQL) and any value of its path argument, the request built
// goes to that origin, or the base_url names none (a template in its host:
// not fixed, refused where the catalog reads the key) or the call is
// refused.
func FuzzKeyGoesToItsOrigin(f *testing.F) {
	for _, s := range [][2]string{
		{"https://api.example/v1/{p}", "x"},
		{"https://api.example/{p}", "@evil.example"},
		{"https://u{p}@api.example/v1", "@evil.example:"},
		{"https://u{p}@api.example/v1", "/evil.example?"},
		{"https://api.example{p}/v1", ".evil.example"},
		{"https://api.example:{p}/v1", "8443"},
		{"HTTPS://API.example/{p}", "x"},
		{"https://api.example#{p}", "@evil.example"},
		{"https://api.example?{p}", "#@evil.example"},
		{"{p}://api.example/", "https"},
		{"https://[::1]:8080/{p}", "x"},
		{"https://api.g\u0130thub.example/{p}", "x"},
		{"https://a\u10a0b.example/{p}", "x"},
		{"https://b\u00fccher.example/{p}", "x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, base, value string) {
		doc, _ := json.Marshal(map[string]any{
			"name": "t", "description": "d",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"p": map[string]any{"type": "string"}}},
			"execution":  map[string]any{"method": "GET", "base_url": base},
		})
		p, err := plugins.ParseJSON(doc)
		if err != nil {
			return
		}
		o := auth.Origin(p.Execution.BaseURL)
		if o == "" {
			return // not fixed: no stored key the catalog reads goes to it
		}
		schema, err := schemaOf(p)
		if err != nil {
			return
		}
		out, err := buildRequest(p, map[string]any{"p": value}, schema)
		if err != nil {
			return
		}
		req, err := out.newRequest(context.Background())
		if err != nil {
			return
		}
		ou, err := url.Parse(o)
		if err != nil {
			t.Fatalf("base_url %q: its keys are placed at %q, which does not parse: %v", base, o, err)
		}
		if got, want := egresstest.Dialled(req.URL), egresstest.Dialled(ou); got != want || !strings.EqualFold(req.URL.Scheme, ou.Scheme) {
			t.Fatalf("base_url %q, p %q: the request %s dials %s, its keys are placed at %s (%s)", base, value, req.URL, got, o, want)
		}
	})
}
