package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func TestExecutions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		user1, user2 := int64(1), int64(2)
		run := "11111111-2222-3333-4444-555555555555"
		at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
		es := []store.Execution{
			{ID: "e1", PluginName: "weather", UserID: &user1, Status: store.ExecOK, HTTPStatus: 200, LatencyMS: 12, Attempts: 1, CreateTime: at(0)},
			{ID: "e2", PluginName: "weather", UserID: &user2, Status: store.ExecError, HTTPStatus: 503, Attempts: 3,
				ErrorClass: "upstream_5xx", ErrorMessage: "bad gateway", CreateTime: at(500)},
			{ID: "e3", PluginName: "search", UserID: &user1, RunID: &run, Status: store.ExecOK, CreateTime: at(1500)},
			// 1.5s and 1.5004s: sub-millisecond precision is dropped.
			{ID: "e4", PluginName: "search", RunID: &run, Status: store.ExecRefused, CreateTime: at(2000).Add(400 * time.Microsecond)},
		}
		if err := s.InsertExecutions(ctx, es); err != nil {
			t.Fatalf("InsertExecutions: %v", err)
		}
		// A repeat (a spool replay) is skipped, the stored row kept, and
		// the new rows of the same batch written.
		again := []store.Execution{
			{ID: "e1", PluginName: "other", Status: store.ExecError, CreateTime: at(9000)},
			{ID: "e5", PluginName: "weather", Status: store.ExecOK, CreateTime: at(-1000)},
		}
		if err := s.InsertExecutions(ctx, again); err != nil {
			t.Fatalf("InsertExecutions with a repeated id: %v", err)
		}

		tests := []struct {
			name   string
			filter store.ExecutionFilter
			want   []string
		}{
			{"all, newest first", store.ExecutionFilter{}, []string{"e4", "e3", "e2", "e1", "e5"}},
			{"plugin", store.ExecutionFilter{PluginName: "weather"}, []string{"e2", "e1", "e5"}},
			{"user", store.ExecutionFilter{UserID: &user1}, []string{"e3", "e1"}},
			{"tools (a token with fixed perms)", store.ExecutionFilter{Tools: []string{"search", "nope"}, Limit: 1}, []string{"e4"}},
			{"tools and plugin", store.ExecutionFilter{Tools: []string{"search"}, PluginName: "weather"}, nil},
			{"no tool", store.ExecutionFilter{Tools: []string{}}, nil},
			{"run", store.ExecutionFilter{RunID: run}, []string{"e4", "e3"}},
			{"since is inclusive", store.ExecutionFilter{Since: at(500)}, []string{"e4", "e3", "e2"}},
			{"until is exclusive", store.ExecutionFilter{Until: at(1500)}, []string{"e2", "e1", "e5"}},
			{"window in another zone", store.ExecutionFilter{
				Since: at(1).In(time.FixedZone("X", -5*3600)), Until: at(1501).In(time.FixedZone("Y", 9*3600))},
				[]string{"e3", "e2"}},
			{"limit", store.ExecutionFilter{Limit: 2}, []string{"e4", "e3"}},
			{"no match", store.ExecutionFilter{PluginName: "nope"}, nil},
			{"a repeat changed nothing", store.ExecutionFilter{PluginName: "other"}, nil},
		}
		for _, tt := range tests {
			got, err := s.ListExecutions(ctx, tt.filter)
			if err != nil {
				t.Fatalf("%s: ListExecutions: %v", tt.name, err)
			}
			var ids []string
			for _, e := range got {
				ids = append(ids, e.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("%s: ListExecutions = %v, want %v", tt.name, ids, tt.want)
			}
		}

		got, _ := s.ListExecutions(ctx, store.ExecutionFilter{RunID: run})
		if !got[0].CreateTime.Equal(at(2000)) || got[0].UserID != nil || got[0].Status != store.ExecRefused {
			t.Errorf("e4 read back as %+v, want time %v and no user", got[0], at(2000))
		}
		got, _ = s.ListExecutions(ctx, store.ExecutionFilter{PluginName: "weather"})
		if e := got[0]; e.HTTPStatus != 503 || e.Attempts != 3 || e.ErrorClass != "upstream_5xx" || e.ErrorMessage != "bad gateway" || *e.UserID != 2 {
			t.Errorf("e2 read back as %+v", e)
		}
	})
}

