package store

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blindexec/blindexec/migrations"
)

// Versions are the change counters of the sources replicas keep in memory.
// Triggers (migrations 00004, 00011, 00012 and 00015) bump them on every insert, update and delete,
// whoever writes: the engine, the CLI, or RuoYi with plain SQL.
type Versions struct {
	Plugins     int64 `json:"plugins"`
	Credentials int64 `json:"credentials"`
	Tokens      int64 `json:"tokens"`
	MCPServers  int64 `json:"mcp_servers"`
	QuotaRules  int64 `json:"quota_rules"`
	Providers   int64 `json:"oauth_providers"`
	Agents      int64 `json:"agents"`
	// Grants is no counter: a digest of the tables the users' permission
	// strings are read from (RuoYi's, which carry no trigger), read at
	// each poll when Watcher.Grants is set; 0 otherwise.
	Grants int64 `json:"grants,omitempty"`
}

// changeScope is one counter row and the table its triggers follow.
type changeScope struct {
	name, table, id string
	field           func(*Versions) *int64
}

var changeScopes = []changeScope{
	{"plugin", "sys_ai_plugin", "plugin_id", func(v *Versions) *int64 { return &v.Plugins }},
	{"credential", "sys_user_credential", "credential_id", func(v *Versions) *int64 { return &v.Credentials }},
	{"token", "sys_ai_token", "token_id", func(v *Versions) *int64 { return &v.Tokens }},
	{"mcp_server", "sys_ai_mcp_server", "mcp_id", func(v *Versions) *int64 { return &v.MCPServers }},
	{"quota_rule", "sys_ai_quota_rule", "rule_id", func(v *Versions) *int64 { return &v.QuotaRules }},
	{"oauth_provider", "sys_ai_oauth_provider", "provider_id", func(v *Versions) *int64 { return &v.Providers }},
	{"agent", "sys_ai_agent", "agent_id", func(v *Versions) *int64 { return &v.Agents }},
}

// MissingCountersError says that counter rows are missing from
// sys_ai_change (deleted by hand): the triggers then bump nothing for those
// scopes, and no replica would see their changes.
type MissingCountersError struct {
	Scopes []string
}

