package store

import (
	"context"
	"fmt"
)

// Agent is a row of sys_ai_agent: a named selection of tools (issue 46).
// Tools is the selection's JSON ({"names", "tags", "sources"}), Perms the
// RuoYi permission strings one of which a user needs to use the agent,
// comma-separated (nil: none).
type Agent struct {
	ID          int64   `gorm:"column:agent_id;primaryKey;autoIncrement" json:"agent_id"`
	Name        string  `gorm:"column:name" json:"name"`
	Description string  `gorm:"column:description" json:"description,omitempty"`
	Tools       JSON    `gorm:"column:tools" json:"tools,omitempty"`
	Perms       *string `gorm:"column:perms" json:"perms,omitempty"`
	Status      string  `gorm:"column:status" json:"status"`
	Audit
}

// TableName maps Agent onto its table.
func (Agent) TableName() string { return "sys_ai_agent" }

// agentUpdatable lists the columns UpdateAgent writes.
var agentUpdatable = []string{"description", "tools", "perms", "status", "update_by", "update_time", "remark"}

// CreateAgent inserts a and sets its ID and times. An empty Status means
// enabled. A taken name yields ErrDuplicate.
func (s *Store) CreateAgent(ctx context.Context, a *Agent) error {
	if a.Status == "" {
		a.Status = StatusEnabled
	}
	a.stampCreate()
	if err := s.db.WithContext(ctx).Create(a).Error; err != nil {
		return fmt.Errorf("create agent %q: %w", a.Name, classify(err))
	}
	return nil
}

// GetAgent returns the agent called name, or ErrNotFound.
func (s *Store) GetAgent(ctx context.Context, name string) (*Agent, error) {
	var a Agent
	if err := s.db.WithContext(ctx).Where("name = ?", name).Take(&a).Error; err != nil {
		return nil, fmt.Errorf("get agent %q: %w", name, classify(err))
	}
	return &a, nil
}

// ListAgents returns every agent, by name.
func (s *Store) ListAgents(ctx context.Context) ([]Agent, error) {
	var as []Agent
	if err := s.db.WithContext(ctx).Order("name").Find(&as).Error; err != nil {
		return nil, fmt.Errorf("list agents: %w", classify(err))
	}
	return as, nil
}

// UpdateAgent writes a over the agent of its name (everything but the
// name and the creation audit), or returns ErrNotFound. An empty Status
// means enabled.
func (s *Store) UpdateAgent(ctx context.Context, a *Agent) error {
	if a.Status == "" {
		a.Status = StatusEnabled
	}
	a.UpdateTime = now()
	res := s.db.WithContext(ctx).Model(&Agent{}).Where("name = ?", a.Name).Select(agentUpdatable).Updates(a)
	if err := affected(res); err != nil {
		return fmt.Errorf("update agent %q: %w", a.Name, err)
	}
	return nil
}

// DeleteAgent removes the agent called name, or returns ErrNotFound.
func (s *Store) DeleteAgent(ctx context.Context, name string) error {
	if err := affected(s.db.WithContext(ctx).Where("name = ?", name).Delete(&Agent{})); err != nil {
		return fmt.Errorf("delete agent %q: %w", name, err)
	}
	return nil
}
