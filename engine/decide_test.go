package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/quota"
)

// rowCatalog binds an inline plugin to the row of its name when
// plugins.Difference finds them equal (auth.Catalog's rule, read from
// rows in memory: the decision, not the catalog, is under test).
type rowCatalog map[string]*plugins.Plugin

func (c rowCatalog) Bind(_ context.Context, p *plugins.Plugin, keys []string) (*plugins.Plugin, error) {
	row := c[p.Name]
	if row == nil {
		return nil, &auth.UnboundCredentialError{Key: keys[0], Plugin: p.Name}
	}
	if field := plugins.Difference(row, p); field != "" {
		return nil, &auth.UnboundCredentialError{Key: keys[0], Plugin: p.Name, Field: field}
	}
	return row, nil
}

func (rowCatalog) Identifiers(context.Context, []string) ([]string, error) { return nil, nil }

func (c rowCatalog) Row(_ context.Context, name string) (*plugins.Plugin, error) { return c[name], nil }

func (c rowCatalog) Copy(_ context.Context, p *plugins.Plugin) (*plugins.Plugin, error) {
	if row := c[p.Name]; row != nil && plugins.Difference(row, p) == "" {
		return row, nil
	}
	return nil, nil
}

// Elsewhere is auth.Catalog's rule over the rows (http plugins: no MCP
// server to read).
func (c rowCatalog) Elsewhere(_ context.Context, p *plugins.Plugin, srv auth.ServerSends, keys []string) error {
	ks := auth.KeySends{}
	for _, row := range c {
		ks.Add(row, auth.KeyOrigins(row, auth.ServerSends{}))
	}
	sends := auth.KeyOrigins(p, srv)
	for _, k := range keys {
		if e := ks.Elsewhere(k, sends[k]); e != nil {
			return e
		}
	}
	return nil
}

// oneConnection is a user's connection to the provider "acme": working
// or not.
type oneConnection struct{ connected bool }

func (c oneConnection) Connected(_ context.Context, _ int64, provider string, scopes []string) error {
	if !c.connected {
		return &connections.RequiredError{Provider: provider, Scopes: scopes, Missing: scopes, Reason: "no connection"}
	}
	return nil
}

func (c oneConnection) Token(ctx context.Context, user int64, provider string, scopes []string, _ string) (connections.Token, error) {
	if err := c.Connected(ctx, user, provider, scopes); err != nil {
		return connections.Token{}, err
	}
	return connections.Token{Value: "acme-token-0123456789"}, nil
}

func (oneConnection) Rejected(context.Context, int64, string, []string, string, connections.Token) (connections.Token, bool, error) {
	return connections.Token{}, false, nil
}

// spentQuota refuses every call: the user's quota is spent.
type spentQuota struct{}

func (spentQuota) Take(context.Context, int64, *plugins.Plugin) (func(), error) {
	return nil, &quota.ExceededError{Rule: "daily", Calls: 1, Window: "day", What: "every tool", ResetsAt: time.Now().Add(time.Hour)}
}