func (e *MissingCountersError) Error() string {
	return fmt.Sprintf("change counter rows missing from sys_ai_change: %s", strings.Join(e.Scopes, ", "))
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Versions reads the change counters: one indexed query. Counter rows
// found missing are reported as a *MissingCountersError, with the counters
// that were found.
func (s *Store) Versions(ctx context.Context) (Versions, error) {
	return readVersions(ctx, s.raw())
}

func readVersions(ctx context.Context, q querier) (Versions, error) {
	rows, err := q.QueryContext(ctx, "SELECT scope, version FROM sys_ai_change")
	if err != nil {
		return Versions{}, fmt.Errorf("read change counters: %w", err)
	}
	defer rows.Close()
	var v Versions
	found := map[string]bool{}
	for rows.Next() {
		var (
			scope string
			n     int64
		)
		if err := rows.Scan(&scope, &n); err != nil {
			return Versions{}, fmt.Errorf("read change counters: %w", err)
		}
		for _, c := range changeScopes {
			if c.name == scope {
				*c.field(&v), found[scope] = n, true
			}
		}
	}
	if err := rows.Err(); err != nil {
		return Versions{}, fmt.Errorf("read change counters: %w", err)
	}
	var missing []string
	for _, c := range changeScopes {
		if !found[c.name] {
			missing = append(missing, c.name)
		}
	}
	if missing != nil {
		return v, &MissingCountersError{Scopes: missing}
	}
	return v, nil
}

// RecreateCounters puts back the counter rows of scopes, each at a new
// generation: a random value in [2^52, 2^53), which no replica holds
// (counters start at 0 and move by one a write, and two generations meet
// with odds of about 2^-52), so every replica's caches of that scope
// reload. Below 2^53 a counter stays exact as a JSON number (/readyz). A row
// another replica recreated first is left as it is. Every other counter is
// bumped too: rows deleted by hand may come with other hand edits, so
// everything is reloaded. Nothing is put back on a schema that is not up to
// date.
func (s *Store) RecreateCounters(ctx context.Context, scopes []string) error {
	// A row is missing too while the migration that inserts it has not run
	// (serve --no-migrate beside a migration job): put back, it would make
	// that migration fail half-way.
	if err := s.CheckMigrated(ctx); err != nil {
		return fmt.Errorf("recreate change counters %s: %w", strings.Join(scopes, ", "), err)
	}
	insert := "INSERT OR IGNORE INTO sys_ai_change (scope, version) VALUES (?, ?)"
	if s.dialect == DialectMySQL {
		insert = "INSERT IGNORE INTO sys_ai_change (scope, version) VALUES (?, ?)"
	}
	for _, scope := range scopes {
		var b [8]byte
		rand.Read(b[:])
		gen := int64(binary.LittleEndian.Uint64(b[:])>>12 | 1<<52)
		if _, err := s.raw().ExecContext(ctx, insert, scope, gen); err != nil {
			return fmt.Errorf("recreate change counter %q: %w", scope, err)
		}
	}
	var others []string
	for _, c := range changeScopes {
		if !slices.Contains(scopes, c.name) {
			others = append(others, c.name)
		}
	}
	return s.BumpCounters(ctx, others...)
}

// BumpCounters moves the counters of scopes by one, as a trigger would:
// every replica reloads what it keeps of them after its next poll.
func (s *Store) BumpCounters(ctx context.Context, scopes ...string) error {
	if len(scopes) == 0 {
		return nil
	}
	q := "UPDATE sys_ai_change SET version = version + 1 WHERE scope IN (?" + strings.Repeat(", ?", len(scopes)-1) + ")"
	args := make([]any, len(scopes))
	for i, s := range scopes {
		args[i] = s
	}
	if _, err := s.raw().ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("bump change counters %v: %w", scopes, err)
	}
	return nil
}

// Fingerprint is a cheap summary of a followed table: its row count, its
// largest id and its latest update_time. A write that moves it without
// moving the table's counter was not seen by a trigger (TRUNCATE TABLE, or
// a trigger missing). The bookkeeping columns the triggers skip (a token's
// last_used_time, an MCP server's cached tools) are not part of it.
//
// In poll mode (no trigger) it is a checksum of the table's contents
// instead (Content, ContentXor: contentFingerprint), which a plain UPDATE
// of any column moves.
type Fingerprint struct {
	Rows                int64
	MaxID               string
	Updated             string
	Content, ContentXor string
}

// ChangeAudit is what a Watcher checks every few polls, read in one
// transaction so that the counters and the fingerprints agree.
type ChangeAudit struct {
	Versions     Versions
	Fingerprints map[string]Fingerprint // by scope
	// MissingTriggers names the counter triggers the database lacks
	// (dropped by hand): writes they would count move nothing.
	MissingTriggers []string
	// Polled says the store has no triggers (poll mode): a table that
	// changed behind its counter was written by plain SQL, as expected.
	Polled bool
}

