package store

import (
	"context"
	"fmt"
	"math"

	"gorm.io/gorm"
)

// pluginUpdatable lists the columns UpdatePlugin writes: everything but the
// primary key and the creation audit.
var pluginUpdatable = []string{
	"name", "title", "description", "icon_url", "parameter_schema", "execution_config",
	"status", "required_credentials", "source_id", "source_key", "content_hash", "consequential", "perms",
	"update_by", "update_time", "remark",
}

// PluginFilter selects plugins in ListPlugins and CountPlugins; zero
// fields do not filter.
type PluginFilter struct {
	Status   string
	SourceID *int64
	// NoSource selects the plugins no import wrote (created through the
	// API or the CLI).
	NoSource bool
	// Type is an execution type: "http" (which a plugin without
	// execution.type has) or another, such as "mcp".
	Type string
	// Names, when not nil, selects among these names only.
	Names []string
	// Limit and Offset page ListPlugins (by name); a Limit of zero lists
	// every plugin from Offset on.
	Limit, Offset int
}

// where applies f's conditions, not its page, to q.
func (s *Store) where(q *gorm.DB, f PluginFilter) *gorm.DB {
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.SourceID != nil {
		q = q.Where("source_id = ?", *f.SourceID)
	}
	if f.NoSource {
		q = q.Where("source_id IS NULL")
	}
	if f.Names != nil {
		q = q.Where("name IN ?", f.Names)
	}
	switch f.Type {
	case "":
	case "http":
		q = q.Where(s.execType() + " IN ('', 'http')")
	default:
		q = q.Where(s.execType()+" = ?", f.Type)
	}
	return q
}

// execType is the SQL of a plugin's execution.type, "" when unset.
func (s *Store) execType() string {
	if s.dialect == DialectMySQL {
		return "COALESCE(JSON_UNQUOTE(JSON_EXTRACT(execution_config, '$.execution.type')), '')"
	}
	return "COALESCE(json_extract(execution_config, '$.execution.type'), '')"
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

// ListPlugins returns the plugins matching f, ordered by name, the page
// f.Limit and f.Offset select.
func (s *Store) ListPlugins(ctx context.Context, f PluginFilter) ([]Plugin, error) {
	if f.Names != nil && len(f.Names) == 0 {
		return nil, nil
	}
	q := s.where(s.db.WithContext(ctx).Order("name, plugin_id"), f)
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	if f.Offset > 0 {
		if f.Limit <= 0 {
			q = q.Limit(math.MaxInt32) // MySQL has no OFFSET without LIMIT
		}
		q = q.Offset(f.Offset)
	}
	var ps []Plugin
	if err := q.Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("list plugins: %w", classify(err))
	}
	return ps, nil
}

// CountPlugins counts the plugins matching f, its page aside.
func (s *Store) CountPlugins(ctx context.Context, f PluginFilter) (int, error) {
	if f.Names != nil && len(f.Names) == 0 {
		return 0, nil
	}
	var n int64
	if err := s.where(s.db.WithContext(ctx).Model(&Plugin{}), f).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count plugins: %w", classify(err))
	}
	return int(n), nil
}

// PluginNames returns the names of the plugins matching f, its page
// aside, in no order.
func (s *Store) PluginNames(ctx context.Context, f PluginFilter) ([]string, error) {
	if f.Names != nil && len(f.Names) == 0 {
		return nil, nil
	}
	var names []string
	if err := s.where(s.db.WithContext(ctx).Model(&Plugin{}), f).Pluck("name", &names).Error; err != nil {
		return nil, fmt.Errorf("list plugin names: %w", classify(err))
	}
	return names, nil
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

// SetPluginsConsequential writes the administrator's classification of
// the plugins called names (issue 33): "1" consequential, "0" not, nil
// derived. Syncs keep it. It returns how many rows it matched; unknown
// names are left out.
func (s *Store) SetPluginsConsequential(ctx context.Context, names []string, value *string, by string) (int64, error) {
	if value != nil && *value != "1" && *value != "0" {
		return 0, fmt.Errorf("set consequential: invalid value %q (want \"1\", \"0\" or NULL)", *value)
	}
	return s.setPlugins(ctx, names, "consequential", value, by)
}

// SetPluginsPerms writes the permissions a user needs to use the plugins
// called names (issue 46): perms comma-separated, nil for none. The
// caller checked their form (plugins.CheckPerms). Syncs keep them. It
// returns how many rows it matched; unknown names are left out.
func (s *Store) SetPluginsPerms(ctx context.Context, names []string, perms *string, by string) (int64, error) {
	return s.setPlugins(ctx, names, "perms", perms, by)
}

// setPlugins writes one administrator's column of the plugins called
// names.
func (s *Store) setPlugins(ctx context.Context, names []string, column string, value *string, by string) (int64, error) {
	if len(names) == 0 {
		return 0, nil
	}
	res := s.db.WithContext(ctx).Model(&Plugin{}).Where("name IN ?", names).
		Updates(map[string]any{column: value, "update_by": by, "update_time": now()})
	if res.Error != nil {
		return 0, fmt.Errorf("set %s of %d plugins: %w", column, len(names), classify(res.Error))
	}
	return res.RowsAffected, nil
}