// TestDecision is the one decision of every call (issue 44): who owns
// the work × the plugin as given (a catalog row, an inline copy bound to
// it, an inline plugin left unbound) × the policy × a connection × the
// quota → the verdict, and whether anything reached the upstream once
// the plan is sent. Every route renders these verdicts; none decides
// itself (api's TestRoutesDecide).
func TestDecision(t *testing.T) {
	up := newUpstream(t, nil)
	const getDoc = `{"name":"items","description":"Lists items.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/items"},"auth_config":{"type":"bearer","token":"TOKEN"}CLASS}`
	const deleteDoc = `{"name":"drop","description":"Deletes an item.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"DELETE","base_url":"%s/items"},"auth_config":{"type":"bearer","token":"TOKEN"}CLASS}`
	const connDoc = `{"name":"notes","description":"Reads notes.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/notes"},
	  "auth_config":{"type":"oauth2","oauth2":{"grant":"authorization_code","provider":"acme","scopes":["read"]}}}`
	doc := func(d, class string) *plugins.Plugin {
		return mustPlugin(t, strings.Replace(d, "CLASS", class, 1), up.URL)
	}
	// The administrator classified the GET consequential and the DELETE
	// as it comes; the callers' copies claim "consequential": false.
	rowGet, rowDelete := doc(getDoc, `,"consequential":true`), doc(deleteDoc, "")
	claimGet, claimDelete := doc(getDoc, `,"consequential":false`), doc(deleteDoc, `,"consequential":false`)
	moved := mustPlugin(t, strings.Replace(getDoc, "CLASS", "", 1), up.URL+"/elsewhere")
	// The service's own DELETE: not a copy of the row (another URL).
	ownDelete := mustPlugin(t, strings.Replace(deleteDoc, "CLASS", `,"consequential":false`, 1), up.URL+"/own")
	conn := doc(connDoc, "")
	stored := map[string]string{"TOKEN": "stored-token-0123456789"}
	payload := map[string]string{"TOKEN": "payload-token-0123456789"}

	type want struct {
		verdict Verdict
		code    string // a refusal's code, by Decide or by Send
		sent    bool   // the upstream received the call once sent
	}
	send, person := want{verdict: VerdictSend, sent: true}, want{verdict: VerdictPerson}
	refused := func(code string) want { return want{verdict: VerdictRefused, code: code} }
	tests := []struct {
		name      string
		owner     Owner
		plugin    *plugins.Plugin
		inline    bool
		payload   map[string]string
		policy    confirm.Policy
		connected bool
		spent     bool
		want      want
	}{
		{"a row by name, consequential: a person", OwnerUser, rowGet, false, nil, confirm.Consequential, false, false, person},
		{"issue case 1: a user's inline copy claiming false is the row", OwnerUser, claimGet, true, nil, confirm.Consequential, false, false, person},
		{"issue case 2: the service's inline copy claiming false is the row", OwnerService, claimDelete, true, nil, confirm.Consequential, false, false, person},
		{"the administrator's inline plugin is not bound: its claim stands", OwnerAdmin, claimGet, true, nil, confirm.Consequential, false, false, send},
		{"a user's unbound inline DELETE: derived from the method", OwnerUser, claimDelete, true, payload, confirm.Consequential, false, false, person},
		{"a user's copy with payload credentials is the row", OwnerUser, claimGet, true, payload, confirm.Consequential, false, false, person},
		{"the service's copy with payload credentials is the row", OwnerService, claimDelete, true, payload, confirm.Consequential, false, false, person},
		{"the service's unbound inline DELETE: its claim stands", OwnerService, ownDelete, true, payload, confirm.Consequential, false, false, send},
		{"the administrator's unbound inline DELETE: its claim stands", OwnerAdmin, claimDelete, true, payload, confirm.Consequential, false, false, send},
		{"the row's DELETE by name", OwnerService, rowDelete, false, nil, confirm.Consequential, false, false, person},
		{"no policy: the caller is its own loop", OwnerService, rowDelete, false, nil, "", false, false, send},
		{"policy never", OwnerUser, claimGet, true, nil, confirm.Never, false, false, send},
		{"policy always: any call", OwnerUser, claimDelete, true, payload, confirm.Always, false, false, person},
		{"an inline plugin differing from the row: refused", OwnerUser, moved, true, nil, confirm.Consequential, false, false, refused(CodeCredentialNotBound)},
		{"the administrator's differing inline plugin: its own", OwnerAdmin, moved, true, nil, "", false, false, send},
		{"a connection needed before a person", OwnerUser, conn, false, nil, confirm.Always, false, false, want{verdict: VerdictConnect, code: CodeConnectionRequired}},
		{"connected: then a person", OwnerUser, conn, false, nil, confirm.Always, true, false, person},
		{"connected, no person: sent", OwnerUser, conn, false, nil, confirm.Consequential, true, false, send},
		{"not connected, no person: refused at the token", OwnerUser, conn, false, nil, confirm.Consequential, false, false, want{verdict: VerdictSend, code: CodeConnectionRequired}},
		{"quota after confirmation: a person first", OwnerUser, claimGet, true, nil, confirm.Consequential, false, true, person},
		{"quota spent: refused at the send", OwnerService, rowDelete, false, nil, "", false, true, want{verdict: VerdictSend, code: CodeQuotaExceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.Catalog = rowCatalog{"items": rowGet, "drop": rowDelete}
			h.Credentials = storeFunc(func(context.Context, int64, []string) (map[string]string, error) { return stored, nil })
			h.Connections = oneConnection{tt.connected}
			if tt.spent {
				h.Quota = spentQuota{}
			}
			before := len(up.Hits())
			call := Call{Plugin: tt.plugin, Inline: tt.inline, Owner: tt.owner, Policy: tt.policy, UserID: 7,
				Credentials: tt.payload, Arguments: json.RawMessage(`{"q":"x"}`)}
			plan, err := h.Decide(t.Context(), call)
			if plan == nil {
				t.Fatalf("no plan: %v", err)
			}
			if plan.Verdict() != tt.want.verdict {
				t.Fatalf("verdict %d (%v), want %d", plan.Verdict(), err, tt.want.verdict)
			}
			if plan.Verdict() == VerdictPerson {
				if plan.Person == nil || len(plan.Person.Digest) != 64 || plan.Person.Plugin != plan.Plugin {
					t.Fatalf("a person is shown %+v", plan.Person)
				}
				if _, err := h.Send(t.Context(), plan); err == nil {
					t.Fatal("a plan waiting for a person was sent")
				}
			}
			res, err := h.Send(t.Context(), plan)
			if plan.Verdict() != VerdictPerson && res == nil {
				t.Fatalf("no result: %v", err)
			}
			code := ""
			if refused, ok := errors.AsType[*RefusedError](err); ok {
				code = refused.Code
			}
			if code != tt.want.code {
				t.Errorf("refusal %q (%v), want %q", code, err, tt.want.code)
			}
			if sent := len(up.Hits()) > before; sent != tt.want.sent {
				t.Errorf("sent %v, want %v", sent, tt.want.sent)
			}
			if sent := len(up.Hits()) > before; sent {
				if got := up.Hits()[before].Header.Get("Authorization"); tt.payload == nil && !strings.HasPrefix(got, "Bearer stored-") && tt.plugin != conn {
					t.Errorf("sent with %q, want the stored token", got)
				}
			}
		})
	}
}

