package store_test

import (
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/migrations"
	"github.com/blindexec/blindexec/store"
)

// pollReplicas is two replicas of one MySQL database in poll mode,
// whatever the run's mode, migrated by the first.
func pollReplicas(t *testing.T) (a, b *store.Store, wa, wb *store.Watcher) {
	t.Helper()
	dsn := testdb.DSN(t, store.DialectMySQL)
	var ss [2]*store.Store
	var ws [2]*store.Watcher
	for i := range ss {
		ss[i] = testdb.At(t, dsn)
		if err := ss[i].SetChangeDetection(store.ChangePoll); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := ss[i].Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		ws[i] = store.NewWatcher(ss[i], time.Hour, nil)
		if _, err := ws[i].Poll(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return ss[0], ss[1], ws[0], ws[1]
}

// TestPollModeNoTriggers: migrate in poll mode creates no trigger (nor
// a second migrate), and the schema is otherwise whole; an audit reports
// no trigger missing.
func TestPollModeNoTriggers(t *testing.T) {
	a, _, _, wb := pollReplicas(t)
	if err := a.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := a.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM information_schema.triggers WHERE trigger_schema = DATABASE()").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d triggers in a database migrated in poll mode", n)
	}
	if err := a.CheckMigrated(t.Context()); err != nil {
		t.Error(err)
	}
	if err := wb.Audit(t.Context()); err != nil || wb.Problem() != nil {
		t.Errorf("audit in poll mode: err %v, problem %v", err, wb.Problem())
	}
}

// TestPollModeSeesWrites: the engine's own writes move the counters at
// once (no trigger); a plain-SQL UPDATE of a description — no id, no
// count, no update_time moved — and a token revoked by plain SQL move
// nothing until the next audit, which bumps their counters; the
// bookkeeping writes (a token's use) move nothing at all.
func TestPollModeSeesWrites(t *testing.T) {
	a, _, _, wb := pollReplicas(t)
	ctx := t.Context()
	before := wb.Current()
	if err := a.CreatePlugin(ctx, &store.Plugin{Name: "refund", Description: "gives money back"}); err != nil {
		t.Fatal(err)
	}
	tok := &store.Token{UserID: 7, Name: "t", Hash: strings.Repeat("a", 64)}
	if err := a.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	v, err := wb.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.Plugins != before.Plugins+1 || v.Tokens != before.Tokens+1 {
		t.Fatalf("the engine's writes: %+v -> %+v, want plugins and tokens one more", before, v)
	}
	if err := wb.Audit(ctx); err != nil {
		t.Fatal(err)
	}
	// A use of the token: bookkeeping, never a reload.
	if err := a.TouchToken(ctx, tok.ID, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := wb.Audit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := wb.Current(); got != v {
		t.Fatalf("a token's use moved the counters: %+v -> %+v", v, got)
	}

	execSQL(t, a, "UPDATE sys_ai_plugin SET description = 'keeps money' WHERE name = 'refund'")
	execSQL(t, a, "DELETE FROM sys_ai_token WHERE token_id = ?", tok.ID)
	if got, _ := wb.Poll(ctx); got != v {
		t.Fatalf("plain SQL moved the counters without triggers: %+v -> %+v", v, got)
	}
	if err := wb.Audit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := wb.Current(); got.Plugins != v.Plugins+1 || got.Tokens != v.Tokens+1 || got.Credentials != v.Credentials {
		t.Errorf("after the audit: %+v, want plugins and tokens bumped from %+v", got, v)
	}
	if wb.Problem() != nil {
		t.Errorf("Problem() = %v in poll mode", wb.Problem())
	}
}

// TestPollModeOnlyOnMySQL: SQLite keeps its triggers; an unknown mode is
// refused naming the choices.
func TestPollModeOnlyOnMySQL(t *testing.T) {
	st := testdb.Open(t, store.DialectSQLite)
	if err := st.SetChangeDetection(store.ChangePoll); err == nil {
		t.Error("poll mode accepted on SQLite")
	}
	if err := st.SetChangeDetection("sometimes"); err == nil || !strings.Contains(err.Error(), "triggers, poll") {
		t.Errorf("unknown mode: %v", err)
	}
}

// TestStripTriggers: poll mode's migrations are the shipped ones with
// every CREATE TRIGGER and DROP TRIGGER statement taken out, one-line or
// a BEGIN … END block, and nothing else.
func TestStripTriggers(t *testing.T) {
	for _, name := range []string{"00004_changes.sql", "00011_quotas.sql", "00012_connections.sql", "00015_access.sql"} {
		text, err := fs.ReadFile(migrations.MySQL, "mysql/"+name)
		if err != nil {
			t.Fatal(err)
		}
		got := store.StripTriggers(string(text))
		if strings.Contains(strings.ToUpper(got), "TRIGGER ") {
			t.Errorf("%s: a trigger statement left:\n%s", name, got)
		}
		for _, kept := range []string{"-- +goose Up", "-- +goose Down", "CREATE TABLE"} {
			if strings.Count(got, kept) != strings.Count(string(text), kept) {
				t.Errorf("%s: %q not kept", name, kept)
			}
		}
		if strings.Count(got, "-- +goose StatementBegin") != strings.Count(got, "-- +goose StatementEnd") {
			t.Errorf("%s: unbalanced statement blocks", name)
		}
	}
}

// TestTriggerMigrationsListed: every migration that creates a trigger is
// in changeTriggersMigrations, so poll mode strips it and a replica's
// self-check knows it (00021's was missed once: poll mode kept it).
func TestTriggerMigrationsListed(t *testing.T) {
	for _, fsys := range []struct {
		dir string
		fs  fs.FS
	}{{"mysql", migrations.MySQL}, {"sqlite", migrations.SQLite}} {
		files, err := fs.Glob(fsys.fs, fsys.dir+"/*.sql")
		if err != nil || len(files) == 0 {
			t.Fatalf("%s migrations: %v", fsys.dir, err)
		}
		for _, f := range files {
			text, err := fs.ReadFile(fsys.fs, f)
			if err != nil {
				t.Fatal(err)
			}
			name := path.Base(f)
			if strings.Contains(strings.ToUpper(string(text)), "CREATE TRIGGER") && !slices.Contains(store.ChangeTriggersMigrations, name) {
				t.Errorf("%s creates a trigger and is not in changeTriggersMigrations", f)
			}
		}
	}
}
