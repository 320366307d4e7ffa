package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/quota"
	"github.com/blindexec/blindexec/store"
)

func quotaPlugin(name, method, url string, tags ...string) map[string]any {
	p := map[string]any{
		"name": name, "description": "test tool " + name,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}},
		"execution":  map[string]any{"method": method, "base_url": url + "/" + name},
	}
	if tags != nil {
		p["tags"] = tags
	}
	return p
}

// executeRaw posts a call with the service token and returns the status,
// the Retry-After header and the decoded body.
func executeRaw(t *testing.T, base string, body any) (int, string, map[string]any) {
	t.Helper()
	code, h, out := api.DoJSONHeader(t, base, "POST", "/v1/execute", serviceToken, body)
	return code, h.Get("Retry-After"), out
}

// TestQuotaRules: rules stored over HTTP apply to /v1/execute, per user,
// counted once per call sent; invalid calls do not count; an inline plugin
// counts as the catalog plugin of its name; the refusal says the limit and
// the reset in the quota time zone; use and refusals are visible.
func TestQuotaRules(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Minute).Add(30 * time.Second)
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
		e := newEnv(t, st, func(s *api.Server) {
			s.Quota = quota.New(st, s.Changes, catalog.New(st, s.Changes, nil), shanghai, nil)
			s.Quota.Now = func() time.Time { return now } // mid-minute: no window ends during the test
			if err := s.Quota.Register(s.Registry); err != nil {
				t.Fatal(err)
			}
		})
		for _, p := range []map[string]any{quotaPlugin("refund", "POST", up.URL, "orders"), quotaPlugin("lookup", "GET", up.URL)} {
			if code, body := e.do("POST", "/v1/plugins", adminToken, p); code != http.StatusCreated {
				t.Fatalf("add plugin: %d %v", code, body)
			}
		}
		for _, bad := range []struct {
			rule  map[string]any
			field string
		}{
			{map[string]any{"name": "x", "calls": 0, "window": "day"}, "calls"},
			{map[string]any{"name": "x", "calls": 1, "window": "week"}, "window"},
			{map[string]any{"name": "x", "calls": 1, "window": "day", "tags": []string{"a"}, "consequential": true}, "plugins"},
			{map[string]any{"name": "", "calls": 1, "window": "day"}, "name"},
		} {
			code, body := e.do("POST", "/v1/quotas/rules", adminToken, bad.rule)
			if d, _ := body["error"].(map[string]any)["details"].(map[string]any); code != http.StatusBadRequest || d["field"] != bad.field {
				t.Errorf("rule %v: %d %v, want 400 naming %s", bad.rule, code, body, bad.field)
			}
		}
		for _, r := range []map[string]any{
			{"name": "refund-daily", "plugins": []string{"refund"}, "calls": 2, "window": "day"},
			{"name": "writes-9", "consequential": true, "user_id": 9, "calls": 3, "window": "minute"},
		} {
			if code, body := e.do("POST", "/v1/quotas/rules", adminToken, r); code != http.StatusCreated {
				t.Fatalf("add rule: %d %v", code, body)
			}
		}
		if code, _ := e.do("POST", "/v1/quotas/rules", serviceToken, map[string]any{"name": "y", "calls": 1, "window": "day"}); code != http.StatusForbidden {
			t.Errorf("the service token added a rule: %d", code)
		}
		call := func(name string, user int, args map[string]any) map[string]any {
			return map[string]any{"name": name, "arguments": args, "user_id": user}
		}
		ok := func(body map[string]any) {
			t.Helper()
			code, _, out := executeRaw(t, e.url, body)
			if code != http.StatusOK {
				t.Fatalf("%v: %d %v, want 200", body, code, out)
			}
		}
		refused := func(body map[string]any, want string) {
			t.Helper()
			code, retry, out := executeRaw(t, e.url, body)
			msg := errMessage(out)
			if code != http.StatusTooManyRequests || retry == "" || !strings.Contains(msg, want) {
				t.Fatalf("%v: %d Retry-After %q %v, want 429 with Retry-After saying %q", body, code, retry, out, want)
			}
		}
		sent := len(up.received())

		// User 7: two refunds a day, the third refused with the reset at
		// the next midnight in Shanghai.
		ok(call("refund", 7, nil))
		ok(call("refund", 7, nil))
		_, reset := quota.WindowOf(now, quota.Day, shanghai)
		refused(call("refund", 7, nil), "limit reached: 2 calls a day for refund, resets at "+reset.Format(time.RFC3339))
		if !strings.HasSuffix(reset.Format(time.RFC3339), "+08:00") {
			t.Fatalf("reset %s not in +08:00", reset.Format(time.RFC3339))
		}
		ok(call("lookup", 7, nil)) // another tool: no rule
		sent += 3
		// User 8 is on their own; an invalid call is not counted.
		if code, _, out := executeRaw(t, e.url, call("refund", 8, map[string]any{"n": "x"})); code != http.StatusUnprocessableEntity {
			t.Fatalf("invalid call: %d %v", code, out)
		}
		ok(call("refund", 8, nil))
		ok(call("refund", 8, nil))
		refused(call("refund", 8, nil), "2 calls a day for refund")
		sent += 2
		// An inline plugin under the catalog's name counts as the catalog's.
		inline := map[string]any{"plugin": quotaPlugin("refund", "POST", up.URL), "arguments": map[string]any{}, "user_id": 10}
		ok(inline)
		ok(inline)
		refused(inline, "2 calls a day for refund")
		sent += 2
		// User 9: reads are not consequential; writes are, three a minute,
		// and refund's own rule is the tighter.
		for range 4 {
			ok(call("lookup", 9, nil))
		}
		ok(call("refund", 9, nil))
		ok(call("refund", 9, nil))
		refused(call("refund", 9, nil), "2 calls a day for refund")
		sent += 6
		if got := len(up.received()); got != sent {
			t.Fatalf("upstream received %d calls, want %d (refused and invalid calls are not sent)", got, sent)
		}

		code, use := e.do("GET", "/v1/quotas?user_id=9", serviceToken, nil)
		if code != http.StatusOK {
			t.Fatalf("use: %d %v", code, use)
		}
		got := map[string]float64{}
		for _, q := range use["quotas"].([]any) {
			m := q.(map[string]any)
			got[m["rule"].(string)] = m["used"].(float64)
			if !strings.HasSuffix(m["resets_at"].(string), "+08:00") {
				t.Errorf("resets_at %v not in the quota time zone", m["resets_at"])
			}
		}
		if got["refund-daily"] != 2 || got["writes-9"] != 2 || len(got) != 2 {
			t.Fatalf("use of user 9 = %v, want refund-daily 2, writes-9 2", got)
		}
		if m := metricsText(t, e.url); !strings.Contains(m, `blindexec_quota_refusals_total{rule="refund-daily"} 4`) {
			t.Errorf("metrics lack 4 refusals of refund-daily:\n%s", grepLines(m, "quota"))
		}

		code, rules := e.do("GET", "/v1/quotas/rules", serviceToken, nil)
		if code != http.StatusOK || len(rules["rules"].([]any)) != 2 || rules["time_zone"] != "Asia/Shanghai" {
			t.Fatalf("rules: %d %v", code, rules)
		}
		if code, body := e.do("DELETE", "/v1/quotas/rules/refund-daily", adminToken, nil); code != http.StatusNoContent {
			t.Fatalf("delete: %d %v", code, body)
		}
		ok(call("refund", 7, nil))
		ok(call("refund", 9, nil)) // the third write of user 9 this minute
		refused(call("refund", 9, nil), "3 calls a minute for consequential tools")
	})
}