func TestExecutionDefaults(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		long := strings.Repeat("é", 1500) // multi-byte, longer than the column
		es := make([]store.Execution, 1100)
		for i := range es {
			es[i] = store.Execution{PluginName: "p", Status: store.ExecError, ErrorMessage: long}
		}
		before := time.Now().Add(-time.Millisecond)
		if err := s.InsertExecutions(ctx, es); err != nil {
			t.Fatalf("InsertExecutions: %v", err)
		}
		if es[0].ID == "" || es[0].ID == es[1].ID || es[0].CreateTime.Before(before) {
			t.Errorf("defaults not filled: %+v", es[0])
		}

		tests := []struct {
			limit, want int
		}{{0, store.DefaultExecutionLimit}, {-1, store.DefaultExecutionLimit}, {7, 7}, {5000, store.MaxExecutionLimit}}
		for _, tt := range tests {
			got, err := s.ListExecutions(ctx, store.ExecutionFilter{Limit: tt.limit})
			if err != nil {
				t.Fatalf("ListExecutions: %v", err)
			}
			if len(got) != tt.want {
				t.Errorf("Limit %d: got %d rows, want %d", tt.limit, len(got), tt.want)
			}
		}
		got, _ := s.ListExecutions(ctx, store.ExecutionFilter{Limit: 1})
		if msg := got[0].ErrorMessage; utf8.RuneCountInString(msg) != 1000 || !utf8.ValidString(msg) {
			t.Errorf("stored message has %d runes (valid %v), want 1000", utf8.RuneCountInString(msg), utf8.ValidString(msg))
		}
	})
}

// TestExecutionTextRoundTrip stores texts that an SQL literal must carry
// exactly (SQLite writes records as literals) and reads them back.
func TestExecutionTextRoundTrip(t *testing.T) {
	texts := []string{
		"it's", "''", "'); DROP TABLE sys_ai_execution; --", `back\slash\'`, "nul\x00inside", "\x00",
		"tab\tnewline\ncr\r", "下游返回 502 😀", "", "?", "$1 :name @x",
	}
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		run := "run'1"
		es := make([]store.Execution, len(texts))
		for i, text := range texts {
			es[i] = store.Execution{ID: fmt.Sprintf("id-%02d", i), PluginName: "p'" + text, RunID: &run, Status: "error",
				ErrorClass: "c'", ErrorMessage: text, Questions: `[{"message":"` + text + `"}]`}
		}
		if err := s.InsertExecutions(ctx, es); err != nil {
			t.Fatalf("InsertExecutions: %v", err)
		}
		got, err := s.ListExecutions(ctx, store.ExecutionFilter{RunID: run})
		if err != nil {
			t.Fatalf("ListExecutions: %v", err)
		}
		if len(got) != len(texts) {
			t.Fatalf("read back %d rows, want %d", len(got), len(texts))
		}
		for _, e := range got {
			var i int
			fmt.Sscanf(e.ID, "id-%d", &i)
			if e.ErrorMessage != texts[i] || e.PluginName != "p'"+texts[i] || e.ErrorClass != "c'" || *e.RunID != run ||
				e.Questions != `[{"message":"`+texts[i]+`"}]` {
				t.Errorf("%s read back as message %q, plugin %q, class %q; want %q", e.ID, e.ErrorMessage, e.PluginName, e.ErrorClass, texts[i])
			}
		}
	})
}

// FuzzExecutionText checks that any message survives the SQLite literal
// the records are written with: stored and read back byte for byte, and
// never an error (an unescaped quote would be a syntax error or worse).
func FuzzExecutionText(f *testing.F) {
	for _, s := range []string{"", "'", "a'b''c", "\x00", "x\x00'y", "\xff\xfe", "é'"} {
		f.Add(s)
	}
	s := testdb.Open(f, store.DialectSQLite)
	ctx := context.Background()
	n := 0
	f.Fuzz(func(t *testing.T, msg string) {
		n++
		id := fmt.Sprintf("fuzz-%d", n)
		es := []store.Execution{{ID: id, PluginName: "fuzz", RunID: &id, Status: "error", ErrorMessage: msg}}
		if err := s.InsertExecutions(ctx, es); err != nil {
			t.Fatalf("InsertExecutions(%q): %v", msg, err)
		}
		got, err := s.ListExecutions(ctx, store.ExecutionFilter{RunID: id})
		if err != nil || len(got) != 1 {
			t.Fatalf("ListExecutions: %v (%d rows)", err, len(got))
		}
		if got[0].ErrorMessage != es[0].ErrorMessage { // es holds the message as truncated for the column
			t.Fatalf("message %q read back as %q", es[0].ErrorMessage, got[0].ErrorMessage)
		}
	})
}