// TestApprovalBindsDigest: an approval counts for the digest it names
// only. The request approved is the one sent, prepared once: the first
// attempt sends the request the decision built; a changed argument or
// stored credential is stale and sends nothing.
func TestApprovalBindsDigest(t *testing.T) {
	up := newUpstream(t, nil)
	p := mustPlugin(t, `{"name":"drop","description":"d","parameters":{"type":"object","properties":{"id":{"type":"string"}}},
	  "execution":{"method":"DELETE","base_url":"%s/items/{id}"}}`, up.URL)
	h := newHarness(t)
	call := Call{Plugin: p, Policy: confirm.Consequential, Arguments: json.RawMessage(`{"id":"1"}`)}
	plan, _ := h.Decide(t.Context(), call)
	if plan.Verdict() != VerdictPerson || plan.Person.Request.Method != "DELETE" {
		t.Fatalf("verdict %d, request %+v", plan.Verdict(), plan.Person)
	}
	digest := plan.Person.Digest

	for _, tt := range []struct {
		name, args, digest string
		sent               bool
	}{
		{"another digest: stale", `{"id":"1"}`, strings.Repeat("0", 64), false},
		{"other arguments: stale", `{"id":"2"}`, digest, false},
		{"the request approved: sent once", `{"id":"1"}`, digest, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(up.Hits())
			c := call
			c.Arguments = json.RawMessage(tt.args)
			c.Approval = &Approval{PendingID: "p1", Digest: tt.digest, By: "user:7"}
			plan, err := h.Decide(t.Context(), c)
			res, serr := h.Send(t.Context(), plan)
			if tt.sent {
				if err != nil || serr != nil || !res.OK || len(up.Hits()) != before+1 {
					t.Fatalf("%v %v %s", err, serr, resultJSON(t, res))
				}
				if got := up.Hits()[before]; got.Method != "DELETE" || got.RequestURI != "/items/1" {
					t.Errorf("sent %s %s", got.Method, got.RequestURI)
				}
				return
			}
			if refused, ok := errors.AsType[*RefusedError](err); !ok || refused.Code != CodeConfirmationStale || len(up.Hits()) != before {
				t.Errorf("%v; %d sent", err, len(up.Hits())-before)
			}
		})
	}
	recs := h.flush(t)
	var confirmed []string
	for _, r := range recs {
		confirmed = append(confirmed, fmt.Sprintf("%s/%s", r.Status, r.Confirmation))
	}
	if fmt.Sprint(confirmed) != "[refused/ refused/ ok/approved by user:7, pending p1]" {
		t.Errorf("records %v", confirmed)
	}
}

