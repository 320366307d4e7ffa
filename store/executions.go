package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
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
	maxTraceID      = 32
)

// insertBatch bounds the rows of one INSERT, well within MySQL's packet
// limit (the record spool's drainer writes at most this many at once).
const insertBatch = 500

// insertExecutionsSQLite writes es as multi-row INSERTs whose values are
// SQL literals, in one transaction (the statement's own when there is one
// INSERT). The pure-Go SQLite driver prepares a statement again on every
// Exec, a prepared one included, and binds multi-row parameters in
// quadratic time (it finds each one by a linear scan of the arguments),
// so literals are the cheapest way in: 5 µs a record against 12 µs for a
// prepared single-row insert (BenchmarkInsertExecutions, 256 records);
// by instructions a record (BenchmarkRecordSteps), 66,000 against
// 171,000, and 151,000 for rows read from one bound JSON array with
// json_each (SQLite renders and parses each row's JSON again for every
// column it takes). appendSQLiteText makes any string a literal; the other
// columns are numbers and times this function formats itself.
func (s *Store) insertExecutionsSQLite(ctx context.Context, es []Execution) error {
	// One statement needs no transaction of its own, and outside one
	// SQLite keeps no statement journal (a copy of every page the INSERT
	// changes, to undo it alone): a fifth of the insert's CPU.
	return s.insertInStatements(ctx, es, s.raw(), insertRow, 0, func(q []byte, args []any, batch []Execution) ([]byte, []any) {
		return appendSQLiteInsert(q, batch), args
	})
}

