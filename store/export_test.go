package store

import "context"

// MigrateUpTo applies the migrations up to version: a test's database as
// an older engine left it.
func (s *Store) MigrateUpTo(ctx context.Context, version int64) error {
	p, err := s.migrationProvider()
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// Classify is classify, for tests of what it maps.
var Classify = classify

// StripTriggers is stripTriggers, for tests of poll mode's migrations.
var StripTriggers = stripTriggers

// ChangeTriggersMigrations are the migrations that create triggers.
var ChangeTriggersMigrations = changeTriggersMigrations

// AppendSQLiteTime is appendSQLiteTime, which the records' INSERT on
// SQLite writes its times with.
var AppendSQLiteTime = appendSQLiteTime
