package store

import (
	"encoding/json"
	"fmt"

	"github.com/blindexec/blindexec/plugins"
)

// executionConfig is the execution_config column: everything about a
// plugin that only the engine sees.
type executionConfig struct {
	Execution   plugins.Execution  `json:"execution"`
	AuthConfig  plugins.AuthConfig `json:"auth_config"`
	FixedParams map[string]any     `json:"fixed_params,omitempty"`
	// Tags and Keywords feed tool search; kept here, not in columns of
	// their own, so they need no migration.
	Tags     []string `json:"tags,omitempty"`
	Keywords []string `json:"keywords,omitempty"`
}

// RowFromPlugin maps a protocol document onto a sys_ai_plugin row.
// required_credentials holds the effective list (declared or derived), so
// RuoYi can check a user's credentials from the row alone.
func RowFromPlugin(p *plugins.Plugin) (*Plugin, error) {
	cfg, err := json.Marshal(executionConfig{Execution: p.Execution, AuthConfig: p.AuthConfig, FixedParams: p.FixedParams,
		Tags: p.Tags, Keywords: p.Keywords})
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
		status = StatusEnabled
	}
	return &Plugin{
		Name:                p.Name,
		Title:               p.Title,
		Description:         p.Description,
		IconURL:             p.IconURL,
		ParameterSchema:     JSON(p.Parameters),
		ExecutionConfig:     cfg,
		Status:              status,
		RequiredCredentials: rc,
		Audit:               Audit{Remark: p.Remark},
	}, nil
}

// ToPlugin maps a row back onto the protocol document.
func (r *Plugin) ToPlugin() (*plugins.Plugin, error) {
	var cfg executionConfig
	if len(r.ExecutionConfig) > 0 {
		if err := json.Unmarshal(r.ExecutionConfig, &cfg); err != nil {
			return nil, fmt.Errorf("decode execution_config of plugin %q: %w", r.Name, err)
		}
	}
	p := &plugins.Plugin{
		SchemaVersion: "v1",
		Name:          r.Name,
		Title:         r.Title,
		Description:   r.Description,
		IconURL:       r.IconURL,
		Parameters:    json.RawMessage(r.ParameterSchema),
		Execution:     cfg.Execution,
		AuthConfig:    cfg.AuthConfig,
		FixedParams:   cfg.FixedParams,
		Tags:          cfg.Tags,
		Keywords:      cfg.Keywords,
		Status:        r.Status,
		Remark:        r.Remark,
	}
	if len(r.RequiredCredentials) > 0 {
		if err := json.Unmarshal(r.RequiredCredentials, &p.RequiredCredentials); err != nil {
			return nil, fmt.Errorf("decode required_credentials of plugin %q: %w", r.Name, err)
		}
	}
	return p, nil
}
