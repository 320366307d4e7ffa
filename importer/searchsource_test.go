package importer_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/toolsearch"
)

const cloudDoc = `openapi: 3.0.3
info: {title: Hetzner Cloud API, version: "1.0"}
servers: [{url: "https://api.hetzner.cloud/v1"}]
tags:
  - name: Floating IPs
    description: A static public address you can move between servers.
paths:
  /servers:
    get: {operationId: list_servers, summary: Get all Servers, responses: {'200': {description: ok}}}
  /floating_ips:
    post: {operationId: create_floating_ip, summary: Create a Floating IP, tags: [Floating IPs], responses: {'201': {description: ok}}}
`

const otherCloudDoc = `openapi: 3.0.3
info: {title: DigitalOcean API, version: "2.0"}
servers: [{url: "https://api.digitalocean.com/v2"}]
paths:
  /droplets:
    get: {operationId: list_droplets, summary: List all servers (droplets), description: Lists every server of the account., responses: {'200': {description: ok}}}
`

// TestSourceSearch: a sync records the document's title and tag
// descriptions with its source, an administrator's aliases survive the
// next sync, and the catalog hands them to tool search: a request naming
// the source, or one of its aliases, finds its tools first (issue 49
// point 1).
func TestSourceSearch(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		sync := func(loc, doc, prefix string, force bool) int64 {
			t.Helper()
			d, err := openapi.Load([]byte(doc), loc)
			if err != nil {
				t.Fatal(err)
			}
			res, err := importer.OpenAPI(ctx, st, loc, d, openapi.Options{Prefix: prefix, Force: force}, false)
			if err != nil {
				t.Fatal(err)
			}
			return res.SourceID
		}
		hz := sync("https://example.com/hetzner.yaml", cloudDoc, "hz", false)
		sync("https://example.com/do.yaml", otherCloudDoc, "do", false)
		before, err := st.Versions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SetImportSourceAliases(ctx, hz, []string{"赫兹纳", "my provider"}); err != nil {
			t.Fatal(err)
		}
		// an alias written, by any writer, reloads the catalog's index
		if after, _ := st.Versions(ctx); after.Plugins == before.Plugins {
			t.Error("aliases set: the catalog's counter did not move")
		}
		sync("https://example.com/hetzner.yaml", strings.Replace(cloudDoc, "Get all Servers", "Get all the Servers", 1), "hz", true)

		changes := store.NewWatcher(st, 0, nil)
		if _, err := changes.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		ps, err := catalog.New(st, changes, nil).EnabledPlugins(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var src = ps[slices.IndexFunc(ps, func(p *plugins.Plugin) bool { return p.Name == "hz_create_floating_ip" })].Source
		if src == nil || src.Name != "hz" || src.Title != "Hetzner Cloud API" || !slices.Equal(src.Aliases, []string{"赫兹纳", "my provider"}) ||
			src.TagDescriptions["Floating IPs"] == "" {
			t.Fatalf("source = %+v", src)
		}
		ix, err := toolsearch.New(ps)
		if err != nil {
			t.Fatal(err)
		}
		for q, want := range map[string]string{
			"list all servers":                   "do_list_droplets",
			"list all servers on hetzner":        "hz_list_servers",
			"赫兹纳 list all servers":               "hz_list_servers",
			"list all servers of my provider":    "hz_list_servers",
			"a static address I can move around": "hz_create_floating_ip",
		} {
			if rs := ix.Search(q, 3); len(rs) == 0 || rs[0].Name != want {
				t.Errorf("%q: %v, want %s first", q, rs, want)
			}
		}
	})
}
