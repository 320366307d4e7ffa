package store

import (
	"context"

	"gorm.io/gorm"

	"github.com/blindexec/blindexec/internal/redact"
)

// MigrateUpTo applies the migrations up to version: a test's database as
// an older engine left it.
func (s *Store) MigrateUpTo(ctx context.Context, version int64) error {
	p, err := s.migrationProvider(s.sqlDB)
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

// RedactDSN and MySQLDialector are what Open's errors are made of.
var (
	RedactDSN      = redact.Value
	MySQLDialector = mysqlDialector
)

// ParseCursor parses a page cursor a client sends; CursorString writes
// one as a page hands it out.
func ParseCursor(s string) (ms int64, id string, err error) {
	c, err := parseCursor(s)
	if c == nil {
		return 0, "", err
	}
	return c.ms, c.id, err
}

func CursorString(ms int64, id string) string { return cursor{ms: ms, id: id}.String() }

// ListExecutionsQuery is the query ListExecutions sends for f, and
// LastCallsQuery LastCalls' for names: what TestExecutionQueryPlans asks
// the database to plan.
func (s *Store) ListExecutionsQuery(f ExecutionFilter) (string, []any) {
	var es []Execution
	st := executionsQuery(s.db.Session(&gorm.Session{DryRun: true}), f).Find(&es).Statement
	return st.SQL.String(), st.Vars
}

var LastCallsQuery = lastCallsQuery
