package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// MCP server transports.
const (
	TransportStreamableHTTP = "streamable_http"
	TransportSSE            = "sse"
	TransportStdio          = "stdio"
)

// MCPServer is a row of sys_ai_mcp_server: an MCP server whose tools
// plugins of execution.type "mcp" call. Headers and AuthConfig are applied
// to every HTTP request of the session; credentials for AuthConfig come
// from the calling user, as for any plugin.
type MCPServer struct {
	ID         string `gorm:"column:mcp_id;primaryKey" json:"mcp_id"`
	Name       string `gorm:"column:name" json:"name"`
	Transport  string `gorm:"column:transport" json:"transport"`
	URL        string `gorm:"column:url" json:"url,omitempty"`
	Command    JSON   `gorm:"column:command" json:"command,omitempty"`
	Headers    JSON   `gorm:"column:headers" json:"headers,omitempty"`
	AuthConfig JSON   `gorm:"column:auth_config" json:"auth_config,omitempty"`
	Status     string `gorm:"column:status" json:"status"`
	// Trusted: an administrator vouches for the server, so its tools'
	// annotations may lower their class (readOnlyHint: not
	// consequential), not only raise it (issue 48 point 2).
	Trusted bool `gorm:"column:trusted" json:"trusted"`
	// CredentialsURL is the URL whose origin the server's stored
	// credentials were given for (migration 00030): written with URL by
	// CreateMCPServer, so that a URL moved outside the engine (plain SQL)
	// no longer carries them (engine.Server.Moved). Nil: none are sent.
	CredentialsURL *string `gorm:"column:credentials_url" json:"-"`
	// CredentialsTokenURL is, for an auth config of oauth2 with a
	// token_url, the token URL whose origin the stored client id and
	// secret were given for (migration 00032), written with AuthConfig by
	// CreateMCPServer: a token_url moved outside the engine no longer
	// carries them. Nil with a token_url: none are sent.
	CredentialsTokenURL *string    `gorm:"column:credentials_token_url" json:"-"`
	ToolsCache          JSON       `gorm:"column:tools_cache" json:"-"`
	ToolsCachedTime     *time.Time `gorm:"column:tools_cached_time" json:"tools_cached_time,omitempty"`
	Audit
}

// tokenURL is the auth config's oauth2 token_url, nil without one.
func (r *MCPServer) tokenURL() *string {
	var a struct {
		OAuth2 *struct {
			TokenURL string `json:"token_url"`
		} `json:"oauth2"`
	}
	if decodeColumn(r.AuthConfig, &a) != nil || a.OAuth2 == nil || a.OAuth2.TokenURL == "" {
		return nil
	}
	return &a.OAuth2.TokenURL
}

// TableName maps MCPServer onto its table.
func (MCPServer) TableName() string { return "sys_ai_mcp_server" }

// Argv decodes Command, the argv of a stdio server.
func (r *MCPServer) Argv() ([]string, error) {
	var argv []string
	if err := decodeColumn(r.Command, &argv); err != nil {
		return nil, fmt.Errorf("MCP server %q: command: %w", r.Name, err)
	}
	return argv, nil
}

// HeaderMap decodes Headers.
func (r *MCPServer) HeaderMap() (map[string]string, error) {
	var h map[string]string
	if err := decodeColumn(r.Headers, &h); err != nil {
		return nil, fmt.Errorf("MCP server %q: headers: %w", r.Name, err)
	}
	return h, nil
}

func decodeColumn(j JSON, v any) error {
	if len(j) == 0 {
		return nil
	}
	return json.Unmarshal(j, v)
}

