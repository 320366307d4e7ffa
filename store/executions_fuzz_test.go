package store_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// FuzzAppendSQLiteTime: the records' times, written digit by digit, are
// what AppendFormat with the driver's layout writes for any instant of
// any zone, years below 1000 and above 9999 and before year 0 included.
func FuzzAppendSQLiteTime(f *testing.F) {
	for _, s := range [][3]int64{{0, 0, 0}, {1_796_000_000, 120_000_000, 8 * 3600}, {-62_135_596_800, 1, 0},
		{-62_135_596_801, 0, -3600}, {253_402_300_799, 999_999_999, 0}, {253_402_300_800, 0, 50_000}, {-30_610_224_000, 100, 0}} {
		f.Add(s[0], s[1], s[2])
	}
	const layout = "2006-01-02 15:04:05.999999999-07:00"
	f.Fuzz(func(t *testing.T, sec, nsec, offset int64) {
		tm := time.Unix(sec, nsec).In(time.FixedZone("z", int(offset%(100*3600))))
		if got, want := string(store.AppendSQLiteTime(nil, tm)), string(tm.UTC().AppendFormat(nil, layout)); got != want {
			t.Fatalf("%v written as %q, want %q", tm, got, want)
		}
	})
}

// FuzzInsertExecutionsSQLite writes two records in one multi-row INSERT
// of literals, every text column any bytes (quotes, NUL, backslashes,
// invalid UTF-8), one of them with its nullable columns set and one
// without, to a real SQLite database, and reads back what was written.
func FuzzInsertExecutionsSQLite(f *testing.F) { fuzzInsertExecutions(f, store.DialectSQLite) }

// FuzzInsertExecutionsMySQL is FuzzInsertExecutionsSQLite through the
// hand-built INSERT of placeholders, on MariaDB (skipped without
// BLINDEXEC_TEST_MYSQL_DSN).
func FuzzInsertExecutionsMySQL(f *testing.F) { fuzzInsertExecutions(f, store.DialectMySQL) }

func fuzzInsertExecutions(f *testing.F, dialect string) {
	for _, s := range []string{"", "'", "a'b''c", "\x00", "x\x00'y", "\xff\xfe", "é'", `\'`, `\\`, "'); DROP TABLE sys_ai_execution; --", "?", "$1"} {
		f.Add(s, s+"'", "\\"+s, int64(7), int64(1_796_000_000_123), -5)
	}
	s := testdb.Open(f, dialect)
	ctx := context.Background()
	n := 0
	f.Fuzz(func(t *testing.T, a, b, c string, user, millis int64, status int) {
		n++
		run := fmt.Sprintf("fuzz-%d", n)
		state := b
		if dialect == store.DialectMySQL {
			// MySQL holds valid UTF-8 only, and no more than a column's
			// width (plugin_name 64 characters, status 16): what the
			// engine writes there.
			a, b, c = strings.ToValidUTF8(a, "?"), strings.ToValidUTF8(b, "?"), strings.ToValidUTF8(c, "?")
			a, state = cutRunes(a, 64), cutRunes(b, 16)
		}
		// Valid ids and trace ids: the columns' widths are theirs (a
		// trace id longer than 32 bytes is not stored).
		full := store.Execution{ID: run + "-a", RunID: &run, PluginName: a, UserID: &user, Status: state, HTTPStatus: status,
			LatencyMS: millis, Attempts: status, ErrorClass: c, ErrorMessage: a + b, Confirmation: cutRunes(b, 160), Questions: c,
			CreateTime: time.UnixMilli(millis), TraceID: fmt.Sprintf("%032x", n)}
		empty := store.Execution{ID: run + "-b", RunID: &run, PluginName: cutRunes(c, 64), Status: cutRunes(a, 16), ErrorMessage: b, CreateTime: time.UnixMilli(millis).Add(time.Millisecond)}
		es := []store.Execution{full, empty}
		if err := s.InsertExecutions(ctx, es); err != nil {
			t.Fatalf("InsertExecutions: %v", err)
		}
		got, err := s.ListExecutions(ctx, store.ExecutionFilter{RunID: run})
		if err != nil || len(got) != 2 {
			t.Fatalf("ListExecutions: %v (%d rows)", err, len(got))
		}
		if got[0].ID != es[1].ID {
			got[0], got[1] = got[1], got[0]
		}
		for i := range es { // es holds the records as the columns cut them
			g, w := got[1-i], es[i]
			g.CreateTime, w.CreateTime = g.CreateTime.UTC(), w.CreateTime.UTC()
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("written %+v\nread back %+v", w, g)
			}
		}
	})
}

// cutRunes is s cut to at most n characters.
func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
