package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/pressly/goose/v3"

	"github.com/blindexec/blindexec/internal/invisible"
)

// Migration 00013 removes invisible characters (package
// internal/invisible) from the plugin rows written before the engine
// removed them where plugins enter (issue 44): names, titles,
// descriptions and the texts of parameter schemas. It is a Go migration,
// not SQL: the rule reads each character's neighbours (a ZWNJ stays
// between Persian letters, a VS16 after an emoji), which neither SQLite
// (no regular expressions) nor MySQL's REGEXP_REPLACE can say, and the
// schemas' texts are found by walking JSON. Rows written later with
// plain SQL are cleaned when loaded (catalog.PluginFromRow), as every
// row is.
//
// What it removed is recorded in the row's execution_config under
// "invisible_removed", where catalog.RowFromPlugin keeps a write's
// removals: the console shows it with the row until the row is written
// again. A name is changed only when the cleaned name is free; otherwise
// it stays, and the catalog's load leaves the row out, saying why.
// There is no way down: the removed characters are not kept.
// Each provider gets its own: goose links the migrations it is given.
func migration00013() *goose.Migration {
	return goose.NewGoMigration(13, &goose.GoFunc{RunTx: removeInvisibleFromPlugins}, nil)
}

// invisibleRemovedKey is execution_config's key of the removals; the
// catalog decodes the column (catalog.executionConfig).
const invisibleRemovedKey = "invisible_removed"

type cleanedRow struct {
	id                       int64
	stored                   string // the name before
	name, title, description sql.NullString
	params, cfg              sql.NullString
	removed                  []invisible.Removal
}

func removeInvisibleFromPlugins(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT plugin_id, name, title, description, parameter_schema, execution_config FROM sys_ai_plugin ORDER BY plugin_id")
	if err != nil {
		return fmt.Errorf("migration 00013: %w", err)
	}
	names := map[string]bool{}
	var changed []cleanedRow
	for rows.Next() {
		var r cleanedRow
		if err := rows.Scan(&r.id, &r.name, &r.title, &r.description, &r.params, &r.cfg); err != nil {
			rows.Close()
			return fmt.Errorf("migration 00013: %w", err)
		}
		names[r.name.String], r.stored = true, r.name.String
		var removed []invisible.Removal
		for _, f := range []struct {
			field string
			col   *sql.NullString
		}{{"name", &r.name}, {"title", &r.title}, {"description", &r.description}} {
			if out, found := invisible.Remove(f.col.String); found.Count > 0 {
				f.col.String = out
				removed = append(removed, invisible.Removal{Field: f.field, Count: found.Count, Kinds: found.Kinds})
			}
		}
		params, rs := invisible.Schema([]byte(r.params.String), "parameters")
		r.params.String = string(params)
		if r.removed = append(removed, rs...); len(r.removed) > 0 {
			changed = append(changed, r)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("migration 00013: %w", err)
	}
	for _, r := range changed {
		if names[r.name.String] && r.name.String != r.stored {
			r.name.String = r.stored // the cleaned name is another row's
			r.removed = slices.DeleteFunc(r.removed, func(rm invisible.Removal) bool { return rm.Field == "name" })
			if len(r.removed) == 0 {
				continue
			}
		}
		names[r.name.String] = true
		r.cfg.String, r.cfg.Valid = recordRemovals(r.cfg.String, r.removed), true
		if _, err := tx.ExecContext(ctx, "UPDATE sys_ai_plugin SET name = ?, title = ?, description = ?, parameter_schema = ?, execution_config = ?, update_by = 'migration 00013', update_time = ? WHERE plugin_id = ?",
			r.name, r.title, r.description, r.params, r.cfg, now(), r.id); err != nil {
			return fmt.Errorf("migration 00013: plugin %d: %w", r.id, err)
		}
	}
	return nil
}

// recordRemovals adds removed to the removals an execution_config holds.
// A column that is not a JSON object is left as it is: the row does not
// load anyway, and the catalog's load says why.
func recordRemovals(cfg string, removed []invisible.Removal) string {
	m := map[string]json.RawMessage{}
	if cfg != "" {
		if err := json.Unmarshal([]byte(cfg), &m); err != nil || m == nil {
			return cfg
		}
	}
	var held []invisible.Removal
	if raw, ok := m[invisibleRemovedKey]; ok && json.Unmarshal(raw, &held) != nil {
		held = nil
	}
	b, err := json.Marshal(append(held, removed...))
	if err != nil {
		return cfg
	}
	m[invisibleRemovedKey] = b
	out, err := json.Marshal(m)
	if err != nil {
		return cfg
	}
	return string(out)
}
