package api_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/corpus"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// Stripe's imported auth is basic with the secret key as user name and an
// empty password (issue 51 point 6). The empty password is a value, stored
// or in the payload; the user name is then the call's secret: masked in
// the answer and the execution record, and held to a secret's length.
func TestBasicEmptyPassword(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		const key = "sk_test_51HqLyjWDarjtT1zdp7dcStripe"
		// The upstream echoes what it authenticated, as an API may.
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			user, pass, _ := r.BasicAuth()
			json.NewEncoder(w).Encode(map[string]string{"user": user, "password": pass, "authorization": r.Header.Get("Authorization")})
		})
		e := newEnv(t, st)
		plugin := `{"name":"stripe_list_customers","description":"List customers","parameters":{"type":"object"},
		"execution":{"method":"GET","base_url":"` + up.URL + `/v1/customers"},
		"auth_config":{"type":"basic","username":"STRIPE_KEY","password":"STRIPE_PASSWORD"}}`
		if code, body := e.do("POST", "/v1/plugins", adminToken, plugin); code != http.StatusCreated {
			t.Fatalf("add plugin: %d %v", code, body)
		}
		if code, body := e.do("PUT", "/v1/credentials/7/STRIPE_PASSWORD", adminToken, map[string]string{"value": ""}); code != http.StatusNoContent {
			t.Fatalf("store the empty password: %d %v", code, body)
		}
		// Another key's empty value is still refused, naming the field.
		if code, body := e.do("PUT", "/v1/credentials/7/OTHER", adminToken, map[string]string{"value": ""}); code != http.StatusBadRequest || !strings.Contains(errMessage(body), "value: ") {
			t.Errorf("empty value of another key: %d %v", code, body)
		}
		exec := func(payload map[string]any) map[string]any {
			t.Helper()
			code, body := e.do("POST", "/v1/execute", serviceToken, payload)
			if code != http.StatusOK && code != http.StatusUnprocessableEntity {
				t.Fatalf("execute: %d %v", code, body)
			}
			return body
		}
		// Without the key: missing, the empty password counted as present.
		out := exec(map[string]any{"name": "stripe_list_customers", "user_id": 7})
		if !strings.Contains(errMessage(out), `"code":"missing_credentials"`) || !strings.Contains(errMessage(out), "STRIPE_KEY") || strings.Contains(errMessage(out), "STRIPE_PASSWORD") {
			t.Fatalf("without the key: %v", out)
		}
		// A key too short to mask is refused.
		if code, body := e.do("PUT", "/v1/credentials/7/STRIPE_KEY", adminToken, map[string]string{"value": "sk"}); code != http.StatusNoContent {
			t.Fatalf("store a short user name (an identifier on its own): %d %v", code, body)
		}
		if out := exec(map[string]any{"name": "stripe_list_customers", "user_id": 7}); !strings.Contains(errMessage(out), "STRIPE_KEY") || !strings.Contains(errMessage(out), "cannot be masked") {
			t.Errorf("short user name with an empty password: %v", out)
		}
		if code, body := e.do("PUT", "/v1/credentials/7/STRIPE_KEY", adminToken, map[string]string{"value": key}); code != http.StatusNoContent {
			t.Fatalf("store the key: %d %v", code, body)
		}
		wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte(key+":"))
		for name, payload := range map[string]map[string]any{
			"stored":  {"name": "stripe_list_customers", "user_id": 7},
			"payload": {"name": "stripe_list_customers", "credentials": map[string]string{"STRIPE_KEY": key, "STRIPE_PASSWORD": ""}},
		} {
			out := exec(payload)
			if out["ok"] != true {
				t.Fatalf("%s: %v", name, out)
			}
			got := up.received()
			if h := got[len(got)-1].header.Get("Authorization"); h != wantAuth {
				t.Errorf("%s: upstream got Authorization %q, want %q", name, h, wantAuth)
			}
			raw, _ := json.Marshal(out)
			if strings.Contains(string(raw), key) || strings.Contains(string(raw), wantAuth[len("Basic "):]) {
				t.Errorf("%s: the answer shows the key: %s", name, raw)
			}
		}
		// Nor does any execution record.
		resp, err := http.NewRequest("GET", e.url+"/v1/executions?plugin=stripe_list_customers", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Header.Set("Authorization", "Bearer "+adminToken)
		r, err := http.DefaultClient.Do(resp)
		if err != nil {
			t.Fatal(err)
		}
		records, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusOK || strings.Contains(string(records), key) {
			t.Errorf("execution records: %d, key shown: %v", r.StatusCode, strings.Contains(string(records), key))
		}
	})
}