// TestExecutionTraceID: a traced call's record holds its trace id, which
// lists it; an untraced one's is NULL, on every database.
func TestExecutionTraceID(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
		if err := s.InsertExecutions(ctx, []store.Execution{
			{PluginName: "p", Status: store.ExecOK, TraceID: trace},
			{PluginName: "p", Status: store.ExecOK},
		}); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListExecutions(ctx, store.ExecutionFilter{TraceID: trace})
		if err != nil || len(got) != 1 || got[0].TraceID != trace {
			t.Fatalf("the trace's executions: %+v, %v", got, err)
		}
		var nulls int
		if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM sys_ai_execution WHERE trace_id IS NULL").Scan(&nulls); err != nil || nulls != 1 {
			t.Errorf("untraced records with a NULL trace_id: %d (%v), want 1", nulls, err)
		}
	})
}

// TestExecutionEmptyColumns pins what an empty field of a record is
// stored as on each database (NULL or ”), as the first writers (gorm on
// MySQL, literals on SQLite) stored it, so that a faster way of writing
// records keeps what readers of the table see.
func TestExecutionEmptyColumns(t *testing.T) {
	want := map[string]string{
		store.DialectSQLite: "run_id NULL, user_id NULL, error_class '', error_message '', confirmation NULL, questions NULL, trace_id NULL",
		store.DialectMySQL:  "run_id NULL, user_id NULL, error_class '', error_message '', confirmation '', questions NULL, trace_id NULL",
	}
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		run, uid := "run-1", int64(7)
		full := store.Execution{ID: "full", RunID: &run, PluginName: "p", UserID: &uid, Status: "ok", ErrorClass: "c",
			ErrorMessage: "m", Confirmation: "approved", Questions: "[]", TraceID: "0123456789abcdef0123456789abcdef"}
		// Alone, and in a batch whose other row has every column.
		for _, batch := range [][]store.Execution{{{ID: "empty", PluginName: "p", Status: "ok"}},
			{{ID: "beside", PluginName: "p", Status: "ok"}, full}} {
			if err := s.InsertExecutions(ctx, batch); err != nil {
				t.Fatalf("InsertExecutions: %v", err)
			}
		}
		for id, want := range map[string]string{"empty": want[s.Dialect()], "beside": want[s.Dialect()],
			"full": "run_id 'run-1', user_id '7', error_class 'c', error_message 'm', confirmation 'approved', questions '[]', trace_id '0123456789abcdef0123456789abcdef'"} {
			var got []string
			for _, col := range []string{"run_id", "user_id", "error_class", "error_message", "confirmation", "questions", "trace_id"} {
				var v sql.NullString
				if err := s.DB().QueryRowContext(ctx, "SELECT "+col+" FROM sys_ai_execution WHERE execution_id = ?", id).Scan(&v); err != nil {
					t.Fatalf("read %s: %v", col, err)
				}
				if !v.Valid {
					got = append(got, col+" NULL")
				} else {
					got = append(got, col+" '"+v.String+"'")
				}
			}
			if g := strings.Join(got, ", "); g != want {
				t.Errorf("%s stored as\n%s\nwant\n%s", id, g, want)
			}
		}
	})
}

