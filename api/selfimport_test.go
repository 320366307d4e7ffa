package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestEngineImportsItsOwnAPI (issue 45 point 2): GET /v1/openapi.json
// answers without a token; the engine imports it as any OpenAPI document,
// every operation a plugin and none failed; and a run calls the engine's
// own GET /v1/tools through the imported plugin, the user's token its
// credential.
func TestEngineImportsItsOwnAPI(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"company":"ACME"}`)
		})
		llm := openaitest.New(t)
		e := newEnv(t, st, withModel(llm))
		userToken := e.addLookup(up.URL, "sk-self-0123456789")

		resp, err := http.Get(e.url + "/v1/openapi.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			OpenAPI string                                `json:"openapi"`
			Paths   map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK || doc.OpenAPI != "3.1.0" {
			t.Fatalf("GET /v1/openapi.json without a token: %d %v %q", resp.StatusCode, err, doc.OpenAPI)
		}
		operations := 0
		for _, item := range doc.Paths {
			for method := range item {
				if strings.Contains("get put post patch delete", method) {
					operations++
				}
			}
		}

		code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": e.url + "/v1/openapi.json", "prefix": "bx_"})
		added, _ := res["added"].([]any)
		if failed, _ := res["failed"].([]any); code != http.StatusOK || len(failed) != 0 || len(added) != operations {
			t.Fatalf("import: %d, %d of %d operations added: %v", code, len(added), operations, res)
		}
		code, tool := e.do("GET", "/v1/plugins/bx_listTools", adminToken, nil)
		auth, _ := tool["auth_config"].(map[string]any)
		if code != http.StatusOK || auth["type"] != "bearer" {
			t.Fatalf("the imported GET /v1/tools: %d %v", code, tool)
		}
		key := auth["token"].(string)

		llm.Script(
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "bx_listTools", Arguments: `{"names":"lookup"}`}}},
			openaitest.Turn{Content: "The catalog has lookup."},
		)
		code, reply := e.do("POST", "/v1/runs", userToken, map[string]any{
			"messages":     []map[string]string{{"role": "user", "content": "Which tools do I have?"}},
			"plugin_names": []string{"bx_listTools"},
			"credentials":  map[string]string{key: userToken},
		})
		steps, _ := reply["steps"].([]any)
		if code != http.StatusOK || reply["status"] != "completed" || len(steps) != 1 {
			t.Fatalf("run: %d %v", code, reply)
		}
		if step := steps[0].(map[string]any); step["status"] != "ok" || step["http_status"] != float64(200) {
			t.Fatalf("the run's call of its own GET /v1/tools: %v", step)
		}
		// What the model read back: the engine's own tool list.
		var result string
		for _, m := range reply["messages"].([]any) {
			if m := m.(map[string]any); m["role"] == "tool" {
				result = m["content"].(string)
			}
		}
		if !strings.Contains(result, `"name":"lookup"`) || !strings.Contains(result, `"total":1`) {
			t.Fatalf("the tool's result: %s", result)
		}
	})
}
