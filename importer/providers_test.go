package importer_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

// TestImportMatchesOrCreatesProviders (issue 34): an authorizationCode
// flow becomes a provider created disabled (no client yet) under the
// document's name for it, asking for the scopes the operations need; a
// registered provider with the flow's URLs is matched instead, whatever
// its name; a name another provider holds is not taken over. Plugins name
// the provider chosen, and the result reports it. A dry run creates
// nothing.
func TestImportMatchesOrCreatesProviders(t *testing.T) {
	data, err := os.ReadFile("../plugins/openapi/testdata/oauth2code.yaml")
	if err != nil {
		t.Fatal(err)
	}
	load := func(t *testing.T, text string) *openapi.Document {
		doc, err := openapi.Load([]byte(text), "acme.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	opts := openapi.Options{SourceURL: "https://login.acme.test/openapi.yaml"}
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		key := make([]byte, 32)
		rand.Read(key)
		kr, err := auth.ParseKeyring(base64.StdEncoding.EncodeToString(key), "")
		if err != nil {
			t.Fatal(err)
		}
		svc := connections.New(st, kr, nil, "") // the administrator's, with a key for the client secret
		authProvider := func(name string) string {
			row, err := st.GetPlugin(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := catalog.PluginFromRow(row)
			if err != nil {
				t.Fatal(err)
			}
			return p.AuthConfig.ConnectionProvider()
		}

		res, err := importer.OpenAPI(ctx, st, "acme.yaml", load(t, string(data)), opts, true)
		if err != nil || len(res.Providers) != 1 || res.Providers[0].Status != importer.ProviderCreated || res.Providers[0].Name != "acme_tasks_acme" {
			t.Fatalf("dry run: %+v %v", res, err)
		}
		if ps, _ := svc.Providers(ctx); len(ps) != 0 {
			t.Fatalf("a dry run created %+v", ps)
		}

		res, err = importer.OpenAPI(ctx, st, "acme.yaml", load(t, string(data)), opts, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Providers) != 1 {
			t.Fatalf("providers: %+v", res.Providers)
		}
		r := res.Providers[0]
		if r.Name != "acme_tasks_acme" || r.Status != importer.ProviderCreated || r.Enabled ||
			r.AuthorizationURL != "https://login.acme.test/oauth/authorize" || strings.Join(r.Plugins, ",") != "listTasks,createTask" {
			t.Errorf("created: %+v", r)
		}
		p, err := svc.Provider(ctx, "acme_tasks_acme")
		if err != nil || p.Enabled || p.ClientID != "" || p.ClientSecretSet || !p.PKCE || p.TokenURL != "https://login.acme.test/oauth/token" ||
			strings.Join(p.Scopes, " ") != "tasks:read tasks:write" {
			t.Errorf("the provider stored: %+v %v", p, err)
		}
		if got := authProvider("createTask"); got != "acme_tasks_acme" {
			t.Errorf("createTask's provider: %q", got)
		}

		// The administrator registers the client under a name of their
		// own; another document with the same URLs matches it.
		p.Name, p.ClientID, p.ClientSecret, p.Enabled = "acme", "engine-client", "client-secret-0123456789", true
		if _, err := svc.PutProvider(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := svc.DeleteProvider(ctx, "acme_tasks_acme"); err != nil {
			t.Fatal(err)
		}
		other := strings.Replace(string(data), "title: Acme Tasks", "title: Acme Reports", 1)
		res, err = importer.OpenAPI(ctx, st, "reports.yaml", load(t, other), openapi.Options{SourceURL: opts.SourceURL, Prefix: "rep"}, false)
		if err != nil || len(res.Providers) != 1 || res.Providers[0].Name != "acme" || res.Providers[0].Status != importer.ProviderMatched || !res.Providers[0].Enabled {
			t.Fatalf("matched: %+v %v", res.Providers, err)
		}
		if got := authProvider("rep_listTasks"); got != "acme" {
			t.Errorf("rep_listTasks's provider: %q", got)
		}

		// A provider of other URLs holds the proposed name: the import
		// takes the next free one and leaves it be.
		if _, err := svc.PutProvider(ctx, connections.Provider{Name: "elsewhere_tasks_acme", AuthorizationURL: "https://other.test/a",
			TokenURL: "https://other.test/t", PKCE: true}); err != nil {
			t.Fatal(err)
		}
		moved := strings.NewReplacer("title: Acme Tasks", "title: Elsewhere Tasks", "https://login.acme.test/oauth/token", "https://login.elsewhere.test/token").Replace(string(data))
		res, err = importer.OpenAPI(ctx, st, "elsewhere.yaml", load(t, moved), opts, false)
		if err != nil || len(res.Providers) != 1 || res.Providers[0].Name != "elsewhere_tasks_acme_2" || res.Providers[0].Status != importer.ProviderCreated {
			t.Fatalf("name taken: %+v %v", res.Providers, err)
		}
		if p, err := svc.Provider(ctx, "elsewhere_tasks_acme"); err != nil || p.AuthorizationURL != "https://other.test/a" {
			t.Errorf("the other provider changed: %+v %v", p, err)
		}
	})
}
