package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// inlineSeed is seed 001's plugin as JSON, aimed at url: what RuoYi
// copies into a payload, or what an attacker posts aimed elsewhere.
func inlineSeed(t *testing.T, url string) json.RawMessage {
	doc, err := json.Marshal(mustParseSeed(t, url))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestStoredCredentialsStayWithTheirOrigins: a stored credential goes only
// to an origin an enabled catalog plugin sends it to. An inline plugin
// aimed elsewhere is refused for the per-user and the service token,
// naming the rule and the key, never the value, and nothing is sent; the
// catalog plugin, RuoYi's inline copy of it, payload credentials and the
// administrator still work.
func TestStoredCredentialsStayWithTheirOrigins(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		api := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
		evil := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"stolen":true}`) })
		llm := openaitest.New(t)
		e := newEnv(t, st, withModel(llm))
		if code, body := e.do("POST", "/v1/plugins", adminToken, seedPlugin(t, api.URL)); code != http.StatusCreated {
			t.Fatalf("add plugin: %d %v", code, body)
		}
		for k, v := range map[string]string{"QCC_KEY": qccKey, "QCC_SECRET": qccSecret} {
			if code, body := e.do("PUT", "/v1/credentials/7/"+k, adminToken, map[string]string{"value": v}); code != http.StatusNoContent {
				t.Fatalf("store %s: %d %v", k, code, body)
			}
		}
		code, tok := e.do("POST", "/v1/tokens", adminToken, map[string]any{"user_id": 7, "name": "laptop"})
		if code != http.StatusCreated {
			t.Fatalf("create token: %d %v", code, tok)
		}
		userToken := tok["token"].(string)
		args := map[string]any{"keyword": "x"}

		refusals := []struct{ name, token string }{{"per-user token", userToken}, {"service token", serviceToken}}
		for _, tt := range refusals {
			t.Run("execute refused for the "+tt.name, func(t *testing.T) {
				code, body := e.do("POST", "/v1/execute", tt.token, map[string]any{"plugin": inlineSeed(t, evil.URL), "arguments": args, "user_id": 7})
				msg := errMessage(body)
				if code != http.StatusUnprocessableEntity || errCode(body) != engine.CodeCredentialNotBound {
					t.Fatalf("exfiltration: %d %v", code, body)
				}
				if !strings.Contains(msg, "QCC_") || !strings.Contains(msg, "catalog") || strings.Contains(msg, qccKey) || strings.Contains(msg, qccSecret) {
					t.Errorf("the refusal must name the rule and the key, never the value: %q", msg)
				}
			})
		}
		t.Run("run refused for the service token", func(t *testing.T) {
			llm.Script(
				openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "search_company_basic", Arguments: `{"keyword":"x"}`}}},
				openaitest.Turn{Content: "done"},
			)
			code, reply := e.do("POST", "/v1/runs", serviceToken, map[string]any{"user_id": "7",
				"messages": []map[string]string{{"role": "user", "content": "q"}}, "plugins": []json.RawMessage{inlineSeed(t, evil.URL)}})
			steps, _ := reply["steps"].([]any)
			if code != http.StatusOK || len(steps) != 1 {
				t.Fatalf("run: %d %v", code, reply)
			}
			if st := steps[0].(map[string]any); st["status"] != "refused" || !strings.Contains(st["error"].(string), engine.CodeCredentialNotBound) {
				t.Fatalf("step: %v", st)
			}
		})
		if got := evil.received(); len(got) != 0 {
			t.Fatalf("the foreign origin received %d requests", len(got))
		}

		allowed := []struct {
			name, token string
			body        map[string]any
			to          *upstream
			key         string // the Token header the upstream must see
		}{
			{"the catalog plugin, per-user token", userToken, map[string]any{"name": "search_company_basic", "arguments": args}, api, qccKey},
			{"RuoYi's inline copy of the catalog row", serviceToken, map[string]any{"plugin": inlineSeed(t, api.URL), "arguments": args, "user_id": 7}, api, qccKey},
			{"payload credentials are the caller's own", serviceToken, map[string]any{"plugin": inlineSeed(t, evil.URL), "arguments": args, "user_id": 7,
				"credentials": map[string]string{"QCC_KEY": "callers-own-key", "QCC_SECRET": "callers-own-secret"}}, evil, "callers-own-key"},
			{"the administrator defines the catalog", adminToken, map[string]any{"plugin": inlineSeed(t, evil.URL), "arguments": args, "user_id": 7}, evil, qccKey},
		}
		for _, tt := range allowed {
			t.Run(tt.name, func(t *testing.T) {
				before := len(tt.to.received())
				if code, body := e.do("POST", "/v1/execute", tt.token, tt.body); code != http.StatusOK || body["ok"] != true {
					t.Fatalf("%d %v", code, body)
				}
				got := tt.to.received()
				if len(got) != before+1 || got[before].header.Get("Token") != tt.key {
					t.Fatalf("upstream received %v", got[before:])
				}
			})
		}

		t.Run("a disabled catalog plugin binds nothing", func(t *testing.T) {
			if code, _ := e.do("PATCH", "/v1/plugins/search_company_basic", adminToken, map[string]string{"status": "1"}); code != http.StatusOK {
				t.Fatal("disable")
			}
			if code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"plugin": inlineSeed(t, api.URL), "arguments": args, "user_id": 7}); code != http.StatusUnprocessableEntity || errCode(body) != engine.CodeCredentialNotBound {
				t.Fatalf("inline copy of a disabled plugin: %d %v", code, body)
			}
		})
	})
}

// TestShortSecretsRefused: a secret too short to mask is refused when
// stored, when passed in a payload and when used; an identifier is not.
func TestShortSecretsRefused(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"approved_by":"bob"}`) })
	e := newEnv(t, st)
	basic := `{"name":"approve","description":"approve","parameters":{"type":"object","properties":{}},
		"execution":{"method":"GET","base_url":"` + up.URL + `/approve"},
		"auth_config":{"type":"basic","username":"APPROVER","password":"APPROVER_PASS"}}`
	for _, doc := range []string{seedPlugin(t, up.URL), basic} {
		if code, body := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
			t.Fatalf("add plugin: %d %v", code, body)
		}
	}
	tests := []struct {
		name, key, value string
		want             int
	}{
		{"a short secret", "QCC_KEY", "abc", http.StatusUnprocessableEntity},
		{"a short key no plugin reads", "UNUSED", "abc", http.StatusUnprocessableEntity},
		{"a short identifier", "APPROVER", "bob", http.StatusNoContent},
		{"a secret long enough", "APPROVER_PASS", "hunter22", http.StatusNoContent},
	}
	for _, tt := range tests {
		t.Run("store "+tt.name, func(t *testing.T) {
			code, body := e.do("PUT", "/v1/credentials/7/"+tt.key, adminToken, map[string]string{"value": tt.value})
			if code != tt.want {
				t.Fatalf("PUT: %d %v", code, body)
			}
			if code != http.StatusNoContent && (!strings.Contains(errMessage(body), "shorter than 4 bytes") || strings.Contains(errMessage(body), tt.value)) {
				t.Errorf("the refusal must say why, never quoting the value: %q", errMessage(body))
			}
		})
	}
	t.Run("payload", func(t *testing.T) {
		code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "search_company_basic", "arguments": map[string]any{"keyword": "x"},
			"credentials": map[string]string{"QCC_KEY": "abc", "QCC_SECRET": qccSecret}})
		if code != http.StatusUnprocessableEntity || errCode(body) != engine.CodeAuthError || !strings.Contains(errMessage(body), "credential QCC_KEY") {
			t.Fatalf("%d %v", code, body)
		}
	})
	t.Run("written by RuoYi directly, refused at use", func(t *testing.T) {
		// RuoYi writes sys_user_credential itself; the engine's own service
		// would refuse the value, so set it as RuoYi would, past the check.
		if err := rawSet(t, e, 8, "QCC_KEY", "abc"); err != nil {
			t.Fatal(err)
		}
		e.creds.Set(t.Context(), 8, "QCC_SECRET", qccSecret, "test")
		code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "search_company_basic", "arguments": map[string]any{"keyword": "x"}, "user_id": 8})
		if code != http.StatusUnprocessableEntity || !strings.Contains(errMessage(body), "credential QCC_KEY") {
			t.Fatalf("%d %v", code, body)
		}
	})
	t.Run("a short identifier is used and left as data", func(t *testing.T) {
		code, body := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "approve", "user_id": 7})
		if code != http.StatusOK || string(mustJSON(t, body["output"])) != `{"approved_by":"bob"}` {
			t.Fatalf("%d %v", code, body)
		}
	})
	if got := up.received(); len(got) != 1 {
		t.Fatalf("only the identifier's call may be sent: %d requests", len(got))
	}
}

// rawSet stores a credential as RuoYi does, writing the table itself.
func rawSet(t *testing.T, e *env, user int64, key, value string) error {
	stored, kid, err := e.keys.Encrypt(user, key, value)
	if err != nil {
		return err
	}
	return e.st.PutCredential(t.Context(), &store.Credential{UserID: user, Key: key, Value: stored, KeyID: kid})
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}
