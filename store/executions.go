package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Limits of ListExecutions.
const (
	DefaultExecutionLimit = 100
	MaxExecutionLimit     = 1000
)

// Column widths the execution log truncates to, so that a long message is
// cut the same way on every database instead of failing on MySQL.
const (
	maxErrorClass   = 64
	maxErrorMessage = 1000
)

// insertBatch bounds the rows of one INSERT on MySQL, well within its
// packet limit.
const insertBatch = 500

// insertExecutionsSQLite writes one prepared single-row INSERT per record
// in a transaction. A multi-row INSERT costs the pure-Go SQLite driver
// quadratic CPU (it matches each bound parameter by a linear scan of the
// arguments): measured, this is the cheapest way there.
func (s *Store) insertExecutionsSQLite(ctx context.Context, es []Execution) (err error) {
	tx, err := s.sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("insert %d executions: %w", len(es), err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO sys_ai_execution (execution_id, run_id, plugin_name, user_id,
		status, http_status, latency_ms, attempts, error_class, error_message, create_time) VALUES (?,?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return fmt.Errorf("insert %d executions: %w", len(es), err)
	}
	defer stmt.Close()
	for _, e := range es {
		if _, err = stmt.ExecContext(ctx, e.ID, e.RunID, e.PluginName, e.UserID, e.Status, e.HTTPStatus,
			e.LatencyMS, e.Attempts, e.ErrorClass, e.ErrorMessage, e.CreateTime); err != nil {
			return fmt.Errorf("insert execution %s: %w", e.ID, classify(err))
		}
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("insert %d executions: %w", len(es), err)
	}
	return nil
}

// ExecutionFilter selects executions in ListExecutions; zero fields do not
// filter. Since is inclusive, Until exclusive. Limit defaults to
// DefaultExecutionLimit and is capped at MaxExecutionLimit.
type ExecutionFilter struct {
	PluginName string
	UserID     *int64
	RunID      string
	Since      time.Time
	Until      time.Time
	Limit      int
}

// InsertExecutions appends es to the execution log in one batch. Missing
// IDs get a random UUID and missing times the current time; es is updated
// in place.
func (s *Store) InsertExecutions(ctx context.Context, es []Execution) error {
	if len(es) == 0 {
		return nil
	}
	stamp := time.Now()
	for i := range es {
		e := &es[i]
		if e.ID == "" {
			e.ID = uuid.NewString()
		}
		if e.CreateTime.IsZero() {
			e.CreateTime = stamp
		}
		// DATETIME(3): keep milliseconds, as every database will.
		e.CreateTime = e.CreateTime.UTC().Truncate(time.Millisecond)
		e.ErrorClass = truncateRunes(e.ErrorClass, maxErrorClass)
		e.ErrorMessage = truncateRunes(e.ErrorMessage, maxErrorMessage)
	}
	if s.dialect == DialectSQLite {
		return s.insertExecutionsSQLite(ctx, es)
	}
	// CreateInBatches writes the batches in one transaction.
	if err := s.db.WithContext(ctx).CreateInBatches(es, insertBatch).Error; err != nil {
		return fmt.Errorf("insert %d executions: %w", len(es), classify(err))
	}
	return nil
}

// ListExecutions returns the executions matching f, newest first.
func (s *Store) ListExecutions(ctx context.Context, f ExecutionFilter) ([]Execution, error) {
	q := s.db.WithContext(ctx)
	if f.PluginName != "" {
		q = q.Where("plugin_name = ?", f.PluginName)
	}
	if f.UserID != nil {
		q = q.Where("user_id = ?", *f.UserID)
	}
	if f.RunID != "" {
		q = q.Where("run_id = ?", f.RunID)
	}
	// SQLite compares the UTC text the driver writes; its fraction has no
	// trailing zeros, which keeps text order equal to time order.
	if !f.Since.IsZero() {
		q = q.Where("create_time >= ?", f.Since.UTC())
	}
	if !f.Until.IsZero() {
		q = q.Where("create_time < ?", f.Until.UTC())
	}
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = DefaultExecutionLimit
	case limit > MaxExecutionLimit:
		limit = MaxExecutionLimit
	}
	var es []Execution
	if err := q.Order("create_time DESC, execution_id DESC").Limit(limit).Find(&es).Error; err != nil {
		return nil, fmt.Errorf("list executions: %w", classify(err))
	}
	return es, nil
}

// truncateRunes cuts s to at most n characters (VARCHAR(n) counts
// characters on MySQL), never inside a UTF-8 sequence.
func truncateRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