// TestNeededCredentials: GET /v1/credentials/{user}?needed=true lists the
// keys the user's enabled tools read, marks those the user lacks, and
// says which may be empty.
func TestNeededCredentials(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite))
	for _, doc := range []string{
		`{"name":"stripe_list","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"https://api.stripe.com/v1/customers"},
		  "auth_config":{"type":"basic","username":"STRIPE_KEY","password":"STRIPE_PASSWORD"}}`,
		`{"name":"lookup","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"https://api.example/"},
		  "auth_config":{"type":"bearer","token":"API_KEY"}}`,
		`{"name":"off","status":"1","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"https://off.example/"},
		  "auth_config":{"type":"bearer","token":"OFF_KEY"}}`,
	} {
		if code, body := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
			t.Fatalf("add: %d %v", code, body)
		}
	}
	if code, body := e.do("PUT", "/v1/credentials/7/API_KEY", adminToken, map[string]string{"value": "key-0123456789"}); code != http.StatusNoContent {
		t.Fatalf("set: %d %v", code, body)
	}
	code, body := e.do("GET", "/v1/credentials/7?needed=true", adminToken, nil)
	got, _ := json.Marshal(body["needed"])
	want := `[{"key":"API_KEY","set":true,"tools":["lookup"],"tools_total":1},` +
		`{"key":"STRIPE_KEY","set":false,"tools":["stripe_list"],"tools_total":1},` +
		`{"key":"STRIPE_PASSWORD","may_be_empty":true,"set":false,"tools":["stripe_list"],"tools_total":1}]`
	if code != http.StatusOK || string(got) != want {
		t.Errorf("needed: %d %s\nwant %s", code, got, want)
	}
	if code, body := e.do("GET", "/v1/credentials/7", adminToken, nil); code != http.StatusOK || body["needed"] != nil {
		t.Errorf("without needed=true: %d %v", code, body)
	}
	// needed is a boolean as the description reads one: ?needed=1 was
	// read as false, and a value that is none ignored (newcomer74).
	code, body = e.do("GET", "/v1/credentials/7?needed=1", adminToken, nil)
	if got, _ := json.Marshal(body["needed"]); code != http.StatusOK || string(got) != want {
		t.Errorf("needed=1: %d %s\nwant %s", code, got, want)
	}
	if code, body := e.do("GET", "/v1/credentials/7?needed=maybe", adminToken, nil); code != http.StatusBadRequest || !strings.Contains(errMessage(body), `needed: \"maybe\"`) {
		t.Errorf("needed=maybe: %d %v, want 400 naming needed", code, body)
	}
}

// TestStripeEmptyPassword: Stripe's own document, imported, reads its
// secret key as a basic-auth user name with an empty password; stored so,
// the call sends "key:" and shows the key nowhere.
func TestStripeEmptyPassword(t *testing.T) {
	doc := corpus.Read(t, "stripe/spec3.2022-04-12.e0123a38.json.gz")
	const key = "sk_test_4eC39HqLyjWDarjtT1zdp7dcStripe"
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		user, _, _ := r.BasicAuth()
		json.NewEncoder(w).Encode(map[string]string{"object": "list", "echo": user})
	})
	e := newEnv(t, testdb.Open(t, store.DialectSQLite))
	req, _ := http.NewRequest("POST", e.url+"/v1/plugins/import/openapi?prefix=st&base_url="+up.URL, bytes.NewReader(doc))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/vnd.oai.openapi+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("import: %d", resp.StatusCode)
	}
	code, p := e.do("GET", "/v1/plugins/st_GetCustomers", adminToken, nil)
	a, _ := p["auth_config"].(map[string]any)
	if code != http.StatusOK || a["type"] != "basic" {
		t.Fatalf("the imported plugin: %d %v", code, p)
	}
	user, pass := a["username"].(string), a["password"].(string)
	for k, v := range map[string]string{user: key, pass: ""} {
		if code, body := e.do("PUT", "/v1/credentials/7/"+k, adminToken, map[string]string{"value": v}); code != http.StatusNoContent {
			t.Fatalf("store %s: %d %v", k, code, body)
		}
	}
	code, out := e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": "st_GetCustomers", "user_id": 7})
	raw, _ := json.Marshal(out)
	got := up.received()
	if code != http.StatusOK || out["ok"] != true || len(got) != 1 || got[0].header.Get("Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte(key+":")) {
		t.Fatalf("the call: %d %s, sent %v", code, raw, got)
	}
	if strings.Contains(string(raw), key) {
		t.Errorf("the answer shows the key: %s", raw)
	}
}