// CreateMCPServer inserts srv, with a new UUID when srv.ID is empty, and
// sets its times. A taken id or name yields ErrDuplicate.
func (s *Store) CreateMCPServer(ctx context.Context, srv *MCPServer) error {
	if srv.ID == "" {
		srv.ID = uuid.NewString()
	}
	if srv.Status == "" {
		srv.Status = StatusEnabled
	}
	if srv.CredentialsURL == nil && srv.URL != "" {
		// Registering a server is giving it its credentials at its URL.
		u := srv.URL
		srv.CredentialsURL = &u
	}
	if srv.CredentialsTokenURL == nil {
		srv.CredentialsTokenURL = srv.tokenURL()
	}
	srv.stampCreate()
	srv.ToolsCachedTime = dbTimePtr(srv.ToolsCachedTime)
	if err := s.db.WithContext(ctx).Create(srv).Error; err != nil {
		return fmt.Errorf("create MCP server %q: %w", srv.Name, classify(err))
	}
	return nil
}

// GetMCPServer returns the server whose id, or else name, is ref, or
// ErrNotFound.
func (s *Store) GetMCPServer(ctx context.Context, ref string) (*MCPServer, error) {
	var rows []MCPServer
	err := s.db.WithContext(ctx).Where("mcp_id = ? OR name = ?", ref, ref).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("get MCP server %q: %w", ref, classify(err))
	}
	// An id wins over another server's name.
	for i := range rows {
		if rows[i].ID == ref {
			return &rows[i], nil
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("get MCP server %q: %w", ref, ErrNotFound)
	}
	return &rows[0], nil
}

// ListMCPServers returns every server, ordered by name.
func (s *Store) ListMCPServers(ctx context.Context) ([]MCPServer, error) {
	var rows []MCPServer
	if err := s.db.WithContext(ctx).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list MCP servers: %w", classify(err))
	}
	return rows, nil
}

// DeleteMCPServer removes the server with id, or returns ErrNotFound, and
// disables (on behalf of by) the enabled plugins that call it, by its id
// or its name, returning their names: they stay in the catalog, to be
// enabled again once a server is registered under that id, but the LLM no
// longer sees tools that can only fail.
func (s *Store) DeleteMCPServer(ctx context.Context, id, by string) (disabled []string, err error) {
	err = s.transaction(ctx, func(tx *gorm.DB) error {
		var srv MCPServer
		if err := tx.Where("mcp_id = ?", id).Take(&srv).Error; err != nil {
			return classify(err)
		}
		if err := affected(tx.Where("mcp_id = ?", id).Delete(&MCPServer{})); err != nil {
			return err
		}
		// The JSON is matched in Go: the dialects' JSON functions differ.
		var rows []Plugin
		if err := tx.Select("plugin_id", "name", "execution_config").
			Where("status = ? AND execution_config LIKE ?", StatusEnabled, "%mcp%").Find(&rows).Error; err != nil {
			return err
		}
		var ids []int64
		for _, p := range rows {
			var cfg struct {
				Execution struct {
					Type  string `json:"type"`
					MCPID string `json:"mcp_id"`
				} `json:"execution"`
			}
			if json.Unmarshal(p.ExecutionConfig, &cfg) != nil || cfg.Execution.Type != "mcp" {
				continue
			}
			if ref := cfg.Execution.MCPID; ref == srv.ID || ref == srv.Name {
				ids = append(ids, p.ID)
				disabled = append(disabled, p.Name)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		return tx.Model(&Plugin{}).Where("plugin_id IN ?", ids).
			Updates(map[string]any{"status": StatusDisabled, "update_by": by, "update_time": now()}).Error
	})
	if err != nil {
		return nil, fmt.Errorf("delete MCP server %q: %w", id, err)
	}
	return disabled, nil
}

// UpdateMCPToolsCache stores the server's last tools/list answer, taken at
// at.
func (s *Store) UpdateMCPToolsCache(ctx context.Context, id string, tools JSON, at time.Time) error {
	res := s.db.WithContext(ctx).Model(&MCPServer{}).Where("mcp_id = ?", id).
		Updates(map[string]any{"tools_cache": tools, "tools_cached_time": dbTime(at)})
	if err := affected(res); err != nil {
		return fmt.Errorf("update tools cache of MCP server %q: %w", id, err)
	}
	return nil
}
