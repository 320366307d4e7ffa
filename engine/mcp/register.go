package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// ServerSpec is a server to register: the body of POST /v1/mcp/servers
// and the flags of `blindexec mcp server add`.
type ServerSpec struct {
	ID         string              `json:"mcp_id,omitempty"` // a UUID when empty
	Name       string              `json:"name"`
	Transport  string              `json:"transport,omitempty"` // streamable_http (default), sse or stdio
	URL        string              `json:"url,omitempty"`
	Command    []string            `json:"command,omitempty"` // argv, for stdio
	Headers    map[string]string   `json:"headers,omitempty"`
	AuthConfig *plugins.AuthConfig `json:"auth_config,omitempty"`
	Status     string              `json:"status,omitempty"`
	// Trusted lets the server's annotations lower its imported tools'
	// class (mcpimport.ConsequentialHint); an administrator's own
	// classification of a tool still wins.
	Trusted bool   `json:"trusted,omitempty"`
	Remark  string `json:"remark,omitempty"`
}

var (
	serverNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	serverIDPattern   = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,64}$`)
	authTypes         = map[string]bool{"": true, plugins.AuthNone: true, plugins.AuthAPIKey: true, plugins.AuthBearer: true, plugins.AuthBasic: true, plugins.AuthOAuth2: true}
)

// ValidServerID reports whether id can be a server id (URL-safe, at most
// 64 characters).
func ValidServerID(id string) bool { return serverIDPattern.MatchString(id) }

// Row validates spec and returns the row to insert. The name is the prefix
// of imported tools that would collide, so it follows the plugin-name rule.
func (spec ServerSpec) Row(by string) (*store.MCPServer, error) {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if spec.Transport == "" {
		spec.Transport = store.TransportStreamableHTTP
	}
	if spec.ID != "" && !ValidServerID(spec.ID) {
		add("mcp_id: %q must match ^[a-zA-Z0-9._-]{1,64}$", spec.ID)
	}
	if !serverNamePattern.MatchString(spec.Name) {
		add("name: %q must match ^[a-zA-Z0-9_-]{1,64}$", spec.Name)
	}
	switch spec.Transport {
	case store.TransportStreamableHTTP, store.TransportSSE:
		u, err := url.Parse(spec.URL)
		if len(spec.URL) > plugins.MaxURLBytes {
			add("url: %d bytes, over the limit of %d", len(spec.URL), plugins.MaxURLBytes)
		} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("url: %q must be an absolute http or https URL", redact.URL(spec.URL))
		} else if u.User != nil {
			add("url: must not carry credentials; use auth_config")
		}
	case store.TransportStdio:
		if len(spec.Command) == 0 || spec.Command[0] == "" {
			add("command: required for transport stdio (the argv of the server)")
		}
	default:
		add("transport: %q is not a transport (expected streamable_http, sse or stdio)", spec.Transport)
	}
	for k, v := range spec.Headers {
		if k == "" || strings.ContainsAny(k+v, "\r\n\x00") || strings.ContainsAny(k, " :") {
			add("headers: %q is not a valid header", k)
		}
	}
	if a := spec.AuthConfig; a != nil && !authTypes[a.Type] {
		add("auth_config.type: %q is not an auth type", a.Type)
	} else if a != nil && a.ConnectionProvider() != "" {
		// A server's sessions are shared by every user; a user's
		// connection token has no place in them.
		add("auth_config.oauth2.grant: %q (a user's connection) is for http plugins only; an MCP server takes client_credentials or a stored token", plugins.GrantAuthorizationCode)
	}
	if spec.Status != "" && spec.Status != store.StatusEnabled && spec.Status != store.StatusDisabled {
		add("status: %q must be %q (enabled) or %q (disabled)", spec.Status, store.StatusEnabled, store.StatusDisabled)
	}
	if len(errs) > 0 {
		return nil, &SpecError{Problems: errs}
	}
	row := &store.MCPServer{ID: spec.ID, Name: spec.Name, Transport: spec.Transport, URL: spec.URL, Status: spec.Status, Trusted: spec.Trusted,
		Audit: store.Audit{CreateBy: by, UpdateBy: by, Remark: spec.Remark}}
	var err error
	if row.Command, err = jsonColumn(spec.Command, len(spec.Command) > 0); err != nil {
		return nil, err
	}
	if row.Headers, err = jsonColumn(spec.Headers, len(spec.Headers) > 0); err != nil {
		return nil, err
	}
	if row.AuthConfig, err = jsonColumn(spec.AuthConfig, spec.AuthConfig != nil); err != nil {
		return nil, err
	}
	return row, nil
}

func jsonColumn(v any, present bool) (store.JSON, error) {
	if !present {
		return nil, nil
	}
	return json.Marshal(v)
}

// SpecError lists what is wrong with a ServerSpec.
type SpecError struct{ Problems []string }

func (e *SpecError) Error() string { return "invalid MCP server: " + strings.Join(e.Problems, "; ") }

// Register validates spec and stores it (`blindexec mcp server add`).
func Register(ctx context.Context, st *store.Store, spec ServerSpec, by string) (*store.MCPServer, error) {
	row, err := spec.Row(by)
	if err != nil {
		return nil, err
	}
	if err := st.CreateMCPServer(ctx, row); err != nil {
		return nil, err
	}
	return row, nil
}
