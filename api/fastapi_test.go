package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// fastAPI starts tests/fastapi/app.py, a real FastAPI service that
// validates every request with FastAPI's own machinery and echoes what it
// received, and returns its base URL. Without python3's fastapi the test
// is skipped, except under CI, where it must run.
func fastAPI(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import fastapi, uvicorn, multipart").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 with fastapi, uvicorn and multipart is required under CI: %v", err)
		}
		t.Skipf("python3 fastapi not importable (apt-get install -y python3-fastapi python3-uvicorn python3-multipart): %v", err)
	}
	cmd := exec.Command(python, "../tests/fastapi/app.py")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("FastAPI's log:\n%s", stderr.String())
		}
	})
	// The service prints its port once bound; it answers once uvicorn runs.
	port := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		port <- strings.TrimSpace(line)
	}()
	var base string
	select {
	case p := <-port:
		if p == "" {
			t.Fatalf("the FastAPI service did not start: %s", stderr.String())
		}
		base = "http://127.0.0.1:" + p
	case <-time.After(30 * time.Second):
		t.Fatalf("the FastAPI service did not report its port: %s", stderr.String())
	}
	for ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second); ; {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/openapi.json", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				cancel()
				return base
			}
		}
		if ctx.Err() != nil {
			cancel()
			t.Fatalf("the FastAPI service is not ready: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFastAPIFidelity (issue 17): a real FastAPI service's /openapi.json,
// imported through the engine's importer, gives plugins whose every
// operation, called blind through /v1/execute, FastAPI's own validation
// accepts, and the service received what the LLM said.
func TestFastAPIFidelity(t *testing.T) {
	base := fastAPI(t)
	st := testdb.Open(t, store.DialectSQLite)
	e := newEnv(t, st)
	code, body := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": base + "/openapi.json", "base_url": base})
	if failed, _ := body["failed"].([]any); code != http.StatusOK || len(failed) != 0 {
		t.Fatalf("import: %d %v", code, body)
	}
	var imported []string
	for _, n := range body["added"].([]any) {
		imported = append(imported, n.(string))
	}
	sort.Strings(imported)

	// Credentials: whatever keys the importer derived for the schemes.
	creds := map[string]string{}
	for _, name := range []string{"secure_basic", "secure_key"} {
		_, p := e.do("GET", "/v1/plugins/"+name, adminToken, nil)
		keys, _ := p["required_credentials"].([]any)
		if len(keys) == 0 {
			t.Fatalf("%s requires no credentials: %v", name, p)
		}
		for _, k := range keys {
			k := k.(string)
			switch {
			case strings.HasSuffix(k, "_USERNAME"):
				creds[k] = "alice"
			case strings.HasSuffix(k, "_PASSWORD"):
				creds[k] = "s3cret-pass"
			default:
				creds[k] = "key-0123456789"
			}
		}
	}

	called := map[string]bool{}
	call := func(t *testing.T, name string, args any) (int, map[string]any) {
		t.Helper()
		called[name] = true
		return e.do("POST", "/v1/execute", serviceToken, map[string]any{"name": name, "arguments": args, "credentials": creds})
	}
	tests := []struct {
		name   string
		args   string
		status float64 // FastAPI's answer
		want   string  // JSON FastAPI echoed, compared as a subset
	}{
		// Point 1: sort is a string enum (FastAPI wraps it in allOf with a
		// default); point 4: the omitted ones are FastAPI's to default.
		{"list_items", `{}`, 200, `{"sort":"name","limit":10,"q":null,"mode":"fast"}`},
		{"list_items", `{"sort":"date","limit":5,"q":"pens","mode":"slow"}`, 200, `{"sort":"date","limit":5,"q":"pens","mode":"slow"}`},
		{"get_item", `{"item_id":3,"color":"green"}`, 200, `{"item_id":3,"color":"green"}`},
		{"create_order", `{"item":"pen","quantity":2,"tags":["a","b"]}`, 201, `{"order":{"item":"pen","quantity":2,"color":"red","tags":["a","b"]}}`},
		// Point 2: discriminated unions.
		{"adopt", `{"pet":{"kind":"dog","name":"Rex"},"note":"n"}`, 200, `{"pet_type":"Dog","adoption":{"pet":{"kind":"dog","good":true,"name":"Rex"},"note":"n"}}`},
		{"adopt", `{"pet":{"kind":"cat","lives":3}}`, 200, `{"pet_type":"Cat","adoption":{"pet":{"kind":"cat","lives":3}}}`},
		{"plant_tree", `{"name":"root","children":[{"name":"a","children":[{"name":"b"}]},{"name":"c"}]}`, 200, `{"nodes":4}`},
		// Point 3: files, single and lists, named and typed as given.
		{"upload", `{"file":{"content":"hello","filename":"h.json"},"title":"T"}`, 200, `{"title":"T","filename":"h.json","content_type":"application/json","content":"hello"}`},
		{"upload", `{"file":"plain","title":"T2"}`, 200, `{"title":"T2","filename":"file","content":"plain"}`},
		{"upload_many", `{"files":["one",{"content":"{}","filename":"two.json"}],"tags":["x","y"]}`, 200,
			`{"files":[{"filename":"files","content_type":"application/octet-stream","content":"one"},{"filename":"two.json","content_type":"application/json","content":"{}"}],"tags":["x","y"]}`},
		{"login", `{"username":"bob","password":"pw","remember":true,"scopes":["a","b"]}`, 200, `{"username":"bob","password_length":2,"remember":true,"scopes":["a","b"]}`},
		{"whoami", `{"x-request-id":"r-1","session":"s/1=2+x","theme":"dark"}`, 200, `{"x_request_id":"r-1","session":"s/1=2+x","theme":"dark"}`},
		{"secure_basic", `{}`, 200, `{"authenticated":true}`},
		{"secure_key", `{}`, 200, `{"key_ok":true}`},
		{"report", `{"rows":3}`, 200, `"key,total\nk0,0\nk1,10\nk2,20\n"`},
		{"legacy", `{"code":"old-1"}`, 200, `{"deleted":"old-1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, res := call(t, tt.name, json.RawMessage(tt.args))
			if code != http.StatusOK || res["ok"] != true || res["http_status"] != tt.status {
				t.Fatalf("FastAPI refused %s: %d %v", tt.args, code, res)
			}
			var want any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if msg := subset(want, res["output"], "output"); msg != "" {
				t.Errorf("%s\nFastAPI received: %v", msg, res["output"])
			}
		})
	}
	for _, name := range imported {
		if !called[name] {
			t.Errorf("the imported operation %s was not called", name)
		}
	}

	// Refusals, before anything is sent, that name what is wrong.
	refusals := []struct {
		name, args string
		want       []string
	}{
		{"create_order", `{"item":"pen","quantity":0}`, []string{"quantity must be greater than 0"}},
		{"list_items", `{"bogus":1}`, []string{"bogus is not a known argument (the known ones are limit, mode, q, sort)"}},
		{"adopt", `{"pet":{"lives":3}}`, []string{"pet matches none of the allowed shapes", "kind is required"}},
	}
	for _, r := range refusals {
		code, res := call(t, r.name, json.RawMessage(r.args))
		msg := errMessage(res)
		for _, w := range r.want {
			if code != http.StatusUnprocessableEntity || !strings.Contains(msg, w) {
				t.Errorf("%s %s: %d %s, want 422 saying %q", r.name, r.args, code, msg, w)
			}
		}
	}

	// What the LLM is shown.
	_, tools := e.do("GET", "/v1/tools", serviceToken, nil)
	shown := map[string]map[string]any{}
	for _, tl := range tools["tools"].([]any) {
		f := tl.(map[string]any)["function"].(map[string]any)
		shown[f["name"].(string)] = f
	}
	param := func(tool string, path ...string) any {
		var v any = shown[tool]["parameters"]
		for _, k := range path {
			v = v.(map[string]any)[k]
		}
		return v
	}
	if s := param("list_items", "properties", "sort").(map[string]any); s["type"] != "string" || fmt.Sprint(s["enum"]) != "[name date]" {
		t.Errorf("sort is shown as %v, want a string enum", s)
	}
	pet := param("adopt", "properties", "pet").(map[string]any)
	if _, ok := pet["oneOf"]; ok || len(pet["anyOf"].([]any)) != 2 {
		t.Errorf("pet is shown as %v, want anyOf", pet)
	}
	for i, alt := range pet["anyOf"].([]any) {
		a := alt.(map[string]any)
		kind := a["properties"].(map[string]any)["kind"].(map[string]any)
		if !slices.Contains(a["required"].([]any), any("kind")) || kind["const"] != []string{"cat", "dog"}[i] {
			t.Errorf("pet alternative %d does not require kind with its const: %v", i, a)
		}
	}
	files := param("upload_many", "properties", "files", "items").(map[string]any)
	if len(files["anyOf"].([]any)) != 2 || !strings.Contains(files["description"].(string), "filename") {
		t.Errorf("a list of files is shown as %v", files)
	}
	if d := shown["legacy"]["description"].(string); !strings.HasPrefix(d, "Deprecated") {
		t.Errorf("the deprecated operation says %q", d)
	}
}

// subset reports where got lacks or differs from what want has (objects
// compared on want's keys, everything else whole); "" when it has it all.
func subset(want, got any, at string) string {
	if w, ok := want.(map[string]any); ok {
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %v, want an object", at, got)
		}
		for k, v := range w {
			if msg := subset(v, g[k], at+"."+k); msg != "" {
				return msg
			}
		}
		return ""
	}
	if w, ok := want.([]any); ok {
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: got %v, want %v", at, got, want)
		}
		for i := range w {
			if msg := subset(w[i], g[i], fmt.Sprintf("%s[%d]", at, i)); msg != "" {
				return msg
			}
		}
		return ""
	}
	if fmt.Sprint(want) != fmt.Sprint(got) {
		return fmt.Sprintf("%s: got %v, want %v", at, got, want)
	}
	return ""
}
