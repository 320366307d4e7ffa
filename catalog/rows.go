package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/internal/invisible"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// executionConfig is the execution_config column: everything about a
// plugin that only the engine sees.
type executionConfig struct {
	Execution   plugins.Execution  `json:"execution"`
	AuthConfig  plugins.AuthConfig `json:"auth_config"`
	FixedParams map[string]any     `json:"fixed_params,omitempty"`
	// Strict is the document's strict (OpenAI's strict-mode schema shown
	// to the LLM): a setting of the engine's, like fixed_params.
	Strict bool `json:"strict,omitempty"`
	// Tags and Keywords feed tool search; kept here, not in columns of
	// their own, so they need no migration.
	Tags     []string `json:"tags,omitempty"`
	Keywords []string `json:"keywords,omitempty"`
	// ResponseWords feed tool search too (plugins.Plugin.ResponseWords).
	ResponseWords []string `json:"response_words,omitempty"`
	// ConsequentialHint is the import's suggestion; the administrator's
	// choice is the consequential column, which syncs keep.
	ConsequentialHint *bool `json:"consequential_hint,omitempty"`
	// InvisibleRemoved is what was removed from the plugin's texts where
	// it entered (or by migration 00013), shown with the row until it is
	// written again without.
	InvisibleRemoved []invisible.Removal `json:"invisible_removed,omitempty"`
}

// RowFromPlugin maps a protocol document onto a sys_ai_plugin row.
// required_credentials holds the effective list (declared or derived), so
// RuoYi can check a user's credentials from the row alone.
func RowFromPlugin(p *plugins.Plugin) (*store.Plugin, error) {
	cfg, err := json.Marshal(executionConfig{Execution: p.Execution, AuthConfig: p.AuthConfig, FixedParams: p.FixedParams, Strict: p.Strict,
		Tags: p.Tags, Keywords: p.Keywords, ResponseWords: p.ResponseWords, ConsequentialHint: p.ConsequentialHint, InvisibleRemoved: p.InvisibleRemoved})
	if err != nil {
		return nil, fmt.Errorf("encode execution_config of %q: %w", p.Name, err)
	}
	creds := p.Credentials()
	if creds == nil {
		creds = []string{}
	}
	rc, err := json.Marshal(creds)
	if err != nil {
		return nil, fmt.Errorf("encode required_credentials of %q: %w", p.Name, err)
	}
	status := p.Status
	if status == "" {
		status = store.StatusEnabled
	}
	return &store.Plugin{
		Name:                p.Name,
		Title:               p.Title,
		Description:         p.Description,
		IconURL:             p.IconURL,
		ParameterSchema:     store.JSON(p.Parameters),
		ExecutionConfig:     cfg,
		Status:              status,
		RequiredCredentials: rc,
		Consequential:       ConsequentialColumn(p.Consequential),
		Perms:               plugins.JoinPerms(p.Perms),
		Audit:               store.Audit{Remark: p.Remark},
	}, nil
}

// PluginFromRow maps a row back onto the protocol document. A row's texts
// lose their invisible characters here too (plugins.RemoveInvisible):
// rows written with plain SQL (RuoYi's) pass no other check, so what is
// removed is reported with the row, beside what was removed when it
// entered; the row itself is not rewritten (a read on every replica).
func PluginFromRow(r *store.Plugin) (*plugins.Plugin, error) {
	// A column written with plain SQL may hold anything: each that does
	// not decode is named with its row, never carried on as the plugin's.
	if len(r.ParameterSchema) > 0 && !json.Valid(r.ParameterSchema) {
		return nil, fmt.Errorf("decode parameter_schema of plugin %q: not a JSON document", r.Name)
	}
	var cfg executionConfig
	if len(r.ExecutionConfig) > 0 {
		if err := json.Unmarshal(r.ExecutionConfig, &cfg); err != nil {
			return nil, fmt.Errorf("decode execution_config of plugin %q: %w", r.Name, err)
		}
	}
	p := &plugins.Plugin{
		SchemaVersion:     "v1",
		ID:                r.ID,
		Name:              r.Name,
		Title:             r.Title,
		Description:       r.Description,
		IconURL:           r.IconURL,
		Parameters:        json.RawMessage(r.ParameterSchema),
		Execution:         cfg.Execution,
		AuthConfig:        cfg.AuthConfig,
		FixedParams:       cfg.FixedParams,
		Strict:            cfg.Strict,
		Tags:              cfg.Tags,
		Keywords:          cfg.Keywords,
		ResponseWords:     cfg.ResponseWords,
		Status:            r.Status,
		ConsequentialHint: cfg.ConsequentialHint,
		Remark:            r.Remark,
		Catalog:           true,
		InvisibleRemoved:  cfg.InvisibleRemoved,
	}
	p.RemoveInvisible()
	c, err := ConsequentialSetting(r.Consequential)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", r.Name, err)
	}
	p.Consequential = c
	if r.SourceID != nil {
		p.SourceID = *r.SourceID
	}
	if p.Perms, err = plugins.SplitPerms(r.Perms); err != nil {
		return nil, fmt.Errorf("plugin %q: %w", r.Name, err)
	}
	if len(r.RequiredCredentials) > 0 {
		if err := json.Unmarshal(r.RequiredCredentials, &p.RequiredCredentials); err != nil {
			return nil, fmt.Errorf("decode required_credentials of plugin %q: %w", r.Name, err)
		}
	}
	return p, nil
}