// consequentialQuota records how the quota rules read each call's plugin
// (quota.Consequential) and lets it through.
type consequentialQuota struct{ seen *[]bool }

func (q consequentialQuota) Take(_ context.Context, _ int64, p *plugins.Plugin) (func(), error) {
	*q.seen = append(*q.seen, quota.Consequential(p))
	return func() {}, nil
}

// TestMethodOverrideDecision: a GET whose request asks its server for
// another method (X-HTTP-Method-Override, X-HTTP-Method,
// X-Method-Override, _method) is that method to the decision: a per-user
// token's inline plugin carrying one waits for a person, as does an
// administrator's row, whether the plugin sends the override itself or
// the caller's arguments put it there; the quota rules read the call
// alike.
func TestMethodOverrideDecision(t *testing.T) {
	up := newUpstream(t, nil)
	get := func(extra string) *plugins.Plugin {
		return mustPlugin(t, `{"name":"items","description":"Lists items.",
		  "parameters":{"type":"object","properties":{"q":{"type":"string"},"how":{"type":"string"},"_method":{"type":"string"},"filter":{"type":"object"},"k":{"type":"string"}}},
		  "execution":{"method":"GET","base_url":"%s/items"`+extra+`}}`, up.URL)
	}
	for _, tc := range []struct {
		name   string
		p      *plugins.Plugin
		inline bool
		args   string
		person bool
	}{
		{"a plain GET", get(""), true, `{"q":"x"}`, false},
		{"X-HTTP-Method-Override in execution.headers", get(`,"headers":{"X-HTTP-Method-Override":"DELETE"}`), true, `{}`, true},
		{"X-HTTP-Method in execution.headers", get(`,"headers":{"x-http-method":"PUT"}`), true, `{}`, true},
		{"X-Method-Override in execution.headers", get(`,"headers":{"X-Method-Override":"PATCH"}`), true, `{}`, true},
		{"an override asking GET", get(`,"headers":{"X-HTTP-Method-Override":"GET"}`), true, `{}`, false},
		{"_method in execution.query", get(`,"query":{"_method":"DELETE"}`), true, `{}`, true},
		{"the caller's argument in an override header", get(`,"param_placement":{"how":{"in":"header","name":"X-HTTP-Method-Override"}}`), true, `{"how":"DELETE"}`, true},
		{"the caller's _method argument in the query", get(""), true, `{"_method":"DELETE"}`, true},
		{"a fixed param in an override header", get(`,"param_placement":{"how":{"in":"header","name":"X-HTTP-Method"}}},"fixed_params":{"how":"DELETE"`), true, `{}`, true},
		{"the administrator's row with an override header", get(`,"headers":{"X-HTTP-Method-Override":"DELETE"}`), false, `{}`, true},
		{"the administrator's row, the caller's _method", get(""), false, `{"_method":"delete"}`, true},
		{"the caller's object in the query, exploded", get(""), true, `{"filter":{"_method":"DELETE"}}`, true},
		{"a query name the caller's path argument fills", mustPlugin(t, `{"name":"items","description":"Lists items.",
		  "parameters":{"type":"object","properties":{"k":{"type":"string"}}},
		  "execution":{"method":"GET","base_url":"%s/items?{k}=DELETE"}}`, up.URL), true, `{"k":"_method"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			var seen []bool
			h.Quota = consequentialQuota{&seen}
			call := Call{Plugin: tc.p, Inline: tc.inline, Owner: OwnerUser, Policy: confirm.Consequential, UserID: 7,
				Arguments: json.RawMessage(tc.args)}
			plan, err := h.Decide(t.Context(), call)
			if err != nil {
				t.Fatalf("decide: %v", err)
			}
			if got := plan.Verdict() == VerdictPerson; got != tc.person {
				t.Fatalf("waits for a person: %v, want %v", got, tc.person)
			}
			// Sent (no policy): the quota rules read the same class.
			call.Policy = ""
			if _, err := h.Execute(t.Context(), call); err != nil {
				t.Fatalf("execute: %v", err)
			}
			if len(seen) != 1 || seen[0] != tc.person {
				t.Errorf("the quota rules read consequential %v, want [%v]", seen, tc.person)
			}
		})
	}
}

// TestHeldRowIsTheCatalogs: a catalog plugin a caller holds (a run's, an
// MCP tool set's, a plan waiting for a person) is decided as the catalog
// has its row when decided and when an approved plan is sent: gone,
// disabled or another row of its name refuses it, a row classified
// consequential since waits for a person (review68).
func TestHeldRowIsTheCatalogs(t *testing.T) {
	up := newUpstream(t, nil)
	row := func(id int64, mutate func(*plugins.Plugin)) *plugins.Plugin {
		p := mustPlugin(t, `{"name":"lookup","description":"Looks up.","parameters":{"type":"object","properties":{}},
		  "execution":{"method":"GET","base_url":"%s/lookup"}}`, up.URL)
		c := *p
		c.ID, c.Catalog = id, true
		if mutate != nil {
			mutate(&c)
		}
		return &c
	}
	held := row(1, nil)
	yes := true
	for _, tt := range []struct {
		name    string
		catalog rowCatalog
		held    *plugins.Plugin
		verdict Verdict
		code    string
	}{
		{"the row as held", rowCatalog{"lookup": row(1, nil)}, held, VerdictSend, ""},
		{"the row gone or disabled", rowCatalog{}, held, VerdictRefused, CodePluginDisabled},
		{"another row of the name", rowCatalog{"lookup": row(2, nil)}, held, VerdictRefused, CodePluginDisabled},
		{"classified consequential since", rowCatalog{"lookup": row(1, func(p *plugins.Plugin) { p.Consequential = &yes })}, held, VerdictPerson, ""},
		{"no row held (the proxy's tool without one)", rowCatalog{}, row(0, func(p *plugins.Plugin) { p.Catalog = false }), VerdictSend, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.Catalog = tt.catalog
			plan, err := h.Decide(t.Context(), Call{Plugin: tt.held, UserID: 7, Arguments: json.RawMessage(`{}`), Policy: confirm.Consequential})
			if plan.Verdict() != tt.verdict || tt.code != "" && (err == nil || plan.Result().Error.Code != tt.code) {
				t.Fatalf("verdict %d (%v), want %d %s", plan.Verdict(), err, tt.verdict, tt.code)
			}
		})
	}
	t.Run("an approved plan whose row went while the person read", func(t *testing.T) {
		h := newHarness(t)
		cat := rowCatalog{"lookup": row(1, func(p *plugins.Plugin) { p.Consequential = &yes })}
		h.Catalog = cat
		plan, _ := h.Decide(t.Context(), Call{Plugin: cat["lookup"], UserID: 7, Arguments: json.RawMessage(`{}`), Policy: confirm.Consequential})
		if plan.Verdict() != VerdictPerson {
			t.Fatalf("verdict %d, want a person", plan.Verdict())
		}
		before := len(up.Hits())
		delete(cat, "lookup")
		plan.Approve("user:7", "p1")
		res, err := h.Send(t.Context(), plan)
		if refused, ok := errors.AsType[*RefusedError](err); !ok || refused.Code != CodePluginDisabled || res.OK || len(up.Hits()) != before {
			t.Fatalf("sent after its row went: %v %+v, %d requests", err, res, len(up.Hits())-before)
		}
	})
}

// TestStoredKeyGoesWhereTheCatalogSendsIt (hosts76): a call of a plugin
// that is no catalog row (the MCP proxy's tool without one) taking a
// stored key the enabled catalog sends to another origin is refused by
// the decision, on Decide and on Allowed (a route's listing), naming the
// key and both origins, never its value; nothing reaches the other
// origin. A key of its own, the row's origin and the administrator's
// inline plugin pass.
func TestStoredKeyGoesWhereTheCatalogSendsIt(t *testing.T) {
	up, lookalike := newUpstream(t, nil), newUpstream(t, nil)
	const doc = `{"name":"NAME","description":"Reads items.","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/items"},"auth_config":{"type":"bearer","token":"KEY"}}`
	plugin := func(name, key, url string) *plugins.Plugin {
		return mustPlugin(t, strings.NewReplacer("NAME", name, "KEY", key).Replace(doc), url)
	}
	const secret = "stored-token-0123456789"
	row := plugin("items", "TOKEN", up.URL)
	for _, tt := range []struct {
		name   string
		plugin *plugins.Plugin
		inline bool
		owner  Owner
		code   string
	}{
		{"the catalog's key to another origin: refused", plugin("look", "TOKEN", lookalike.URL), false, OwnerService, CodeCredentialNotBound},
		{"a per-user call of it: refused", plugin("look", "TOKEN", lookalike.URL), false, OwnerUser, CodeCredentialNotBound},
		{"a key no catalog plugin reads: its own", plugin("look", "OWN_KEY", lookalike.URL), false, OwnerService, ""},
		{"the catalog's key to its origin", plugin("other", "TOKEN", up.URL), false, OwnerService, ""},
		{"the administrator's inline plugin: its own", plugin("look", "TOKEN", lookalike.URL), true, OwnerAdmin, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.Catalog = rowCatalog{"items": row}
			h.Credentials = everyKey(secret)
			call := Call{Plugin: tt.plugin, Inline: tt.inline, Owner: tt.owner, UserID: 7, Arguments: json.RawMessage(`{"q":"x"}`)}
			before := len(lookalike.Hits()) + len(up.Hits())
			_, _, allowed := h.Allowed(t.Context(), call)
			_, err := h.Execute(t.Context(), call)
			for _, err := range []error{allowed, err} {
				if tt.inline && err == allowed {
					continue // Allowed judges the plugin as given, a route's, never an inline one
				}
				code := ""
				refused, ok := errors.AsType[*RefusedError](err)
				if ok {
					code = refused.Code
				}
				if code != tt.code {
					t.Fatalf("refusal %q (%v), want %q", code, err, tt.code)
				}
				if ok && (!strings.Contains(refused.Message, "credential TOKEN") || !strings.Contains(refused.Message, strings.ToLower(lookalike.URL)) ||
					!strings.Contains(refused.Message, strings.ToLower(up.URL)) || strings.Contains(refused.Message, secret)) {
					t.Errorf("the refusal says %q: want the key's name and both origins, not its value", refused.Message)
				}
			}
			if sent := len(lookalike.Hits()) + len(up.Hits()) - before; sent != 0 == (tt.code != "") {
				t.Errorf("%d requests sent", sent)
			}
		})
	}
}