// AuditChanges reads the counters, a fingerprint of each followed table
// and the list of triggers: one scan of each table and one catalog query.
// In poll mode the fingerprints are of the tables' contents, and there is
// no trigger to list.
func (s *Store) AuditChanges(ctx context.Context) (ChangeAudit, error) {
	want, err := s.changeTriggers()
	if err != nil {
		return ChangeAudit{}, err
	}
	if s.polled() {
		want = nil
	}
	tx, err := beginBounded(ctx, s.sqlDB, nil)
	if err != nil {
		return ChangeAudit{}, fmt.Errorf("audit change counters: %w", err)
	}
	defer tx.Rollback()
	b := bounded{tx} // each statement of it
	a := ChangeAudit{Polled: s.polled()}
	if a.Versions, err = readVersions(ctx, b); err != nil {
		return ChangeAudit{}, err
	}
	a.Fingerprints = make(map[string]Fingerprint, len(changeScopes))
	for _, c := range changeScopes {
		if a.Polled {
			if a.Fingerprints[c.name], err = contentFingerprint(ctx, b, c); err != nil {
				return ChangeAudit{}, err
			}
			continue
		}
		var (
			fp         Fingerprint
			id, update sql.NullString
		)
		q := fmt.Sprintf("SELECT COUNT(*), MAX(%s), MAX(update_time) FROM %s", c.id, c.table)
		if err := b.QueryRowContext(ctx, q).Scan(&fp.Rows, &id, &update); err != nil {
			return ChangeAudit{}, fmt.Errorf("fingerprint %s: %w", c.table, err)
		}
		fp.MaxID, fp.Updated = id.String, update.String
		a.Fingerprints[c.name] = fp
	}
	if want == nil {
		return a, nil
	}
	have, err := s.triggerNames(ctx, b)
	if err != nil {
		return ChangeAudit{}, err
	}
	for _, t := range want {
		if !have[t.name] {
			a.MissingTriggers = append(a.MissingTriggers, t.name)
		}
	}
	return a, nil
}

func (s *Store) triggerNames(ctx context.Context, q querier) (map[string]bool, error) {
	query := "SELECT name FROM sqlite_master WHERE type = 'trigger'"
	if s.dialect == DialectMySQL {
		query = "SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = DATABASE()"
	}
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("list triggers: %w", err)
		}
		have[name] = true
	}
	return have, rows.Err()
}

// repairChanges recreates the counter triggers (none in poll mode) and
// rows found missing: the last step of Migrate, under its lock.
func (s *Store) repairChanges(ctx context.Context) error {
	want, err := s.changeTriggers()
	if err != nil {
		return err
	}
	have := map[string]bool{}
	if s.polled() {
		want = nil
	} else if have, err = s.triggerNames(ctx, s.sqlDB); err != nil { // a step of Migrate: unbounded, as migrations are
		return err
	}
	for _, t := range want {
		if !have[t.name] {
			if _, err := s.sqlDB.ExecContext(ctx, t.create); err != nil {
				return fmt.Errorf("recreate trigger %s: %w", t.name, err)
			}
		}
	}
	_, err = s.Versions(ctx)
	if missing, ok := errors.AsType[*MissingCountersError](err); ok {
		return s.RecreateCounters(ctx, missing.Scopes)
	}
	return err
}

// changeTriggersMigrations create the counter triggers: the ones a
// replica expects, and recreates, are read from them. A migration that
// adds or changes them must be named here.
var changeTriggersMigrations = []string{"00004_changes.sql", "00011_quotas.sql", "00012_connections.sql", "00015_access.sql", "00021_source_search.sql",
	"00030_mcp_credentials_url.sql", "00032_mcp_credentials_token_url.sql"}

type trigger struct{ name, create string }

// changeTriggers returns the CREATE TRIGGER statements of the Up sections
// of changeTriggersMigrations, split as goose splits them: at a line ending
// in ";", or a -- +goose StatementBegin/End block as one. Read once per
// dialect.
func (s *Store) changeTriggers() ([]trigger, error) {
	if s.dialect == DialectMySQL {
		return mysqlTriggers()
	}
	return sqliteTriggers()
}

var (
	mysqlTriggers  = sync.OnceValues(func() ([]trigger, error) { return readTriggers(migrations.MySQL, "mysql") })
	sqliteTriggers = sync.OnceValues(func() ([]trigger, error) { return readTriggers(migrations.SQLite, "sqlite") })
)

func readTriggers(fsys fs.FS, dir string) ([]trigger, error) {
	var all []trigger
	for _, name := range changeTriggersMigrations {
		ts, err := readTriggersOf(fsys, dir+"/"+name)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			// A later migration's trigger of a name replaces the earlier.
			if i := slices.IndexFunc(all, func(o trigger) bool { return o.name == t.name }); i >= 0 {
				all[i] = t
			} else {
				all = append(all, t)
			}
		}
	}
	return all, nil
}