// execer runs a statement: the connection pool, gorm's cache of prepared
// statements, a transaction (each bounded).
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insertInStatements writes es in statements of up to insertBatch rows
// that build appends (its text, about rowBytes a row, and rowArgs
// arguments a row): one statement by one, more in one transaction.
func (s *Store) insertInStatements(ctx context.Context, es []Execution, one execer, rowBytes, rowArgs int,
	build func(q []byte, args []any, batch []Execution) ([]byte, []any)) (err error) {
	n := min(len(es), insertBatch)
	q, args := make([]byte, 0, insertHead+n*rowBytes), make([]any, 0, n*rowArgs)
	if len(es) <= insertBatch {
		q, args = build(q, args, es)
		if _, err := one.ExecContext(ctx, string(q), args...); err != nil {
			return fmt.Errorf("insert %d executions: %w", len(es), classify(err))
		}
		return nil
	}
	tx, err := beginBounded(ctx, s.sqlDB, nil)
	if err != nil {
		return fmt.Errorf("insert %d executions: %w", len(es), err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	for batch := range slices.Chunk(es, insertBatch) {
		q, args = build(q[:0], args[:0], batch)
		if _, err = (bounded{tx}).ExecContext(ctx, string(q), args...); err != nil {
			return fmt.Errorf("insert %d executions: %w", len(batch), classify(err))
		}
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("insert %d executions: %w", len(es), err)
	}
	return nil
}

// Sizes of an INSERT of records, to allocate it once: its fixed part, and
// a row of SQLite's literals of usual width (a few longer ones just grow
// it).
const (
	insertHead = 256
	insertRow  = 192
)

// appendSQLiteInsert appends to q the INSERT of batch with its values as
// literals. SQLite parses and codes every literal of every row, and that
// is most of a record's insert, so a column whose value is the same in
// every row of the batch (most calls succeed, at the first attempt, and a
// batch's calls often share a tool and a user) is written once: as the
// constant of an INSERT … SELECT over the other columns' VALUES, or left
// out when it is NULL (run_id, confirmation, questions, trace_id: most
// calls have none), which is its default. The rows are the same rows,
// inserted in the same order (TestExecutionBatchForms).
func appendSQLiteInsert(q []byte, batch []Execution) []byte {
	var each, once [len(sqliteColumns)]bool
	hoisted := false
	for c := range sqliteColumns {
		col := &sqliteColumns[c]
		same := col.same != nil
		for i := 1; same && i < len(batch); i++ {
			same = col.same(&batch[0], &batch[i])
		}
		switch {
		case !same:
			each[c] = true
		case !col.null(&batch[0]):
			once[c], hoisted = true, true
		}
	}
	name := func(q []byte, c int) []byte { return append(q, sqliteColumns[c].name...) }
	q = append(q, "INSERT INTO sys_ai_execution ("...)
	q = appendColumns(q, &each, ", ", name)
	if hoisted {
		q = appendColumns(append(q, ", "...), &once, ", ", name)
		q = append(q, ") SELECT "...)
		n := 0
		q = appendColumns(q, &each, ", ", func(q []byte, c int) []byte {
			n++
			return strconv.AppendInt(append(q, "column"...), int64(n), 10)
		})
		q = appendColumns(append(q, ", "...), &once, ", ", func(q []byte, c int) []byte { return sqliteColumns[c].literal(q, &batch[0]) })
		q = append(q, " FROM (VALUES "...)
	} else {
		q = append(q, ") VALUES "...)
	}
	for i := range batch {
		e := &batch[i]
		if i > 0 {
			q = append(q, ',')
		}
		q = append(appendColumns(append(q, '('), &each, ",", func(q []byte, c int) []byte { return sqliteColumns[c].literal(q, e) }), ')')
	}
	if hoisted {
		// WHERE true: without it SQLite would read ON CONFLICT as the
		// subquery's join constraint.
		q = append(q, ") WHERE true"...)
	}
	return append(q, " ON CONFLICT(execution_id) DO NOTHING"...)
}

// appendColumns appends f of each of the columns in, separated by sep.
func appendColumns(q []byte, in *[len(sqliteColumns)]bool, sep string, f func(q []byte, c int) []byte) []byte {
	first := true
	for c := range in {
		if in[c] {
			if !first {
				q = append(q, sep...)
			}
			q, first = f(q, c), false
		}
	}
	return q
}

// sqliteColumns are the columns of a record's INSERT on SQLite: name,
// its value as a literal, whether two records' values are the same (nil:
// never written once), and whether a record's is NULL.
var sqliteColumns = [...]struct {
	name    string
	literal func(q []byte, e *Execution) []byte
	same    func(a, b *Execution) bool
	null    func(e *Execution) bool
}{
	{"execution_id", func(q []byte, e *Execution) []byte { return appendSQLiteText(q, e.ID) }, nil, nil},
	{"create_time", func(q []byte, e *Execution) []byte {
		q = append(q, '\'')
		return append(appendSQLiteTime(q, e.CreateTime), '\'')
	}, nil, nil},
	{"plugin_name", func(q []byte, e *Execution) []byte { return appendSQLiteText(q, e.PluginName) },
		func(a, b *Execution) bool { return a.PluginName == b.PluginName }, never},
	{"user_id", func(q []byte, e *Execution) []byte {
		if e.UserID == nil {
			return append(q, "NULL"...)
		}
		return strconv.AppendInt(q, *e.UserID, 10)
	}, func(a, b *Execution) bool {
		return (a.UserID == nil) == (b.UserID == nil) && (a.UserID == nil || *a.UserID == *b.UserID)
	},
		func(e *Execution) bool { return e.UserID == nil }},
	{"status", func(q []byte, e *Execution) []byte { return appendSQLiteText(q, e.Status) },
		func(a, b *Execution) bool { return a.Status == b.Status }, never},
	{"http_status", func(q []byte, e *Execution) []byte { return strconv.AppendInt(q, int64(e.HTTPStatus), 10) },
		func(a, b *Execution) bool { return a.HTTPStatus == b.HTTPStatus }, never},
	{"latency_ms", func(q []byte, e *Execution) []byte { return strconv.AppendInt(q, e.LatencyMS, 10) },
		func(a, b *Execution) bool { return a.LatencyMS == b.LatencyMS }, never},
	{"attempts", func(q []byte, e *Execution) []byte { return strconv.AppendInt(q, int64(e.Attempts), 10) },
		func(a, b *Execution) bool { return a.Attempts == b.Attempts }, never},
	{"error_class", func(q []byte, e *Execution) []byte { return appendSQLiteText(q, e.ErrorClass) },
		func(a, b *Execution) bool { return a.ErrorClass == b.ErrorClass }, never},
	{"error_message", func(q []byte, e *Execution) []byte { return appendSQLiteText(q, e.ErrorMessage) },
		func(a, b *Execution) bool { return a.ErrorMessage == b.ErrorMessage }, never},
	{"run_id", func(q []byte, e *Execution) []byte {
		if e.RunID == nil {
			return append(q, "NULL"...)
		}
		return appendSQLiteText(q, *e.RunID)
	}, func(a, b *Execution) bool {
		return (a.RunID == nil) == (b.RunID == nil) && (a.RunID == nil || *a.RunID == *b.RunID)
	},
		func(e *Execution) bool { return e.RunID == nil }},
	{"confirmation", func(q []byte, e *Execution) []byte { return appendSQLiteNullable(q, e.Confirmation) },
		func(a, b *Execution) bool { return a.Confirmation == b.Confirmation }, func(e *Execution) bool { return e.Confirmation == "" }},
	{"questions", func(q []byte, e *Execution) []byte { return appendSQLiteNullable(q, e.Questions) },
		func(a, b *Execution) bool { return a.Questions == b.Questions }, func(e *Execution) bool { return e.Questions == "" }},
	{"trace_id", func(q []byte, e *Execution) []byte { return appendSQLiteNullable(q, e.TraceID) },
		func(a, b *Execution) bool { return a.TraceID == b.TraceID }, func(e *Execution) bool { return e.TraceID == "" }},
}

// never is a column's null for a value never NULL.
func never(*Execution) bool { return false }

// appendSQLiteNullable appends s as a literal, NULL when s is empty.
func appendSQLiteNullable(q []byte, s string) []byte {
	if s == "" {
		return append(q, "NULL"...)
	}
	return appendSQLiteText(q, s)
}

// sqliteTimeLayout is the layout the SQLite driver writes a bound
// time.Time in; literals must match it, since ListExecutions compares the
// stored text with bound times.
const sqliteTimeLayout = "2006-01-02 15:04:05.999999999-07:00"

// appendSQLiteTime appends t in UTC as AppendFormat with sqliteTimeLayout
// writes it, digit by digit: the layout's interpretation was two thirds
// of the statement's building (TestAppendSQLiteTime).
func appendSQLiteTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, sqliteTimeLayout)
	}
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, ' ')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	if ns := t.Nanosecond(); ns != 0 {
		digits := 9
		for ns%10 == 0 {
			ns /= 10
			digits--
		}
		b = append(b, '.')
		b = appendDigits(b, ns, digits)
	}
	return append(b, "+00:00"...)
}

