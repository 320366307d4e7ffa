package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

func TestCheckPlugin(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		srv := &store.MCPServer{Name: "med", Transport: store.TransportStreamableHTTP, URL: "https://mcp.example/mcp",
			AuthConfig: store.JSON(`{"type":"bearer","token":"med_token"}`)}
		if err := s.CreateMCPServer(ctx, srv); err != nil {
			t.Fatal(err)
		}
		mcpPlugin := func(ref string, creds ...string) *plugins.Plugin {
			return &plugins.Plugin{Name: "p", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`),
				Execution: plugins.Execution{Type: plugins.TypeMCP, MCPID: ref, ToolName: "t"}, RequiredCredentials: creds}
		}
		for _, tc := range []struct {
			name      string
			p         *plugins.Plugin
			field, in string // "" when accepted
		}{
			{"by id, its key", mcpPlugin(srv.ID, "med_token"), "", ""},
			{"by name, no keys", mcpPlugin("med"), "", ""},
			{"a key the server does not read", mcpPlugin("med", "med_token", "other"), "required_credentials[1]", `"other" is read by nothing: the auth config of MCP server "med" reads only med_token`},
			{"an unregistered server", mcpPlugin("nope"), "execution.mcp_id", `no MCP server "nope" is registered`},
			{"an HTTP plugin: nothing to look up", &plugins.Plugin{Name: "h"}, "", ""},
		} {
			err := catalog.CheckPlugin(ctx, s, tc.p)
			if tc.field == "" {
				if err != nil {
					t.Errorf("%s: %v", tc.name, err)
				}
				continue
			}
			var ve *plugins.ValidationError
			if !errors.As(err, &ve) || ve.Fields[0].Field != tc.field || !strings.Contains(ve.Fields[0].Message, tc.in) {
				t.Errorf("%s: %v, want %s: …%s…", tc.name, err, tc.field, tc.in)
			}
		}
	})
}

// TestTagsAndKeywordsRoundTrip: tags, keywords and response words (tool
// search) survive the row without a column of their own.
func TestTagsAndKeywordsRoundTrip(t *testing.T) {
	p := &plugins.Plugin{Name: "x", Description: "x", Parameters: []byte(`{"type":"object"}`),
		Execution: plugins.Execution{Method: "GET", BaseURL: "https://api.example.com"},
		Tags:      []string{"crm"}, Keywords: []string{"dedupe", "merge duplicates"}, ResponseWords: []string{"AmountDue"}}
	back := throughRow(t, p)
	if !slices.Equal(back.Tags, p.Tags) || !slices.Equal(back.Keywords, p.Keywords) || !slices.Equal(back.ResponseWords, p.ResponseWords) {
		t.Fatalf("tags %q keywords %q response words %q after the round trip", back.Tags, back.Keywords, back.ResponseWords)
	}
}

func TestMCPServerAuth(t *testing.T) {
	for _, tc := range []struct {
		column   string
		wantType string
		wantErr  bool
	}{
		{`{"type":"bearer","token":"rb_token"}`, plugins.AuthBearer, false},
		{``, "", false}, // an empty column is auth type none
		{`{"type":`, "", true},
	} {
		a, err := catalog.MCPServerAuth(&store.MCPServer{Name: "runbook", AuthConfig: store.JSON(tc.column)})
		if (err != nil) != tc.wantErr || a.Type != tc.wantType || (tc.wantType == plugins.AuthBearer && a.Token != "rb_token") {
			t.Errorf("MCPServerAuth(%s) = %+v, %v", tc.column, a, err)
		}
		if err != nil && !strings.Contains(err.Error(), `MCP server "runbook": auth_config`) {
			t.Errorf("error %q does not name the server and column", err)
		}
	}
}

// TestConsequentialRoundTrip: the administrator's setting lives in the
// consequential column (migration 00010), the import's suggestion in
// execution_config; both come back from the database, and a column RuoYi
// wrote by hand with another value is an error naming it.
func TestConsequentialRoundTrip(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		yes, no := true, false
		for _, tc := range []struct {
			name          string
			setting, hint *bool
			want          bool
		}{
			{"derived", nil, nil, true},
			{"suggested", nil, &no, false},
			{"set", &no, &yes, false},
		} {
			p := &plugins.Plugin{Name: "p_" + strings.ReplaceAll(tc.name, " ", "_"), Description: "d", Parameters: []byte(`{"type":"object"}`),
				Execution: plugins.Execution{Method: "POST", BaseURL: "https://api.example.com"}, Consequential: tc.setting, ConsequentialHint: tc.hint}
			row, err := catalog.RowFromPlugin(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CreatePlugin(ctx, row); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetPlugin(ctx, p.Name)
			if err != nil {
				t.Fatal(err)
			}
			back, err := catalog.PluginFromRow(got)
			if err != nil {
				t.Fatal(err)
			}
			if !equalBool(back.Consequential, tc.setting) || !equalBool(back.ConsequentialHint, tc.hint) || back.IsConsequential() != tc.want {
				t.Errorf("%s: got setting %v hint %v (consequential %v)", tc.name, back.Consequential, back.ConsequentialHint, back.IsConsequential())
			}
		}
		bad := "yes"
		if _, err := catalog.PluginFromRow(&store.Plugin{Name: "x", Consequential: &bad}); err == nil || !strings.Contains(err.Error(), "consequential") {
			t.Errorf("a column holding %q: %v, want an error naming consequential", bad, err)
		}
	})
}

func equalBool(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// TestRowKeepsEveryField: a document written to sys_ai_plugin and read
// back is the same document, every field a writer may set. strict was
// dropped by the row (the LLM saw the loose schema of a plugin added with
// "strict": true, and an import's --strict was lost).
func TestRowKeepsEveryField(t *testing.T) {
	doc := []byte(`{"schema_version": "v1", "name": "every_field", "title": "Every field", "description": "d",
		"icon_url": "https://example.com/i.png",
		"parameters": {"type": "object", "properties": {"q": {"type": "string"}, "region": {"type": "string"}}},
		"execution": {"method": "POST", "base_url": "https://api.example.com/s", "timeout_ms": 5000},
		"auth_config": {"type": "bearer", "token": "TOK"},
		"required_credentials": ["TOK"], "fixed_params": {"region": "cn"}, "strict": true,
		"tags": ["crm"], "keywords": ["find"], "status": "1", "remark": "r",
		"consequential": false, "consequential_hint": true, "perms": ["system:user:list"]}`)
	p, err := plugins.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	wrote, read := fieldsOf(t, p), fieldsOf(t, throughRow(t, p))
	for k, v := range wrote {
		if a, b := mustJSON(t, v), mustJSON(t, read[k]); a != b {
			t.Errorf("%s: wrote %s, read back %s", k, a, b)
		}
	}
}

// throughRow is p written to a sys_ai_plugin row and read back.
func throughRow(t *testing.T, p *plugins.Plugin) *plugins.Plugin {
	t.Helper()
	row, err := catalog.RowFromPlugin(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := catalog.PluginFromRow(row)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// fieldsOf is the document p encodes, by field.
func fieldsOf(t *testing.T, p *plugins.Plugin) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(mustJSON(t, p)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
