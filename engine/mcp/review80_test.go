//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577), but upstreams of 2025 send logs: these servers do

package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcp/mcptest"
	"github.com/blindexec/blindexec/internal/logbuf"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/tracing/tracingtest"
)

// TestSessionSecretsMaskedOnFailure (review80): the access token the
// engine buys for an oauth2 MCP server (a session's own secret, which
// mcp78 masks in a listing) was masked in a call's result only when the
// session had opened: an upstream refusing the handshake with an error
// quoting the bearer it was sent ("token at-… expired") had the token
// in the call's error — the model's text, the execution record, the
// API's answer —; and every failure's "MCP call failed" log line, and the
// tools route's answer, were masked with the stored keys alone. The
// token buys the API as the server's client without the engine.
func TestSessionSecretsMaskedOnFailure(t *testing.T) {
	const accessToken = "at-Rv80-9f3Kq2Lx7Wm4Zt"
	idp := tokenEndpoint(t, accessToken)
	creds := map[string]string{"MED_ID": "med-client", "MED_SECRET": "med-secret-0123456789"}
	for _, method := range []string{"initialize", "tools/call", "tools/list"} {
		t.Run(method, func(t *testing.T) {
			up := mcptest.New(t)
			up.MCP.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
				return func(ctx context.Context, m string, req sdk.Request) (sdk.Result, error) {
					if m == method {
						return nil, &jsonrpc.Error{Code: -32001, Message: "refused " + req.GetExtra().Header.Get("Authorization")}
					}
					return next(ctx, m, req)
				}
			})
			row := httpServer(up)
			row.AuthConfig = store.JSON(`{"type":"oauth2","oauth2":{"token_url":"` + idp.URL + `/token","client_id":"MED_ID","client_secret":"MED_SECRET"}}`)
			ex, m := setup(t, row)
			log := new(logbuf.Buffer)
			m.Logger = slog.New(slog.NewTextHandler(log, nil))
			p := mcpPlugin("echo", nil)
			p.RequiredCredentials = []string{"MED_ID", "MED_SECRET"}
			var shown []string
			if method == "tools/list" {
				_, err := m.Tools(context.Background(), "srv-1", creds, true)
				if err == nil {
					t.Fatal("the listing refused: no error")
				}
				shown = append(shown, "the tools route's error: "+m.Masker(context.Background(), "srv-1", creds).String(err.Error()))
			} else {
				res, _ := ex.Execute(context.Background(), engine.Call{Plugin: p, Arguments: json.RawMessage(`{"text":"hi"}`), Credentials: creds})
				if res == nil || res.Error == nil {
					t.Fatalf("the call refused upstream: %+v", res)
				}
				b, _ := json.Marshal(res)
				shown = append(shown, "the call's result: "+string(b))
			}
			shown = append(shown, "the engine's log: "+log.String())
			for _, s := range shown {
				if !strings.Contains(s, "refused") {
					t.Errorf("the upstream's refusal not there: %.400s", s)
				}
				if strings.Contains(s, accessToken) {
					t.Errorf("%.600s", s)
				}
			}
		})
	}
}

