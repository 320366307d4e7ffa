package store

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing/fstest"

	"gorm.io/gorm"
)

// How a store's change counters move (BLINDEXEC_CHANGE_DETECTION).
const (
	// ChangeTriggers: triggers on the followed tables bump the counters,
	// whoever writes (the default; SQLite always).
	ChangeTriggers = "triggers"
	// ChangePoll: no trigger (TiDB and other distributed MySQL-compatible
	// databases have none). The engine's own writes bump the counters;
	// writes by plain SQL are found by the Watcher's audit, which
	// fingerprints the followed tables' contents.
	ChangePoll = "poll"
)

// ChangeModes are the values SetChangeDetection accepts.
var ChangeModes = []string{ChangeTriggers, ChangePoll}

// SetChangeDetection selects how the counters move ("": triggers); call
// it before Migrate (which creates no trigger in poll mode) and before any
// write. SQLite, one file on one machine, always has its triggers.
func (s *Store) SetChangeDetection(mode string) error {
	if mode == "" {
		mode = ChangeTriggers
	}
	switch {
	case !slices.Contains(ChangeModes, mode):
		return fmt.Errorf("change detection %q: want one of %s", mode, strings.Join(ChangeModes, ", "))
	case mode == ChangePoll && s.dialect != DialectMySQL:
		return fmt.Errorf("change detection %q: only on a MySQL-compatible database (SQLite keeps its triggers)", mode)
	}
	s.changeMode = mode
	return nil
}

// ChangeDetection is ChangeTriggers or ChangePoll.
func (s *Store) ChangeDetection() string {
	if s.changeMode == "" {
		return ChangeTriggers
	}
	return s.changeMode
}

func (s *Store) polled() bool { return s.changeMode == ChangePoll }

// alsoBumps are tables outside changeScopes whose writes move another
// table's counter, as their triggers do: a source's title, tag
// descriptions and aliases are read by tool search with the plugins
// (migration 00021). A plain-SQL change of them is not fingerprinted: in
// poll mode it is seen at the catalog's next change.
var alsoBumps = map[string]string{"sys_ai_import_source": "plugin"}

// bookkeeping are the columns of a followed table whose updates change
// nothing a replica keeps (the triggers skip them too): a write of only
// these moves no counter, and the content fingerprint leaves them out.
var bookkeeping = map[string][]string{
	"sys_ai_token":      {"last_used_time"},
	"sys_ai_mcp_server": {"tools_cache", "tools_cached_time"},
}

// registerBumps makes the store's own writes of a followed table bump its
// counter in poll mode, as its triggers would: in the write's transaction
// when it has one (replicas never reload before the write is visible),
// else right after the write, which is then committed.
func (s *Store) registerBumps() error {
	bump := func(db *gorm.DB) {
		if !s.polled() || db.Error != nil || db.Statement.RowsAffected == 0 {
			return
		}
		scope := scopeOf(db.Statement.Table)
		if scope == "" || bookkeepingOnly(db.Statement) {
			return
		}
		const q = "UPDATE sys_ai_change SET version = version + 1 WHERE scope = ?"
		ctx := db.Statement.Context
		if _, inTx := db.Statement.ConnPool.(gorm.TxCommitter); inTx {
			if _, err := db.Statement.ConnPool.ExecContext(ctx, q, scope); err != nil {
				db.AddError(fmt.Errorf("bump change counter %s: %w", scope, err))
			}
			return
		}
		// Galera retries an autocommit statement that lost certification
		// once; a replica's burst of writes may need more.
		if err := retryConflicts(ctx, leaseAttempts, func() error {
			_, err := s.raw().ExecContext(ctx, q, scope)
			return err
		}); err != nil {
			db.AddError(fmt.Errorf("bump change counter %s (the write itself is done): %w", scope, err))
		}
	}
	cb := s.db.Callback()
	if err := cb.Create().After("gorm:create").Register("blindexec:bump", bump); err != nil {
		return err
	}
	if err := cb.Update().After("gorm:update").Register("blindexec:bump", bump); err != nil {
		return err
	}
	return cb.Delete().After("gorm:delete").Register("blindexec:bump", bump)
}