// appendDigits appends n (not negative) in width decimal digits,
// zero-padded.
func appendDigits(b []byte, n, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		b = append(b, 0)
	}
	for i := len(b) - 1; width > 0; i, width = i-1, width-1 {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}

// appendSQLiteText appends s to b as an SQLite string literal holding
// exactly s's bytes: quotes are doubled (SQLite has no backslash escapes),
// and a string with a NUL byte, which ends SQLite's tokenizer, is written
// as a blob literal cast to text.
func appendSQLiteText(b []byte, s string) []byte {
	if strings.IndexByte(s, 0) >= 0 {
		b = append(b, "CAST(X'"...)
		b = hex.AppendEncode(b, []byte(s))
		return append(b, "' AS TEXT)"...)
	}
	b = append(b, '\'')
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			break
		}
		b = append(b, s[:i+1]...)
		b = append(b, '\'')
		s = s[i+1:]
	}
	b = append(b, s...)
	return append(b, '\'')
}

// ExecutionFilter selects executions in ListExecutions; zero fields do not
// filter. Since is inclusive, Until exclusive. Limit defaults to
// DefaultExecutionLimit and is capped at MaxExecutionLimit.
type ExecutionFilter struct {
	PluginName string
	// Tools, when not nil, keeps the records of these plugins only (none
	// when empty).
	Tools   []string
	UserID  *int64
	RunID   string
	TraceID string
	Since   time.Time
	Until   time.Time
	Limit   int
}

// InsertExecutions appends es to the execution log in one batch. Missing
// IDs get a random UUID and missing times the current time; es is updated
// in place. A row whose id is already stored is skipped, the stored one
// kept: the record spool may hand the same record over twice (a replay
// after a crash, a write whose answer was lost), and the second is the
// same record.
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
		if len(e.TraceID) > maxTraceID {
			e.TraceID = "" // not a trace id: never cut one into another
		}
	}
	if s.dialect == DialectSQLite {
		return s.insertExecutionsSQLite(ctx, es)
	}
	return s.insertExecutionsMySQL(ctx, es)
}

// insertExecutionsMySQL writes es as multi-row INSERTs with their values
// as arguments, built here rather than by gorm's CreateInBatches, whose
// reflection over every field of every row was four fifths of a record's
// write on the engine's side (BenchmarkRecordSteps); the statement, the
// same for a batch of the same size, is prepared once through gorm's
// statement cache. ON DUPLICATE KEY UPDATE execution_id = execution_id
// skips a stored id: unlike INSERT IGNORE it turns no other error into a
// warning. The columns are stored as gorm stored them
// (TestExecutionEmptyColumns).
func (s *Store) insertExecutionsMySQL(ctx context.Context, es []Execution) error {
	return s.insertInStatements(ctx, es, bounded{s.db.ConnPool}, len("(?,?,?,?,?,?,?,?,?,?,?,?,?,?),"), executionColumns, appendMySQLInsert)
}

