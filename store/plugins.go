package store

import (
	"context"
	"fmt"
)

// pluginUpdatable lists the columns UpdatePlugin writes: everything but the
// primary key and the creation audit.
var pluginUpdatable = []string{
	"name", "title", "description", "icon_url", "parameter_schema", "execution_config",
	"status", "required_credentials", "source_id", "source_key", "content_hash",
	"update_by", "update_time", "remark",
}

// PluginFilter selects plugins in ListPlugins; zero fields do not filter.
type PluginFilter struct {
	Status   string
	SourceID *int64
}

// CreatePlugin inserts p and sets its ID and times. An empty Status means
// enabled. A taken name yields ErrDuplicate.
func (s *Store) CreatePlugin(ctx context.Context, p *Plugin) error {
	if p.Status == "" {
		p.Status = StatusEnabled
	}
	p.stampCreate()
	if err := s.db.WithContext(ctx).Create(p).Error; err != nil {
		return fmt.Errorf("create plugin %q: %w", p.Name, classify(err))
	}
	return nil
}

// UpdatePlugin overwrites every column of the plugin identified by p.ID, or
// by p.Name when p.ID is zero, except the creation audit. It sets
// p.UpdateTime.
func (s *Store) UpdatePlugin(ctx context.Context, p *Plugin) error {
	q := s.db.WithContext(ctx).Model(&Plugin{})
	if p.ID != 0 {
		q = q.Where("plugin_id = ?", p.ID)
	} else {
		q = q.Where("name = ?", p.Name)
	}
	p.UpdateTime = now()
	if err := affected(q.Select(pluginUpdatable).Updates(p)); err != nil {
		return fmt.Errorf("update plugin %q: %w", p.Name, err)
	}
	return nil
}

// GetPlugin returns the plugin called name, or ErrNotFound.
func (s *Store) GetPlugin(ctx context.Context, name string) (*Plugin, error) {
	var p Plugin
	if err := s.db.WithContext(ctx).Where("name = ?", name).Take(&p).Error; err != nil {
		return nil, fmt.Errorf("get plugin %q: %w", name, classify(err))
	}
	return &p, nil
}

// GetPluginsByName returns the plugins among names that exist, ordered by
// name. Missing names are simply absent from the result.
func (s *Store) GetPluginsByName(ctx context.Context, names []string) ([]Plugin, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var ps []Plugin
	if err := s.db.WithContext(ctx).Where("name IN ?", names).Order("name").Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("get plugins by name: %w", classify(err))
	}
	return ps, nil
}

// ListPlugins returns the plugins matching f, ordered by name.
func (s *Store) ListPlugins(ctx context.Context, f PluginFilter) ([]Plugin, error) {
	q := s.db.WithContext(ctx).Order("name")
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.SourceID != nil {
		q = q.Where("source_id = ?", *f.SourceID)
	}
	var ps []Plugin
	if err := q.Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("list plugins: %w", classify(err))
	}
	return ps, nil
}

// DeletePlugin removes the plugin called name, or returns ErrNotFound.
func (s *Store) DeletePlugin(ctx context.Context, name string) error {
	if err := affected(s.db.WithContext(ctx).Where("name = ?", name).Delete(&Plugin{})); err != nil {
		return fmt.Errorf("delete plugin %q: %w", name, err)
	}
	return nil
}

// SetPluginStatus enables (StatusEnabled) or disables (StatusDisabled) the
// plugin called name on behalf of by.
func (s *Store) SetPluginStatus(ctx context.Context, name, status, by string) error {
	if status != StatusEnabled && status != StatusDisabled {
		return fmt.Errorf("set plugin %q status: invalid status %q (want %q or %q)", name, status, StatusEnabled, StatusDisabled)
	}
	res := s.db.WithContext(ctx).Model(&Plugin{}).Where("name = ?", name).
		Updates(map[string]any{"status": status, "update_by": by, "update_time": now()})
	if err := affected(res); err != nil {
		return fmt.Errorf("set plugin %q status: %w", name, err)
	}
	return nil
}