func scopeOf(table string) string {
	if s, ok := alsoBumps[table]; ok {
		return s
	}
	for _, c := range changeScopes {
		if c.table == table {
			return c.name
		}
	}
	return ""
}

// bookkeepingOnly reports an update of bookkeeping columns only.
func bookkeepingOnly(st *gorm.Statement) bool {
	skip := bookkeeping[st.Table]
	cols, ok := st.Dest.(map[string]any)
	if len(skip) == 0 || !ok || len(cols) == 0 {
		return false
	}
	for c := range cols {
		if !slices.Contains(skip, c) {
			return false
		}
	}
	return true
}

// contentFingerprint sums a checksum of every row of c's table (its
// columns but the bookkeeping ones, as the database lists them), as a
// sum and an exclusive or of CRC32s: any change of a row's content moves
// it, whatever its id or update_time, with odds of about 2^-64 of not.
func contentFingerprint(ctx context.Context, q querier, c changeScope) (Fingerprint, error) {
	rows, err := q.QueryContext(ctx, "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position", c.table)
	if err != nil {
		return Fingerprint{}, fmt.Errorf("fingerprint %s: %w", c.table, err)
	}
	var cols []string
	for rows.Next() {
		var col string
		if err := rows.Scan(&col); err != nil {
			rows.Close()
			return Fingerprint{}, fmt.Errorf("fingerprint %s: %w", c.table, err)
		}
		if !slices.Contains(bookkeeping[c.table], col) {
			cols = append(cols, "IFNULL(`"+col+"`, 0x00)")
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Fingerprint{}, fmt.Errorf("fingerprint %s: %w", c.table, err)
	}
	if len(cols) == 0 {
		return Fingerprint{}, fmt.Errorf("fingerprint %s: the table has no columns", c.table)
	}
	row := "CRC32(CONCAT_WS(0x1f, " + strings.Join(cols, ", ") + "))"
	var fp Fingerprint
	err = q.QueryRowContext(ctx, "SELECT COUNT(*), CAST(COALESCE(SUM("+row+"), 0) AS CHAR), CAST(COALESCE(BIT_XOR("+row+"), 0) AS CHAR) FROM "+c.table).
		Scan(&fp.Rows, &fp.Content, &fp.ContentXor)
	if err != nil {
		return Fingerprint{}, fmt.Errorf("fingerprint %s: %w", c.table, err)
	}
	return fp, nil
}

// withoutTriggers is fsys with the trigger statements taken out of the
// migrations that create them (changeTriggersMigrations): poll mode's
// schema, for databases that have no triggers.
func withoutTriggers(fsys fs.FS) (fs.FS, error) {
	out := fstest.MapFS{}
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		text, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		if slices.Contains(changeTriggersMigrations, path) {
			text = []byte(stripTriggers(string(text)))
		}
		out[path] = &fstest.MapFile{Data: text, Mode: 0o444}
		return nil
	})
	return out, err
}

// stripTriggers removes the CREATE TRIGGER and DROP TRIGGER statements of
// a goose SQL file: a line ending in ";", or a StatementBegin/End block.
func stripTriggers(text string) string {
	var (
		out, stmt strings.Builder
		inBlock   bool
	)
	flush := func() {
		var fields []string
		for _, l := range strings.Split(stmt.String(), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "--") {
				fields = append(fields, strings.Fields(l)...)
			}
		}
		if len(fields) < 2 || !strings.EqualFold(fields[1], "TRIGGER") || !(strings.EqualFold(fields[0], "CREATE") || strings.EqualFold(fields[0], "DROP")) {
			out.WriteString(stmt.String())
		}
		stmt.Reset()
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text() + "\n"
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "-- +goose StatementBegin":
			inBlock = true
			stmt.WriteString(line)
			continue
		case trimmed == "-- +goose StatementEnd":
			inBlock = false
			stmt.WriteString(line)
			flush()
			continue
		case inBlock:
			stmt.WriteString(line)
			continue
		case stmt.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "--")):
			out.WriteString(line) // goose annotations and comments stay
			continue
		}
		stmt.WriteString(line)
		if strings.HasSuffix(trimmed, ";") {
			flush()
		}
	}
	flush()
	return out.String()
}
