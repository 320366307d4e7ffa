package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestEgressDeniedIsTheEnvelopes (leftovers76): a call to an address the
// egress policy refuses is answered 200 with the envelope's error
// egress_denied (the dial refused, nothing sent), and so the description
// does not list that code among /v1/execute's 422 refusals.
func TestEgressDeniedIsTheEnvelopes(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite))
	plugin := `{"name":"meta","description":"d","parameters":{"type":"object","properties":{}},
	"execution":{"method":"GET","base_url":"http://169.254.169.254/latest"}}`
	code, body := e.do("POST", "/v1/execute", adminToken, map[string]any{"plugin": json.RawMessage(plugin), "arguments": map[string]any{}})
	apiErr, _ := body["error"].(map[string]any)
	if code != http.StatusOK || body["ok"] != false || apiErr["code"] != engine.CodeEgressDenied {
		t.Fatalf("a call to a refused address: %d %v", code, body)
	}

	type codedAnswer struct {
		Ref   string   `json:"$ref"`
		Codes []string `json:"x-error-codes"`
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Responses map[string]codedAnswer `json:"responses"`
		} `json:"components"`
	}
	resp, err := http.Get(e.url + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var post struct {
		Responses map[string]codedAnswer `json:"responses"`
	}
	if err := json.Unmarshal(doc.Paths["/v1/execute"]["post"], &post); err != nil {
		t.Fatal(err)
	}
	refused := post.Responses["422"]
	if name, ok := strings.CutPrefix(refused.Ref, "#/components/responses/"); ok {
		refused = doc.Components.Responses[name]
	}
	if len(refused.Codes) == 0 || slices.Contains(refused.Codes, engine.CodeEgressDenied) {
		t.Errorf("the description's 422 of /v1/execute lists %v", refused.Codes)
	}
}
