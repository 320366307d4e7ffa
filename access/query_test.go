package access

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestQuery: the operator's SELECT reads one column of strings for the
// user, on both databases; a query that would write, outlive its timeout
// or return too many rows refuses rather than grants.
func TestQuery(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		exec(t, db, "CREATE TABLE my_perms (user_id BIGINT, perm VARCHAR(100))",
			"INSERT INTO my_perms VALUES (7, 'system:user:list'), (7, ' system:user:add '), (7, NULL), (7, ''), (8, '*:*:*'), (9, 'a:1'), (9, 'a:2'), (9, 'a:3'), (9, 'a:4'), (9, 'a:5')")
		q := Query{DB: db, SQL: "SELECT perm FROM my_perms WHERE user_id = ?", MaxRows: 4}
		for _, tt := range []struct {
			user int64
			want []string
			err  string
		}{
			{7, []string{"system:user:add", "system:user:list"}, ""},
			{8, []string{"*:*:*"}, ""},
			{10, nil, ""},
			{9, nil, "more than 4 rows"},
		} {
			got, err := q.Held(t.Context(), tt.user)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("user %d: %v, want an error saying %q", tt.user, err, tt.err)
				}
				continue
			}
			if err != nil || !slices.Equal(sorted(got), tt.want) {
				t.Errorf("user %d holds %v (%v), want %v", tt.user, sorted(got), err, tt.want)
			}
		}
		if st.Dialect() != store.DialectMySQL {
			return
		}
		// A SELECT may call a function that writes: the read-only
		// transaction refuses it.
		exec(t, db, `CREATE FUNCTION grant_all(u BIGINT) RETURNS VARCHAR(10) MODIFIES SQL DATA
BEGIN
  INSERT INTO my_perms VALUES (u, '*:*:*');
  RETURN 'x:y';
END`)
		w := Query{DB: db, SQL: "SELECT grant_all(?)"}
		if _, err := w.Held(t.Context(), 10); err == nil {
			t.Error("a query that writes ran")
		}
		var n int
		if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM my_perms WHERE user_id = 10").Scan(&n); err != nil || n != 0 {
			t.Errorf("the query wrote %d rows (%v)", n, err)
		}
		slow := Query{DB: db, SQL: "SELECT 'system:user:list' FROM (SELECT SLEEP(5) AS s) w WHERE ? > 0", Timeout: 200 * time.Millisecond}
		start := time.Now()
		_, err := slow.Held(t.Context(), 7)
		if err == nil || time.Since(start) > 3*time.Second {
			t.Errorf("a slow query: %v after %v, want an error within the timeout", err, time.Since(start))
		}
		c := &Checker{Source: slow, Name: SourceQuery}
		if err := c.Allowed(t.Context(), Subject{User: 7}, needs("system:user:list")); !errors.As(err, new(*UnavailableError)) {
			t.Errorf("a query past its timeout: %v, want an UnavailableError", err)
		}
	})
}

// TestDigestQueryFollowsGrants (small76): under the operator's query a
// grant changed was kept until the TTL's end, its tables unknown to the
// engine. With BLINDEXEC_PERMISSIONS_DIGEST_QUERY the watcher reads the
// operator's digest at each poll and the cache keeps a user's strings only
// while it stays, on both databases; a digest that fails keeps the last.
func TestDigestQueryFollowsGrants(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		exec(t, db, "CREATE TABLE my_perms (user_id BIGINT, perm VARCHAR(100))",
			"CREATE TABLE my_perms_version (version BIGINT)",
			"INSERT INTO my_perms VALUES (7, 'system:user:list')", "INSERT INTO my_perms_version VALUES (1)")
		c, err := New(db, Settings{Source: SourceQuery, Query: "SELECT perm FROM my_perms WHERE user_id = ?",
			DigestQuery: "SELECT version FROM my_perms_version", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		w := store.NewWatcher(st, time.Hour, slog.New(slog.DiscardHandler))
		digest, ok := c.FollowGrants(func() int64 { return w.Current().Grants })
		if !ok {
			t.Fatal("the query source with a digest query offers no digest")
		}
		w.Grants = digest
		poll := func() {
			if _, err := w.Poll(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		poll()
		holds := func() bool {
			held, err := c.Source.Held(t.Context(), 7)
			if err != nil {
				t.Fatal(err)
			}
			_, ok := held["system:user:list"]
			return ok
		}
		if !holds() {
			t.Fatal("user 7 does not hold system:user:list")
		}
		exec(t, db, "DELETE FROM my_perms WHERE user_id = 7")
		poll()
		if !holds() {
			t.Fatal("kept strings read again though the digest stayed (the TTL is an hour)")
		}
		exec(t, db, "UPDATE my_perms_version SET version = 2")
		poll()
		if holds() {
			t.Error("user 7 still holds system:user:list after the digest moved")
		}
	})
}