// TestAppendSQLiteTime: the records' times are written as the SQLite
// driver writes a bound time.Time (AppendFormat with its layout), which
// ListExecutions compares them with, for any time of any zone.
func TestAppendSQLiteTime(t *testing.T) {
	const layout = "2006-01-02 15:04:05.999999999-07:00"
	east := time.FixedZone("east", 8*3600)
	times := []time.Time{
		{},
		time.Date(2026, 11, 29, 15, 4, 5, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 120_000_000, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999_000_000, east),
		time.Date(1999, 2, 3, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(), time.Now().Truncate(time.Millisecond).In(east),
	}
	for i := range 1000 {
		times = append(times, time.Unix(0, int64(i)*7_919_000_013_337_113))
	}
	for _, tm := range times {
		if got, want := string(store.AppendSQLiteTime(nil, tm)), tm.UTC().Format(layout); got != want {
			t.Errorf("%v written as %q, want %q", tm, got, want)
		}
	}
}

// TestExecutionQueryPlans: every query that reads the execution log on
// SQLite is answered through the index made for it, the partial indexes
// of run_id and trace_id (migration 00029, rows that have one) included.
func TestExecutionQueryPlans(t *testing.T) {
	s := testdb.Open(t, store.DialectSQLite)
	ctx := context.Background()
	uid := int64(1)
	plan := func(q string, args []any) string {
		rows, err := s.DB().QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("EXPLAIN QUERY PLAN %s: %v", q, err)
		}
		defer rows.Close()
		var steps []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			steps = append(steps, detail)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(steps, "; ")
	}
	for _, tt := range []struct {
		name   string
		filter store.ExecutionFilter
		index  string
	}{
		{"plugin", store.ExecutionFilter{PluginName: "p"}, "idx_sys_ai_execution_plugin_time (plugin_name=?)"},
		{"tools", store.ExecutionFilter{Tools: []string{"p", "q"}}, "idx_sys_ai_execution_plugin_time (plugin_name=?)"},
		{"user", store.ExecutionFilter{UserID: &uid}, "idx_sys_ai_execution_user_time (user_id=?)"},
		{"run", store.ExecutionFilter{RunID: "r"}, "idx_sys_ai_execution_run (run_id=?)"},
		{"trace", store.ExecutionFilter{TraceID: "0123456789abcdef0123456789abcdef"}, "idx_sys_ai_execution_trace (trace_id=?)"},
		{"run and a window", store.ExecutionFilter{RunID: "r", Since: time.Unix(0, 0), Until: time.Now()}, "idx_sys_ai_execution_run (run_id=?)"},
	} {
		if got := plan(s.ListExecutionsQuery(tt.filter)); !strings.Contains(got, "INDEX "+tt.index) {
			t.Errorf("%s: plan %q, want it to use %s", tt.name, got, tt.index)
		}
	}
	if got := plan(store.LastCallsQuery([]string{"p", "q"})); strings.Count(got, "INDEX idx_sys_ai_execution_plugin_time (plugin_name=?)") != 2 {
		t.Errorf("LastCalls: plan %q, want a lookup of each name in idx_sys_ai_execution_plugin_time", got)
	}
}

