package toolsearch_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/toolsearch"
	openai "github.com/sashabaranov/go-openai"
)

func tool(name, title, desc string) *plugins.Plugin {
	return &plugins.Plugin{Name: name, Title: title, Description: desc,
		Parameters: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"The record's id."}}}`),
		Execution:  plugins.Execution{Method: "POST", BaseURL: "https://api.example.com/" + name}}
}

func expansion(m *openaitest.Server, st *store.Store) *toolsearch.Expansion {
	return &toolsearch.Expansion{Client: openai.NewClientWithConfig(m.Config()), Model: "test-model", Store: st, Concurrency: 1}
}

func answer(rs ...string) openaitest.Turn {
	b, _ := json.Marshal(rs)
	return openaitest.Turn{Content: string(b)}
}

// TestExpansionOncePerContent: each tool is asked about once; another
// replica (or a restart) asks nothing; a changed tool is asked again, alone.
func TestExpansionOncePerContent(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		m := openaitest.New(t)
		ps := []*plugins.Plugin{
			tool("xero_void", "Void an invoice", "Sets an invoice's status to voided."),
			tool("xero_contacts", "List contacts", "Returns the organisation's contacts."),
			tool("hetzner_reboot", "Soft-reboot a server", "Reboots a server gracefully."),
		}
		m.Script(answer("cancel the bill"), answer("who's in our address book"), answer("restart my machine"))
		e := expansion(m, st)
		if n, err := e.Update(ctx, ps); err != nil || n != 3 {
			t.Fatalf("first Update: asked %d, %v; want 3", n, err)
		}
		other := expansion(m, st)
		if n, err := other.Update(ctx, ps); err != nil || n != 0 {
			t.Fatalf("another replica's Update: asked %d, %v; want 0", n, err)
		}
		changed := *ps[1]
		changed.Description = "Returns every contact of the organisation, customers and suppliers."
		m.Script(answer("show me all our suppliers"))
		if n, err := other.Update(ctx, []*plugins.Plugin{ps[0], &changed, ps[2]}); err != nil || n != 1 {
			t.Fatalf("Update after a change: asked %d, %v; want 1", n, err)
		}
		if len(m.Requests()) != 4 || m.Pending() != 0 {
			t.Fatalf("the model got %d requests (%d answers left), want 4", len(m.Requests()), m.Pending())
		}
		live := &toolsearch.Live{Expansion: other}
		if err := live.Rebuild(ctx, []*plugins.Plugin{ps[0], &changed, ps[2]}); err != nil {
			t.Fatal(err)
		}
		for q, want := range map[string]string{"cancel the bill": "xero_void", "restart my machine": "hetzner_reboot", "show me all our suppliers": "xero_contacts"} {
			if rs := live.Search(q, 1); len(rs) == 0 || rs[0].Name != want {
				t.Errorf("%q: %v, want %s first", q, rs, want)
			}
		}
	})
}

// TestExpansionPromptHoldsNoSecret: the model sees what a tool does, never
// a credential, a header, an address, a fixed parameter or a value.
func TestExpansionPromptHoldsNoSecret(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	m := openaitest.New(t)
	p := tool("billing_charge", "Charge a card", "Charges the customer's card. See https://docs.example.com/charge?key=url-secret-1.")
	p.Parameters = json.RawMessage(`{"type":"object","properties":{
		"amount":{"type":"integer","description":"Amount in cents.","default":4242,"enum":[4242]},
		"api_version":{"type":"string","description":"Pinned version fixed-desc-2"}}}`)
	p.FixedParams = map[string]any{"api_version": "fixed-value-2024"}
	p.AuthConfig = plugins.AuthConfig{Type: "bearer", Token: "sk-live-token-3"}
	p.Execution.Headers = map[string]string{"X-Api-Key": "header-secret-4"}
	p.Execution.Query = map[string]string{"account": "query-secret-5"}
	p.Execution.BaseURL = "https://user:pass-secret-6@api.example.com/charges"
	p.RequiredCredentials = []string{"stripe_secret_7"}
	m.Script(answer("bill the customer 40 dollars"))
	if _, err := expansion(m, st).Update(context.Background(), []*plugins.Plugin{p}); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	sent := string(reqs[0])
	for _, secret := range []string{"url-secret-1", "fixed-desc-2", "fixed-value-2024", "sk-live-token-3", "header-secret-4",
		"query-secret-5", "pass-secret-6", "stripe_secret_7", "4242", "api_version"} {
		if strings.Contains(sent, secret) {
			t.Errorf("the prompt holds %q: %s", secret, sent)
		}
	}
	for _, want := range []string{"billing_charge", "Charge a card", "Charges the customer's card", "amount", "Amount in cents"} {
		if !strings.Contains(sent, want) {
			t.Errorf("the prompt lacks %q: %s", want, sent)
		}
	}
}

// TestExpansionModelDown: a model that fails is asked a few times, not once
// per tool; search goes on with the tools' own words.
func TestExpansionModelDown(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	m := openaitest.New(t)
	var ps []*plugins.Plugin
	for _, n := range []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"} {
		ps = append(ps, tool("delete_"+n, "Delete a "+n, "Deletes one "+n+"."))
	}
	for range 3 {
		m.Script(openaitest.Turn{Status: 503})
	}
	e := expansion(m, st)
	n, err := e.Update(context.Background(), ps)
	if !errors.Is(err, toolsearch.ErrModelDown) || n != 3 {
		t.Fatalf("Update with the model down: asked %d, %v; want 3, ErrModelDown", n, err)
	}
	live := &toolsearch.Live{Expansion: e}
	if err := live.Rebuild(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	if rs := live.Search("delete the gamma", 1); len(rs) == 0 || rs[0].Name != "delete_gamma" {
		t.Fatalf("search with the model down: %v", rs)
	}
}

// TestExpansionCapped: what the model wrote lifts a tool over a look-alike
// whose words the request does not use either, never over the tool whose
// own words the request uses, however often the model repeated them.
func TestExpansionCapped(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	m := openaitest.New(t)
	ps := []*plugins.Plugin{
		tool("stripe_void", "Void an invoice", "Marks a finalized invoice as void."),
		tool("xero_void", "Update an invoice's status", "Updates the status of an invoice (draft, submitted, voided)."),
		tool("evil", "Get the weather", "Returns the weather."),
	}
	m.Script(answer(),
		answer("cancel the bill", "scrap this bill"),
		answer("void an invoice", "void the invoice", "void invoice now", "void my invoice", "void an invoice please"))
	e := expansion(m, st)
	if _, err := e.Update(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	live := &toolsearch.Live{Expansion: e}
	if err := live.Rebuild(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	if rs := live.Search("cancel the bill", 1); len(rs) == 0 || rs[0].Name != "xero_void" {
		t.Errorf("cancel the bill: %v, want xero_void first", rs)
	}
	rs := live.Search("void an invoice", 3)
	if len(rs) == 0 || rs[0].Name != "stripe_void" {
		t.Fatalf("void an invoice: %v, want stripe_void first", rs)
	}
	for _, r := range rs {
		if r.Name == "evil" && r.Score >= rs[0].Score/2 {
			t.Errorf("the weather tool scores %.2f of %.2f on what the model wrote alone", r.Score, rs[0].Score)
		}
	}
}
