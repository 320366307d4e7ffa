package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func TestMCPServers(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		web := &store.MCPServer{Name: "runbook", Transport: store.TransportStreamableHTTP, URL: "https://mcp.example.com/mcp",
			Headers:    store.JSON(`{"X-Tenant":"acme"}`),
			AuthConfig: store.JSON(`{"type":"bearer","token":"rb_token"}`)}
		if err := s.CreateMCPServer(ctx, web); err != nil {
			t.Fatalf("CreateMCPServer: %v", err)
		}
		if len(web.ID) != 36 || web.Status != store.StatusEnabled {
			t.Errorf("CreateMCPServer set id %q status %q, want a UUID and enabled", web.ID, web.Status)
		}
		// A given id is kept; here it is another server's name, which must
		// not shadow that server's lookup by id.
		cmd := &store.MCPServer{ID: "runbook-2", Name: web.ID, Transport: store.TransportStdio, Command: store.JSON(`["node","server.js"]`)}
		if err := s.CreateMCPServer(ctx, cmd); err != nil {
			t.Fatalf("CreateMCPServer stdio: %v", err)
		}
		wantErrIs(t, "CreateMCPServer same name", s.CreateMCPServer(ctx, &store.MCPServer{Name: "runbook", Transport: store.TransportSSE}), store.ErrDuplicate)

		for ref, wantID := range map[string]string{web.ID: web.ID, "runbook": web.ID, "runbook-2": "runbook-2"} {
			got, err := s.GetMCPServer(ctx, ref)
			if err != nil || got.ID != wantID {
				t.Fatalf("GetMCPServer(%q) = %+v, %v; want id %q", ref, got, err, wantID)
			}
		}
		_, err := s.GetMCPServer(ctx, "nope")
		wantErrIs(t, "GetMCPServer unknown", err, store.ErrNotFound)

		got, _ := s.GetMCPServer(ctx, "runbook")
		h, err := got.HeaderMap()
		if err != nil || h["X-Tenant"] != "acme" {
			t.Errorf("HeaderMap = %v, %v", h, err)
		}
		got, _ = s.GetMCPServer(ctx, "runbook-2")
		if argv, err := got.Argv(); err != nil || len(argv) != 2 || argv[1] != "server.js" {
			t.Errorf("Argv = %v, %v", argv, err)
		}

		at := time.Now()
		tools := store.JSON(`[{"name":"rb.answer","inputSchema":{"type":"object"}}]`)
		if err := s.UpdateMCPToolsCache(ctx, web.ID, tools, at); err != nil {
			t.Fatalf("UpdateMCPToolsCache: %v", err)
		}
		wantErrIs(t, "UpdateMCPToolsCache unknown", s.UpdateMCPToolsCache(ctx, "nope", tools, at), store.ErrNotFound)
		got, _ = s.GetMCPServer(ctx, web.ID)
		var cached []map[string]any
		if err := json.Unmarshal(got.ToolsCache, &cached); err != nil || len(cached) != 1 || cached[0]["name"] != "rb.answer" {
			t.Errorf("tools_cache = %s (%v)", got.ToolsCache, err)
		}
		if got.ToolsCachedTime == nil || !got.ToolsCachedTime.Equal(at.UTC().Truncate(time.Second)) {
			t.Errorf("tools_cached_time = %v, want %v", got.ToolsCachedTime, at.UTC().Truncate(time.Second))
		}

		list, err := s.ListMCPServers(ctx)
		if err != nil || len(list) != 2 || list[0].Name > list[1].Name {
			t.Fatalf("ListMCPServers = %+v, %v", list, err)
		}
		// Plugins calling it, by id or by name, are disabled; others stay.
		mcpPlugin := func(name, ref string) {
			t.Helper()
			row := &store.Plugin{Name: name, Description: "d", ParameterSchema: store.JSON(`{"type":"object"}`),
				ExecutionConfig: store.JSON(fmt.Sprintf(`{"execution":{"type":"mcp","mcp_id":%q,"tool_name":"t"},"auth_config":{"type":""}}`, ref)),
				Status:          store.StatusEnabled, RequiredCredentials: store.JSON(`[]`)}
			if err := s.CreatePlugin(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		mcpPlugin("by_id", web.ID)
		mcpPlugin("by_name", web.Name)
		mcpPlugin("other", "another-server")
		disabled, err := s.DeleteMCPServer(ctx, web.ID, "test")
		if err != nil || fmt.Sprint(disabled) != "[by_id by_name]" {
			t.Fatalf("DeleteMCPServer: %v %v", disabled, err)
		}
		for name, want := range map[string]string{"by_id": store.StatusDisabled, "by_name": store.StatusDisabled, "other": store.StatusEnabled} {
			if p, err := s.GetPlugin(ctx, name); err != nil || p.Status != want || (want == store.StatusDisabled && p.UpdateBy != "test") {
				t.Errorf("%s after the server's removal: %+v %v", name, p, err)
			}
		}
		_, err = s.DeleteMCPServer(ctx, web.ID, "test")
		wantErrIs(t, "DeleteMCPServer again", err, store.ErrNotFound)
	})
}