// TestExecutionBatchForms: on SQLite a batch's INSERT writes a column
// the same in every row once (as a constant of INSERT … SELECT) or not at
// all (NULL, its default); each row is stored as it is when every column
// is written in every row (beside a row unlike it in all), to the value's
// type and bytes.
func TestExecutionBatchForms(t *testing.T) {
	s := testdb.Open(t, store.DialectSQLite)
	ctx := context.Background()
	run, uid := "run-1", int64(7)
	at := time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	alike := []store.Execution{
		{PluginName: "p", UserID: &uid, Status: "ok", HTTPStatus: 200, LatencyMS: 3, Attempts: 1, CreateTime: at},
		{PluginName: "p", Status: "error", HTTPStatus: 502, Attempts: 2, ErrorClass: "c", ErrorMessage: "it's", CreateTime: at},
		{RunID: &run, PluginName: "p", UserID: &uid, Status: "ok", HTTPStatus: 200, LatencyMS: 3, Attempts: 1,
			Confirmation: "approved", Questions: "[]", CreateTime: at, TraceID: "0123456789abcdef0123456789abcdef"},
	}
	other, uid2 := "run-2", int64(8)
	unlike := store.Execution{ID: "unlike", RunID: &other, PluginName: "q", UserID: &uid2, Status: "refused", HTTPStatus: 404,
		LatencyMS: 9, Attempts: 5, ErrorClass: "x", ErrorMessage: "y", Confirmation: "denied", Questions: "{}",
		CreateTime: at.Add(time.Second), TraceID: "fedcba9876543210fedcba9876543210"}
	// Each changes one column of a row: a batch of the row and the row so
	// changed writes every other column once.
	changes := []func(e *store.Execution){
		func(*store.Execution) {}, // every column the same
		func(e *store.Execution) { e.PluginName = "p2" },
		func(e *store.Execution) { e.UserID = nil },
		func(e *store.Execution) { e.Status = "refused" },
		func(e *store.Execution) { e.HTTPStatus = 0 },
		func(e *store.Execution) { e.LatencyMS++ },
		func(e *store.Execution) { e.Attempts++ },
		func(e *store.Execution) { e.ErrorClass = "" },
		func(e *store.Execution) { e.ErrorMessage += "!" },
		func(e *store.Execution) { e.RunID = &other },
		func(e *store.Execution) { e.Confirmation = "" },
		func(e *store.Execution) { e.Questions = "[1]" },
		func(e *store.Execution) { e.CreateTime = e.CreateTime.Add(time.Millisecond) },
		func(e *store.Execution) { e.TraceID = "" },
	}
	stored := func(id string) string {
		var row string
		err := s.DB().QueryRowContext(ctx, `SELECT concat_ws(' | ', quote(run_id), typeof(run_id), quote(plugin_name), typeof(plugin_name),
			quote(user_id), typeof(user_id), quote(status), quote(http_status), typeof(http_status), quote(latency_ms), typeof(latency_ms),
			quote(attempts), typeof(attempts), quote(error_class), typeof(error_class), quote(error_message), typeof(error_message),
			quote(confirmation), typeof(confirmation), quote(questions), typeof(questions), quote(create_time), typeof(create_time),
			quote(trace_id), typeof(trace_id)) FROM sys_ai_execution WHERE execution_id = ?`, id).Scan(&row)
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		return row
	}
	insert := func(batch ...store.Execution) {
		if err := s.InsertExecutions(ctx, batch); err != nil {
			t.Fatalf("InsertExecutions: %v", err)
		}
	}
	for i, e := range alike {
		for j, change := range changes {
			pair := []store.Execution{e, e}
			change(&pair[1])
			for k := range pair {
				id := fmt.Sprintf("%d-%d-%d", i, j, k)
				pair[k].ID = id + "-in-pair"
				beside := pair[k]
				beside.ID = id + "-beside-unlike"
				insert(beside, unlike)
			}
			insert(pair...)
			for k := range pair {
				id := fmt.Sprintf("%d-%d-%d", i, j, k)
				if got, want := stored(id+"-in-pair"), stored(id+"-beside-unlike"); got != want {
					t.Errorf("row %d, change %d, record %d stored as\n%s\nin its pair, and as\n%s\nbeside an unlike row", i, j, k, got, want)
				}
			}
		}
	}
}

// TestExecutionLargeBatch: a batch of more than one statement's rows
// (500), alike but for their ids and latencies, is stored whole, each row
// with its own values.
func TestExecutionLargeBatch(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		uid := int64(3)
		at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		es := make([]store.Execution, 1001)
		for i := range es {
			es[i] = store.Execution{ID: fmt.Sprintf("e%04d", i), PluginName: "p", UserID: &uid, Status: store.ExecOK,
				HTTPStatus: 200, LatencyMS: int64(i), Attempts: 1, CreateTime: at.Add(time.Duration(i) * time.Millisecond)}
		}
		if err := s.InsertExecutions(ctx, es); err != nil {
			t.Fatalf("InsertExecutions: %v", err)
		}
		got, err := s.ListExecutions(ctx, store.ExecutionFilter{Limit: store.MaxExecutionLimit})
		if err != nil {
			t.Fatal(err)
		}
		var n, sum int64
		if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*), SUM(latency_ms) FROM sys_ai_execution WHERE plugin_name = 'p' AND user_id = 3 AND http_status = 200 AND attempts = 1").Scan(&n, &sum); err != nil {
			t.Fatal(err)
		}
		if n != 1001 || sum != 1000*1001/2 || len(got) != store.MaxExecutionLimit || got[0].ID != "e1000" || got[0].LatencyMS != 1000 ||
			!got[0].CreateTime.Equal(at.Add(1000*time.Millisecond)) {
			t.Errorf("stored %d rows (latencies summing to %d), newest %+v; want 1001, %d, e1000", n, sum, got[0], 1000*1001/2)
		}
	})
}