func readTriggersOf(fsys fs.FS, path string) ([]trigger, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the counter triggers: %w", err)
	}
	defer f.Close()
	ts, err := parseTriggers(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, nil
}

func parseTriggers(f fs.File) ([]trigger, error) {
	var (
		out         []trigger
		stmt        strings.Builder
		up, inBlock bool
	)
	flush := func() {
		text := strings.TrimSpace(stmt.String())
		stmt.Reset()
		fields := strings.Fields(text)
		if len(fields) > 2 && strings.EqualFold(fields[0], "CREATE") && strings.EqualFold(fields[1], "TRIGGER") {
			out = append(out, trigger{name: fields[2], create: strings.TrimSuffix(text, ";")})
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch strings.TrimSpace(line) {
		case "-- +goose Up":
			up = true
			continue
		case "-- +goose Down":
			up = false
			continue
		case "-- +goose StatementBegin":
			inBlock = true
			continue
		case "-- +goose StatementEnd":
			inBlock = false
			flush()
			continue
		}
		if !up || (!inBlock && strings.HasPrefix(strings.TrimSpace(line), "--")) {
			continue
		}
		stmt.WriteString(line)
		stmt.WriteByte('\n')
		if !inBlock && strings.HasSuffix(strings.TrimSpace(line), ";") {
			flush()
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the counter triggers: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("read the counter triggers: none found")
	}
	return out, nil
}

// VersionSource is what a Watcher polls; *Store implements it.
type VersionSource interface {
	Versions(ctx context.Context) (Versions, error)
}

// CounterKeeper is what a Watcher repairs and audits the counters with
// when its source has it; *Store does.
type CounterKeeper interface {
	RecreateCounters(ctx context.Context, scopes []string) error
	BumpCounters(ctx context.Context, scopes ...string) error
	AuditChanges(ctx context.Context) (ChangeAudit, error)
}

// DefaultAuditEvery is how many polls a Watcher makes between two audits:
// with the default poll of a second, a write no counter saw (in poll mode,
// any plain-SQL write) is seen by every replica within 10 s.
const DefaultAuditEvery = 9

// Watcher polls the change counters and tells the caches of a replica when
// they moved. Caches tag what they hold with the version they read it at
// and compare it with Current, an atomic load, so a call never queries the
// database to learn whether its cache is fresh.
//
// The counters could be switched off without a word: a counter row
// deleted, a trigger dropped, a table truncated (TRUNCATE fires no
// trigger). A poll that finds a row missing recreates it at a new
// generation; every AuditEvery polls (and when Run starts), the watcher
// checks that the triggers exist and that no table changed behind its
// counter.
type Watcher struct {
	src    VersionSource
	every  time.Duration
	logger *slog.Logger
	// AuditEvery is the number of polls between two audits (0: never).
	// Set it before Run.
	AuditEvery int
	// Grants, when set (before Run), is read at each poll as
	// Versions.Grants: a grant changed in tables no trigger follows moves
	// it within one poll, on every replica. A read that fails keeps the
	// last.
	Grants func(ctx context.Context) (int64, error)

	cur      atomic.Pointer[Versions]
	lastRead atomic.Int64 // unix nanoseconds of the last successful read
	problem  atomic.Pointer[string]

	mu        sync.Mutex // serializes polls, so listeners see moves in order
	listens   []func(old, new Versions)
	polled    []func(Versions)
	failing   bool
	lastAudit *ChangeAudit
	// grantsFailing: the last read of Grants failed (logged once).
	grantsFailing bool
}

// NewWatcher returns a watcher polling src every interval once Run is
// called. Until its first poll, Current is the zero Versions.
func NewWatcher(src VersionSource, every time.Duration, logger *slog.Logger) *Watcher {
	if logger == nil {
		logger = slog.Default()
	}
	w := &Watcher{src: src, every: every, logger: logger, AuditEvery: DefaultAuditEvery}
	w.cur.Store(&Versions{})
	return w
}

// Current is the last read versions.
func (w *Watcher) Current() Versions { return *w.cur.Load() }

// LastRead is when the counters were last read successfully (zero: never).
func (w *Watcher) LastRead() time.Time {
	if n := w.lastRead.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// StaleError is what a process serves past the outage grace: the change
// counters have not been read for longer, so what it holds (catalog,
// tokens, credentials) may have been changed or revoked since and cannot
// be checked.
type StaleError struct {
	LastRead time.Time
	Grace    time.Duration
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("the database has not been reachable since %s, longer than the %s grace: the catalog, tokens and credentials held cannot be revalidated, so nothing is served until it is back",
		e.LastRead.UTC().Format(time.RFC3339), e.Grace)
}

// Stale is a *StaleError when the counters were last read longer than
// grace ago, else nil (nil too when grace is not positive: no grace).
func (w *Watcher) Stale(grace time.Duration) error {
	if grace <= 0 {
		return nil
	}
	if last := w.LastRead(); time.Since(last) > grace {
		return &StaleError{LastRead: last, Grace: grace}
	}
	return nil
}

// Problem is what the last audit found wrong with the counters' triggers,
// or nil: while a trigger is missing, changes it would count go unseen
// (/readyz answers not ready).
func (w *Watcher) Problem() error {
	if p := w.problem.Load(); p != nil {
		return errors.New(*p)
	}
	return nil
}

// OnChange registers fn, called after a poll that saw the counters move,
// from the polling goroutine. Register listeners before Run.
func (w *Watcher) OnChange(fn func(old, new Versions)) {
	w.mu.Lock()
	w.listens = append(w.listens, fn)
	w.mu.Unlock()
}

// OnPoll registers fn, called after every poll that read the counters,
// moved or not, after OnChange's listeners, from the polling goroutine: a
// listener whose work on a move could not be done then (a read failed)
// does it again at the next. Register listeners before Run.
func (w *Watcher) OnPoll(fn func(Versions)) {
	w.mu.Lock()
	w.polled = append(w.polled, fn)
	w.mu.Unlock()
}

// Poll reads the counters now. A replica's own writes call it, so that
// they take effect on that replica at once rather than after a poll
// interval. Counter rows found missing are recreated first.
func (w *Watcher) Poll(ctx context.Context) (Versions, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.poll(ctx)
}

func (w *Watcher) poll(ctx context.Context) (Versions, error) {
	v, err := w.read(ctx)
	if err == nil {
		for _, fn := range w.polled {
			fn(v)
		}
	}
	return v, err
}

func (w *Watcher) read(ctx context.Context) (Versions, error) {
	keeper, _ := w.src.(CounterKeeper)
	v, err := w.src.Versions(ctx)
	if missing, ok := errors.AsType[*MissingCountersError](err); ok && keeper != nil {
		if err = keeper.RecreateCounters(ctx, missing.Scopes); err == nil {
			w.logger.Warn("change counter rows were missing (deleted by hand): recreated at a new generation; every replica reloads what it keeps",
				"scopes", missing.Scopes)
			v, err = w.src.Versions(ctx)
		}
	}
	if err != nil {
		if !w.failing {
			w.failing = true
			w.logger.Warn("cannot read the change counters; serving what is in memory", "err", err)
		}
		return w.Current(), err
	}
	if w.failing {
		w.failing = false
		w.logger.Info("change counters readable again")
	}
	w.lastRead.Store(time.Now().UnixNano())
	v.Grants = w.grants(ctx)
	if v == w.Current() {
		return v, nil
	}
	// The counters moved: before caches read at the new values, the
	// tables are fingerprinted at the same instant, so that a write after
	// that which moves no counter is told from the writes that did.
	if keeper != nil && w.AuditEvery > 0 {
		a, err := w.snapshot(ctx, keeper)
		if err == nil {
			a.Versions.Grants = v.Grants
			w.adopt(a)
			return a.Versions, nil
		}
		w.lastAudit = nil // no reference until the next audit
	}
	w.publish(v)
	return v, nil
}

// grants is Versions.Grants now: the last when it cannot be read.
func (w *Watcher) grants(ctx context.Context) int64 {
	last := w.Current().Grants
	if w.Grants == nil {
		return last
	}
	g, err := w.Grants(ctx)
	if err != nil {
		if !w.grantsFailing {
			w.logger.Warn("cannot read the users' grants' digest; a grant changed is seen when its permissions' TTL ends", "err", err)
		}
		w.grantsFailing = true
		return last
	}
	w.grantsFailing = false
	return g
}

func (w *Watcher) publish(v Versions) {
	old := w.Current()
	if v != old {
		w.cur.Store(&v)
		for _, fn := range w.listens {
			fn(old, v)
		}
	}
}

// snapshot reads the counters, the fingerprints and the triggers, and
// reports the triggers found missing.
func (w *Watcher) snapshot(ctx context.Context, keeper CounterKeeper) (ChangeAudit, error) {
	a, err := keeper.AuditChanges(ctx)
	if err != nil {
		return ChangeAudit{}, err
	}
	w.reportTriggers(a.MissingTriggers)
	return a, nil
}

// adopt makes a the reference of the next audit and publishes its
// counters.
func (w *Watcher) adopt(a ChangeAudit) {
	w.lastAudit = &a
	w.publish(a.Versions)
}

// Audit checks that the counter triggers exist (what is missing is logged
// and reported by Problem) and compares each followed table's fingerprint
// with the one taken when its counter last moved: a table that changed
// while its counter did not was written behind the triggers' back, and its
// counter is bumped so that every replica reloads it. A source that cannot
// audit is not audited.
func (w *Watcher) Audit(ctx context.Context) error {
	keeper, ok := w.src.(CounterKeeper)
	if !ok {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	a, err := w.snapshot(ctx, keeper)
	if err != nil {
		return err
	}
	a.Versions.Grants = w.Current().Grants // not the audit's: read by the polls
	var unseen []string
	if prev := w.lastAudit; prev != nil {
		for _, c := range changeScopes {
			if a.Fingerprints[c.name] != prev.Fingerprints[c.name] && *c.field(&a.Versions) == *c.field(&prev.Versions) {
				unseen = append(unseen, c.name)
			}
		}
	}
	if unseen == nil {
		w.adopt(a)
		return nil
	}
	if a.Polled {
		w.logger.Info("tables changed by plain SQL (change detection poll): counters bumped, every replica reloads them", "scopes", unseen)
	} else {
		w.logger.Warn("tables changed without moving their change counter (TRUNCATE TABLE, or a counter trigger missing): bumped, every replica reloads them",
			"scopes", unseen)
	}
	if err := keeper.BumpCounters(ctx, unseen...); err != nil {
		return err
	}
	_, err = w.poll(ctx)
	return err
}

func (w *Watcher) reportTriggers(missing []string) {
	if len(missing) == 0 {
		if w.problem.Swap(nil) != nil {
			w.logger.Info("change counter triggers present again")
		}
		return
	}
	msg := fmt.Sprintf("change counter triggers missing (%s): changes they count go unseen by other replicas; run `blindexec migrate` to recreate them",
		strings.Join(missing, ", "))
	if old := w.problem.Swap(&msg); old == nil || *old != msg {
		w.logger.Error(msg)
	}
}

// Run polls every interval until ctx ends, and audits when it starts and
// every AuditEvery polls.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	// Bounded: a database that stops answering without closing the
	// connection would otherwise hold the poll, and with it LastRead, for
	// as long as the operating system waits.
	timeout := max(w.every, 5*time.Second)
	auditFailing := false
	audit := func() {
		actx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		err := w.Audit(actx)
		if err != nil && !auditFailing {
			w.logger.Warn("cannot audit the change counters", "err", err)
		}
		auditFailing = err != nil
	}
	if w.AuditEvery > 0 {
		audit()
	}
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, timeout)
			w.Poll(pctx)
			cancel()
			if w.AuditEvery > 0 && n%w.AuditEvery == 0 {
				audit()
			}
		}
	}
}