// KeepAdministrators copies onto row, which an import or a sync writes
// over old, the columns only an administrator sets: the consequential
// setting (issue 33) and the perms (issue 46). A sync never changes them.
func KeepAdministrators(row, old *store.Plugin) {
	row.Consequential = old.Consequential
	row.Perms = old.Perms
}

// ConsequentialColumn is the consequential column's value for a
// plugin's setting: "1", "0", or nil when the setting is absent.
func ConsequentialColumn(c *bool) *string {
	if c == nil {
		return nil
	}
	v := "0"
	if *c {
		v = "1"
	}
	return &v
}

// ConsequentialSetting reads the consequential column: "1" true, "0"
// false, NULL (or empty, as RuoYi may write it) absent.
func ConsequentialSetting(col *string) (*bool, error) {
	if col == nil || *col == "" {
		return nil, nil
	}
	if *col != "1" && *col != "0" {
		return nil, fmt.Errorf("consequential: expected '1', '0' or NULL, got %q", *col)
	}
	v := *col == "1"
	return &v, nil
}

// MCPServerAuth decodes the server's auth_config column; an empty column
// is auth type none.
func MCPServerAuth(r *store.MCPServer) (plugins.AuthConfig, error) {
	var a plugins.AuthConfig
	if len(r.AuthConfig) == 0 {
		return a, nil
	}
	if err := json.Unmarshal(r.AuthConfig, &a); err != nil {
		return a, fmt.Errorf("MCP server %q: auth_config: %w", r.Name, err)
	}
	return a, nil
}

// MCPServers looks MCP servers up; *store.Store implements it.
type MCPServers interface {
	GetMCPServer(ctx context.Context, ref string) (*store.MCPServer, error)
}

// CheckPlugin checks what a plugin document cannot show alone, before it
// is written by the API or the CLI: the MCP server an mcp plugin calls is
// registered, and each of its required_credentials is read by that
// server's auth config. Problems are a *plugins.ValidationError naming
// the field.
func CheckPlugin(ctx context.Context, servers MCPServers, p *plugins.Plugin) error {
	if p.ExecType() != plugins.TypeMCP {
		return nil
	}
	srv, err := servers.GetMCPServer(ctx, p.Execution.MCPID)
	if errors.Is(err, store.ErrNotFound) {
		return &plugins.ValidationError{Fields: []plugins.FieldError{{Field: "execution.mcp_id",
			Message: fmt.Sprintf("no MCP server %q is registered (register it first: `blindexec mcp server add` or POST /v1/mcp/servers)", p.Execution.MCPID)}}}
	}
	if err != nil {
		return err
	}
	auth, err := MCPServerAuth(srv)
	if err != nil {
		return err
	}
	read := auth.CredentialKeys()
	var fields []plugins.FieldError
	for i, k := range p.RequiredCredentials {
		if !slices.Contains(read, k) {
			msg := fmt.Sprintf("%q is read by nothing: the auth config of MCP server %q reads ", k, srv.Name)
			if len(read) == 0 {
				msg += "no credential"
			} else {
				msg += "only " + strings.Join(read, ", ")
			}
			fields = append(fields, plugins.FieldError{Field: fmt.Sprintf("required_credentials[%d]", i), Message: msg})
		}
	}
	if len(fields) > 0 {
		return &plugins.ValidationError{Fields: fields}
	}
	return nil
}
