package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"

	"github.com/blindexec/blindexec/migrations"
)

// ErrNotMigrated reports a database whose schema lacks migrations this
// binary carries: commands that only read refuse it rather than migrate
// behind the operator's back.
var ErrNotMigrated = errors.New("the database schema is not up to date")

// migrationProvider is goose over the embedded migrations of the store's
// dialect, and the Go migrations (00013: see invisible.go).
func (s *Store) migrationProvider() (*goose.Provider, error) {
	dialect, embedded, dir := goose.DialectSQLite3, migrations.SQLite, "sqlite"
	if s.dialect == DialectMySQL {
		dialect, embedded, dir = goose.DialectMySQL, migrations.MySQL, "mysql"
	}
	fsys, err := fs.Sub(embedded, dir)
	if err != nil {
		return nil, err
	}
	if s.polled() {
		if fsys, err = withoutTriggers(fsys); err != nil {
			return nil, err
		}
	}
	return goose.NewProvider(dialect, s.sqlDB, fsys, goose.WithDisableGlobalRegistry(true), goose.WithGoMigrations(migration00013()))
}

// CheckMigrated returns nil when every migration is applied, an error
// wrapping ErrNotMigrated (saying how many are pending) when some are not,
// and another error when the database cannot be asked. It writes nothing:
// not even goose's version table.
func (s *Store) CheckMigrated(ctx context.Context) error {
	p, err := s.migrationProvider()
	if err != nil {
		return fmt.Errorf("check %s database schema: %w", s.dialect, err)
	}
	total := len(p.ListSources())
	exists, err := s.tableExists(ctx, goose.DefaultTablename)
	if err != nil {
		return fmt.Errorf("check %s database schema: %w", s.dialect, err)
	}
	if !exists {
		return fmt.Errorf("%w: %d of %d migrations pending (an empty or new database)", ErrNotMigrated, total, total)
	}
	// The version table read directly: goose's own status call would take
	// the migration lock and create what is missing.
	rows, err := s.sqlDB.QueryContext(ctx, "SELECT version_id FROM "+goose.DefaultTablename+" WHERE is_applied = ?", true)
	if err != nil {
		return fmt.Errorf("check %s database schema: %w", s.dialect, err)
	}
	defer rows.Close()
	applied := map[int64]bool{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return fmt.Errorf("check %s database schema: %w", s.dialect, err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check %s database schema: %w", s.dialect, err)
	}
	pending := 0
	for _, src := range p.ListSources() {
		if !applied[src.Version] {
			pending++
		}
	}
	if pending > 0 {
		return fmt.Errorf("%w: %d of %d migrations pending", ErrNotMigrated, pending, total)
	}
	return nil
}

func (s *Store) tableExists(ctx context.Context, name string) (bool, error) {
	q := "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
	if s.dialect == DialectMySQL {
		q = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?"
	}
	var n int
	if err := s.sqlDB.QueryRowContext(ctx, q, name).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}