// metricsText is /metrics as the administrator reads it.
func metricsText(t *testing.T, base string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestQuotaOverMCP: /mcp counts a user's calls like /v1/execute, and a
// call over its limit is a tool error saying the limit and the reset.
func TestQuotaOverMCP(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	e := newEnv(t, st, func(s *api.Server) { s.MCP = &api.MCPConfig{} })
	if code, body := e.do("POST", "/v1/plugins", adminToken, quotaPlugin("refund", "POST", up.URL)); code != http.StatusCreated {
		t.Fatalf("add plugin: %d %v", code, body)
	}
	if code, body := e.do("POST", "/v1/quotas/rules", adminToken, map[string]any{"name": "writes", "consequential": true, "calls": 2, "window": "hour"}); code != http.StatusCreated {
		t.Fatalf("add rule: %d %v", code, body)
	}
	token, _, err := api.IssueToken(t.Context(), st, 7, "mcp", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.changes.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(),
		&sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: bearerToken(token)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// One call through /v1/execute, one through /mcp: the third is over.
	if code, body := e.do("POST", "/v1/execute", token, map[string]any{"name": "refund", "arguments": map[string]any{}}); code != http.StatusOK {
		t.Fatalf("execute: %d %v", code, body)
	}
	for i, wantErr := range []bool{false, true} {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "refund", Arguments: map[string]any{}})
		if err != nil || res.IsError != wantErr {
			t.Fatalf("call %d over /mcp: %v %+v", i+1, err, res)
		}
		if wantErr {
			if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, "limit reached: 2 calls an hour for consequential tools, resets at ") {
				t.Fatalf("the tool error: %s", text)
			}
		}
	}
	if n := len(up.received()); n != 2 {
		t.Fatalf("the upstream received %d calls, want 2", n)
	}
}

// TestQuotaUnavailableAnswered: a call whose quota cannot be counted (the
// quota store's database refuses) is refused, not sent, with 503
// quota_unavailable and Retry-After, as docs/quotas.md says — an answer
// of /v1/execute that RuoYi's side must find in the description
// (CheckedHandler fails on a code it does not list).
func TestQuotaUnavailableAnswered(t *testing.T) {
	direct, proxy, through := testdb.Blackholable(t)
	counted := testdb.At(t, through)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) })
	e := newEnv(t, direct, func(s *api.Server) {
		s.Quota = quota.New(counted, s.Changes, catalog.New(direct, s.Changes, nil), time.UTC, nil)
	})
	if code, body := e.do("POST", "/v1/plugins", adminToken, quotaPlugin("lookup", "GET", up.URL)); code != http.StatusCreated {
		t.Fatalf("add plugin: %d %v", code, body)
	}
	if code, body := e.do("POST", "/v1/quotas/rules", adminToken, map[string]any{"name": "daily", "plugins": []string{"lookup"}, "calls": 5, "window": "day"}); code != http.StatusCreated {
		t.Fatalf("add rule: %d %v", code, body)
	}
	proxy.Refuse()
	code, retry, out := executeRaw(t, e.url, map[string]any{"name": "lookup", "user_id": 7})
	if code != http.StatusServiceUnavailable || errCode(out) != "quota_unavailable" || retry == "" {
		t.Errorf("a call whose quota cannot be counted: %d Retry-After %q %v, want 503 quota_unavailable with Retry-After", code, retry, out)
	}
	if n := len(up.received()); n != 0 {
		t.Errorf("%d requests sent upstream, want none", n)
	}
}