// tokenEndpoint is an oauth2 token endpoint handing out accessToken.
func tokenEndpoint(t *testing.T, accessToken string) *httptest.Server {
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"`+accessToken+`","token_type":"bearer","expires_in":3600}`)
	}))
	t.Cleanup(idp.Close)
	return idp
}

// TestSessionSecretsMaskedInCallNotices (review80): the same token was
// given to the call's masker only once the call had returned, so a log
// message quoting it while the call ran, on the session the call opened,
// reached the call's MCP client and its span unmasked.
func TestSessionSecretsMaskedInCallNotices(t *testing.T) {
	const accessToken = "at-Rv80-Nt5Hq8Vw2Lc6Xp"
	idp := tokenEndpoint(t, accessToken)
	up := mcptest.New(t)
	up.MCP.AddTool(&sdk.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: "sent " + req.Extra.Header.Get("Authorization")})
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	row := httpServer(up)
	row.AuthConfig = store.JSON(`{"type":"oauth2","oauth2":{"token_url":"` + idp.URL + `/token","client_id":"MED_ID","client_secret":"MED_SECRET"}}`)
	ex, _ := setup(t, row)
	var mu sync.Mutex
	var heard []string
	ctx := engine.WithListener(context.Background(), func(n engine.Notice) {
		mu.Lock()
		heard = append(heard, string(n.Data))
		mu.Unlock()
	}, false)
	p := mcpPlugin("echo", nil)
	p.RequiredCredentials = []string{"MED_ID", "MED_SECRET"}
	res, err := ex.Execute(ctx, engine.Call{Plugin: p, Arguments: json.RawMessage(`{}`),
		Credentials: map[string]string{"MED_ID": "med-client", "MED_SECRET": "med-secret-0123456789"}})
	if err != nil || !res.OK {
		t.Fatalf("%+v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) == 0 || strings.Contains(strings.Join(heard, " "), accessToken) {
		t.Errorf("the call's client heard %q", heard)
	}
}

// TestUpstreamLogLevelMasked (review80): an upstream's log message is
// masked by the call's masker (Prepared.Notify) in its data, logger and
// message, but not in its level, a string the upstream writes as it
// likes: a level quoting the credential the upstream was sent reached the
// call's MCP client (relayed: an unknown level passes the SDK's filter as
// debug), the engine's log and the call's span; one no call can be given
// reached the engine's log with no masker at all.
func TestUpstreamLogLevelMasked(t *testing.T) {
	tok := tokenA["mcp_token"]
	ctx, exp := tracingtest.Start(t)
	var mu sync.Mutex
	var heard []string
	ctx = engine.WithListener(ctx, func(n engine.Notice) {
		mu.Lock()
		heard = append(heard, n.Level)
		mu.Unlock()
	}, false)
	sent := make(chan struct{})
	log := loggedCallContext(t, ctx, func(ctx context.Context, req *sdk.CallToolRequest) {
		level := sdk.LoggingLevel("debug " + strings.TrimPrefix(req.Extra.Header.Get("Authorization"), "Bearer "))
		req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: level, Data: "in the call"})
		go func() { // after the call: no call to give it to
			defer close(sent)
			time.Sleep(200 * time.Millisecond)
			req.Session.Log(context.Background(), &sdk.LoggingMessageParams{Level: level, Data: "after the call"})
		}()
	})
	<-sent
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(log.String(), "not attributable") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	shown := []string{"the client heard: " + strings.Join(heard, ", "), "the engine's log: " + log.String()}
	mu.Unlock()
	var events []string
	for _, s := range exp.GetSpans() {
		for _, e := range s.Events {
			for _, a := range e.Attributes {
				if a.Key == attribute.Key("log.level") {
					events = append(events, a.Value.Emit())
				}
			}
		}
	}
	shown = append(shown, "the span: "+strings.Join(events, ", "))
	if len(heard) == 0 || len(events) == 0 || !strings.Contains(log.String(), "not attributable") {
		t.Fatalf("the message not relayed, traced or logged: %q", shown)
	}
	for _, s := range shown {
		if strings.Contains(s, tok) {
			t.Errorf("%.600s", s)
		}
	}
}

// TestServerURLQueryCredentialMasked (review80): an MCP server registered
// at a URL carrying its key in the query (…/mcp?api_key=…, as hosted MCP
// gateways hand them out) had it quoted whole by every failure reaching
// it: Go's client quotes the URL it posted to, and the "MCP call failed"
// log line, the tools route's and an import's answer, and the CLI's
// error carried it. leftovers78 hides such values in an import's
// location; a server's URL is now masked alike wherever a failure of a
// call to it is said.
func TestServerURLQueryCredentialMasked(t *testing.T) {
	const key = "qk-Rv80-Lm3Tz8Wq5Hn2"
	row := httpServer(mcptest.New(t))
	row.URL = "http://127.0.0.1:1/mcp?tenant=acme&api_key=" + key
	ex, m := setup(t, row)
	log := new(logbuf.Buffer)
	m.Logger = slog.New(slog.NewTextHandler(log, nil))
	res, _ := ex.Execute(context.Background(), engine.Call{Plugin: mcpPlugin("echo", nil), Arguments: json.RawMessage(`{}`), Credentials: tokenA})
	if res == nil || res.Error == nil {
		t.Fatalf("a call of a server on a closed port: %+v", res)
	}
	_, err := m.Tools(context.Background(), "srv-1", tokenA, true)
	if err == nil {
		t.Fatal("a listing of a server on a closed port: no error")
	}
	for _, s := range []string{"the engine's log: " + log.String(), "the listing's error: " + err.Error()} {
		if !strings.Contains(s, "tenant=acme") || strings.Contains(s, key) {
			t.Errorf("%.600s", s)
		}
	}
}
