package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/access"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestAnswerUpstreamQuestionAttacks: answers to an upstream's question on
// the approval page that must not reach it (issue 48 point 4) — content
// that is not an object, a decline carrying content, content over the
// 16 KiB an answer may be (413 answer_too_large, naming the limit) — are
// refused and the question still waits; the right user answering twice
// at once: one wins, the others 409, and the upstream gets one answer; an
// answer after the call ended: 409, nothing reaches the upstream.
func TestAnswerUpstreamQuestionAttacks(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := askingEnv(t, st)
		type answer struct {
			code int
			out  map[string]any
		}
		done := make(chan answer, 1)
		go func() {
			code, out := DoJSON(t, e.url, "POST", "/v1/execute", mcpService, map[string]any{"name": "ask_person", "user_id": "7", "arguments": map[string]any{}})
			done <- answer{code, out}
		}()
		path := "/v1/pending/" + waitQuestion(t, e)["id"].(string)
		for _, tc := range []struct {
			name string
			body any
			code int
			err  string
		}{
			{"content a list", `{"action":"accept","content":[{"size":"L"}]}`, http.StatusBadRequest, "invalid_payload"},
			{"content a string", `{"action":"accept","content":"L"}`, http.StatusBadRequest, "invalid_payload"},
			{"declined carrying content", map[string]any{"action": "decline", "content": map[string]any{"note": "typed"}}, http.StatusBadRequest, "invalid_payload"},
			{"cancelled carrying content", map[string]any{"action": "cancel", "content": map[string]any{"size": "L"}}, http.StatusBadRequest, "invalid_payload"},
			{"huge content", map[string]any{"action": "accept", "content": map[string]any{"size": "L", "note": strings.Repeat("x", 70<<10)}}, http.StatusRequestEntityTooLarge, "answer_too_large"},
			{"huge content in a field not asked", map[string]any{"action": "accept", "content": map[string]any{"size": "L", "blob": strings.Repeat("x", 1<<20)}}, http.StatusRequestEntityTooLarge, "answer_too_large"},
		} {
			code, out := e.do("POST", path, e.userTok, tc.body)
			if code != tc.code || errCode(out) != tc.err {
				t.Errorf("%s: %d %v, want %d %s", tc.name, code, out, tc.code, tc.err)
			}
			if tc.code == http.StatusRequestEntityTooLarge {
				d, _ := out["error"].(map[string]any)["details"].(map[string]any)
				if d["max"] != float64(16384) || !strings.Contains(errMessage(out), "more than the 16384 an answer may be") {
					t.Errorf("%s: %v does not name the limit", tc.name, out)
				}
			}
		}
		if it, err := st.GetPendingItem(context.Background(), strings.TrimPrefix(path, "/v1/pending/")); err != nil || it.Status != store.PendingWaiting {
			t.Fatalf("after the refused answers the question is %+v, %v; want waiting", it, err)
		}

		// The right user, eight answers at once: one wins.
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			codes = map[int][]string{}
		)
		for _, size := range []string{"S", "L", "S", "L", "S", "L", "S", "L"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _ := e.do("POST", path, e.userTok, map[string]any{"action": "accept", "content": map[string]any{"size": size}})
				mu.Lock()
				codes[code] = append(codes[code], size)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(codes[http.StatusOK]) != 1 || len(codes[http.StatusConflict]) != 7 {
			t.Fatalf("eight answers at once: %v, want one 200 and seven 409", codes)
		}
		a := <-done
		b, _ := json.Marshal(a.out)
		if want := `answered {\"action\":\"accept\",\"content\":{\"size\":\"` + codes[http.StatusOK][0] + `\"}}`; a.code != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("/v1/execute = %d %s; want the winner's answer, once: %s", a.code, b, want)
		}

		// A question whose call ended (its client went away) is closed: an
		// answer then reaches nobody.
		ctx, cancel := context.WithCancel(context.Background())
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			body, _ := json.Marshal(map[string]any{"name": "ask_person", "user_id": "7", "arguments": map[string]any{}})
			req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/execute", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+mcpService)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		id := waitQuestion(t, e)["id"].(string)
		cancel()
		<-ended
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if it, err := st.GetPendingItem(context.Background(), id); err == nil && it.Status != store.PendingWaiting {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the question of a call that ended still waits")
			}
		}
		if code, out := e.do("POST", "/v1/pending/"+id, e.userTok, map[string]any{"action": "accept", "content": map[string]any{"size": "L"}}); code != http.StatusConflict || errCode(out) != "question_closed" {
			t.Errorf("an answer after the call ended: %d %v", code, out)
		}
	})
}