// executionColumns is the number of columns an INSERT of records writes.
const executionColumns = 14

// appendMySQLInsert appends to q the INSERT of batch with a placeholder
// for each value, and the values to args.
func appendMySQLInsert(q []byte, args []any, batch []Execution) ([]byte, []any) {
	q = append(q, "INSERT INTO `sys_ai_execution` (`execution_id`,`run_id`,`plugin_name`,`user_id`,`status`,"+
		"`http_status`,`latency_ms`,`attempts`,`error_class`,`error_message`,`confirmation`,`questions`,`create_time`,`trace_id`) VALUES "...)
	for i := range batch {
		e := &batch[i]
		if i > 0 {
			q = append(q, ',')
		}
		q = append(q, "(?,?,?,?,?,?,?,?,?,?,?,?,?,?)"...)
		var runID, userID, questions, traceID any // NULL when empty
		if e.RunID != nil {
			runID = *e.RunID
		}
		if e.UserID != nil {
			userID = *e.UserID
		}
		if e.Questions != "" {
			questions = e.Questions
		}
		if e.TraceID != "" {
			traceID = e.TraceID
		}
		args = append(args, e.ID, runID, e.PluginName, userID, e.Status, int64(e.HTTPStatus), e.LatencyMS, int64(e.Attempts),
			e.ErrorClass, e.ErrorMessage, e.Confirmation, questions, e.CreateTime, traceID)
	}
	return append(q, " ON DUPLICATE KEY UPDATE `execution_id`=`execution_id`"...), args
}

// ListExecutions returns the executions matching f, newest first.
func (s *Store) ListExecutions(ctx context.Context, f ExecutionFilter) ([]Execution, error) {
	var es []Execution
	if err := executionsQuery(s.db.WithContext(ctx), f).Find(&es).Error; err != nil {
		return nil, fmt.Errorf("list executions: %w", classify(err))
	}
	return es, nil
}

// executionsQuery narrows q to ListExecutions' page of f.
func executionsQuery(q *gorm.DB, f ExecutionFilter) *gorm.DB {
	if f.PluginName != "" {
		q = q.Where("plugin_name = ?", f.PluginName)
	}
	q = keepIn(q, "plugin_name", f.Tools)
	if f.UserID != nil {
		q = q.Where("user_id = ?", *f.UserID)
	}
	// On SQLite the run's and the trace's indexes hold only the rows that
	// have one (migration 00029); "= ?" implies IS NOT NULL, so both are
	// used (TestExecutionQueryPlans).
	if f.RunID != "" {
		q = q.Where("run_id = ?", f.RunID)
	}
	if f.TraceID != "" {
		q = q.Where("trace_id = ?", f.TraceID)
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
	return q.Order("create_time DESC, execution_id DESC").Limit(limit)
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

// LastCalls returns, by plugin name, when each of names was last executed;
// a plugin never called is absent.
func (s *Store) LastCalls(ctx context.Context, names []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(names))
	for chunk := range slices.Chunk(names, lastCallsChunk) {
		// One index lookup per name, the (plugin_name, create_time)
		// index's last entry: neither an aggregate, which would read
		// every execution of the names, nor one query per name.
		q, args := lastCallsQuery(chunk)
		var rows []Execution
		if err := s.db.WithContext(ctx).Raw(q, args...).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("last calls of %d plugins: %w", len(names), classify(err))
		}
		for _, r := range rows {
			out[r.PluginName] = r.CreateTime
		}
	}
	return out, nil
}

// lastCallsQuery is LastCalls' query of names.
func lastCallsQuery(names []string) (string, []any) {
	parts := make([]string, len(names))
	args := make([]any, len(names))
	for i, name := range names {
		parts[i] = "SELECT * FROM (SELECT plugin_name, create_time FROM sys_ai_execution WHERE plugin_name = ? ORDER BY create_time DESC LIMIT 1) l" + strconv.Itoa(i)
		args[i] = name
	}
	return strings.Join(parts, " UNION ALL "), args
}

// lastCallsChunk bounds the names of one LastCalls query, well within
// SQLite's 500 terms of a compound SELECT.
const lastCallsChunk = 100
