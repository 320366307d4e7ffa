package client_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/api/client"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

const serviceToken = "service-secret-token-0123"

// TestClientCallsRuntimeRoutes: the generated client, as RuoYi's side
// would use it with the service token, lists the tools, executes one,
// runs the loop over it and reads the run back, against a real engine.
func TestClientCallsRuntimeRoutes(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"company":"ACME","q":"`+r.URL.Query().Get("q")+`"}`)
		}))
		t.Cleanup(up.Close)
		llm := openaitest.New(t)
		base := newEngine(t, st, llm)
		c, err := client.NewClientWithResponses(base, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+serviceToken)
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}

		// The catalog gets its plugin over the same API (the service may
		// not write it: the administrator's route, refused as described).
		plugin := client.Plugin{Name: "lookup", Description: "Look a company up.",
			Parameters: client.PluginParameters{Type: "object", Properties: &map[string]any{"q": map[string]any{"type": "string"}}},
			Execution:  client.PluginExecution{Method: ptr("GET"), BaseUrl: ptr(up.URL)}}
		if res, err := c.CreatePluginWithResponse(ctx, plugin); err != nil || res.JSON403 == nil || res.JSON403.Error.Code != "forbidden" {
			t.Fatalf("create with the service token: %v %s", err, body(res))
		}
		admin := func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer admin-secret-token-0123")
			return nil
		}
		if res, err := c.CreatePluginWithResponse(ctx, plugin, admin); err != nil || res.JSON201 == nil || res.JSON201.Name != "lookup" {
			t.Fatalf("create: %v %s", err, body(res))
		}

		tools, err := c.ListToolsWithResponse(ctx, &client.ListToolsParams{})
		if err != nil || tools.JSON200 == nil {
			t.Fatalf("GET /v1/tools: %v %s", err, body(tools))
		}
		list, err := tools.JSON200.AsToolList()
		if err != nil || list.Total != 1 || list.Tools[0].Function.Name != "lookup" || list.Tools[0].Consequential {
			t.Fatalf("tools: %v %+v", err, list)
		}

		var user client.UserID
		user.FromUserID0(7)
		exec, err := c.ExecuteWithResponse(ctx, client.ExecuteRequest{Name: ptr("lookup"), Arguments: map[string]any{"q": "acme"}, UserId: &user})
		if err != nil || exec.JSON200 == nil {
			t.Fatalf("POST /v1/execute: %v %s", err, body(exec))
		}
		result, err := exec.JSON200.AsExecuteResult()
		if out, _ := result.Output.(map[string]any); err != nil || !result.Ok || result.HttpStatus != 200 || out["q"] != "acme" || result.ExecutionId == "" {
			t.Fatalf("execute result: %v %+v", err, result)
		}

		llm.Script(
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "lookup", Arguments: `{"q":"acme"}`}}},
			openaitest.Turn{Content: "ACME it is."},
		)
		run, err := c.CreateRunWithResponse(ctx, client.RunRequest{UserId: &user, PluginNames: &[]string{"lookup"},
			Messages: []map[string]any{{"role": "user", "content": "Look up ACME"}}})
		if err != nil || run.JSON200 == nil || run.JSON200.Status != client.RunReplyStatusCompleted {
			t.Fatalf("POST /v1/runs: %v %s", err, body(run))
		}
		got, err := c.GetRunWithResponse(ctx, run.JSON200.RunId)
		if err != nil || got.JSON200 == nil {
			t.Fatalf("GET /v1/runs/{run_id}: %v %s", err, body(got))
		}
		if stored, err := got.JSON200.AsRunReply(); err != nil || stored.RunId != run.JSON200.RunId || (*stored.Message)["content"] != "ACME it is." {
			t.Fatalf("stored run: %v %+v", err, stored)
		}

		// An error answer decodes into the envelope.
		missing, err := c.GetRunWithResponse(ctx, "no-such-run")
		if err != nil || missing.JSON404 == nil || missing.JSON404.Error.Code != "run_not_found" {
			t.Fatalf("a missing run: %v %s", err, body(missing))
		}
	})
}

func newEngine(t *testing.T, st *store.Store, llm *openaitest.Server) string {
	key := make([]byte, 32)
	rand.Read(key)
	kr, err := auth.ParseKeyring(base64.StdEncoding.EncodeToString(key), "")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	creds := auth.NewCredentialService(st, kr)
	ex := engine.NewExecutor(egresstest.Client(t))
	ex.Credentials, ex.Logger = creds, log
	s := &api.Server{Store: st, Creds: creds, Executor: ex, Logger: log,
		AdminToken: "admin-secret-token-0123", ServiceToken: serviceToken, HTTPClient: egresstest.Client(t),
		Runner: &loop.Runner{Client: loop.NewClient(llm.Config()), Executor: ex, DefaultModel: "scripted",
			LLMTimeout: 2 * time.Second, LLMBackoff: time.Millisecond}}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs.URL
}

// body is a generated answer's status and body, for a failure's message.
func body(res any) string {
	v := reflect.ValueOf(res)
	if v.IsNil() {
		return "no answer"
	}
	return fmt.Sprintf("%s %s", v.Elem().FieldByName("HTTPResponse").Interface().(*http.Response).Status, v.Elem().FieldByName("Body").Bytes())
}

func ptr[T any](v T) *T { return &v }