// TestHostileQuestionEntryPoints: the executor decides on an upstream's
// question wherever the call came from (issue 48 point 4): a link whose
// userinfo spoofs its host is refused at once through POST /v1/execute,
// /v1/tools/{name}/call, /mcp (a 2025 session with and without
// elicitation, a 2026-07-28 client) and /mcp/agents/{name} — nobody is
// asked, nothing waits.
func TestHostileQuestionEntryPoints(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := askingEnv(t, st, func(s *Server) {
			checker := &access.Checker{} // open: agents need an access rule
			s.Executor.Access, s.Access = checker, checker
		})
		if code, out := e.do("POST", "/v1/agents", mcpAdmin, map[string]any{"name": "helper", "tools": map[string]any{"names": []string{"ask_spoof"}}}); code != http.StatusCreated {
			t.Fatalf("add agent: %d %v", code, out)
		}
		const refused = "carries a user name before its host"
		viaMCP := func(path, version string, elicit bool) func(t *testing.T) string {
			return func(t *testing.T) string {
				opts := &sdk.ClientOptions{}
				if elicit {
					opts.Capabilities = &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}}
					opts.ElicitationHandler = func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						t.Errorf("the client was asked %+v", req.Params)
						return &sdk.ElicitResult{Action: "accept"}, nil
					}
				}
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "person", Version: "1"}, opts).Connect(t.Context(),
					&sdk.StreamableClientTransport{Endpoint: e.url + path, HTTPClient: &http.Client{Transport: Bearer(e.userTok)}}, &sdk.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "ask_spoof", Arguments: map[string]any{}})
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(res)
				return string(b)
			}
		}
		viaAPI := func(path, token string, body any) func(t *testing.T) string {
			return func(t *testing.T) string {
				_, out := e.do("POST", path, token, body)
				b, _ := json.Marshal(out)
				return string(b)
			}
		}
		for _, tc := range []struct {
			name string
			call func(t *testing.T) string
		}{
			{"POST /v1/execute", viaAPI("/v1/execute", mcpService, map[string]any{"name": "ask_spoof", "user_id": "7", "arguments": map[string]any{}})},
			{"/v1/tools/{name}/call", viaAPI("/v1/tools/ask_spoof/call", e.userTok, map[string]any{})},
			{"/mcp 2025-11-25 without elicitation", viaMCP("/mcp", "2025-11-25", false)},
			{"/mcp 2025-11-25 with elicitation", viaMCP("/mcp", "2025-11-25", true)},
			{"/mcp 2026-07-28 with elicitation", viaMCP("/mcp", "2026-07-28", true)},
			{"/mcp/agents/{name} 2025-11-25", viaMCP("/mcp/agents/helper", "2025-11-25", true)},
			{"/mcp/agents/{name} 2026-07-28", viaMCP("/mcp/agents/helper", "2026-07-28", true)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				start := time.Now()
				got := tc.call(t)
				if !strings.Contains(got, refused) || strings.Contains(got, "opened") {
					t.Errorf("the upstream's link was not refused: %s", got)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("took %v: it waited for a question nobody was asked", d)
				}
				user := int64(7)
				if n, err := st.CountWaiting(context.Background(), &user); err != nil || n != 0 {
					t.Errorf("%d questions wait (%v)", n, err)
				}
			})
		}
	})
}
