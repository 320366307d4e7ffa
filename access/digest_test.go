package access

import (
	"context"
	"database/sql"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
)

// TestGrantsDigestMoves: the digest of the grants' tables
// (Fingerprinter) moves with a change of each column RuoYi's statements
// read and stays for a column they do not, on both databases (small76:
// SQLite has CRC32 only as the store registers it; before, the digest
// failed there), and with yudao's on MariaDB.
func TestGrantsDigestMoves(t *testing.T) {
	ruoyi := []string{
		"UPDATE sys_user SET status = '1' WHERE user_id = 2",
		"UPDATE sys_user_role SET role_id = 1 WHERE user_id = 2",
		"UPDATE sys_role SET del_flag = '2' WHERE role_id = 2",
		"DELETE FROM sys_role_menu WHERE role_id = 2",
		"UPDATE sys_menu SET perms = 'system:user:add' WHERE perms = 'system:user:list'",
	}
	testdb.EachKind(t, func(t *testing.T, kind string) {
		st, _ := testdb.RuoYi(t, kind, "testdata/ruoyi-vue/ry_20260417.sql")
		digestMoves(t, st.DB(), RuoYi{DB: st.DB()}, "UPDATE sys_user SET user_name = 'ry2' WHERE user_id = 2", ruoyi)
	})
	t.Run("yudao", func(t *testing.T) {
		st := testdb.Script(t, "testdata/ruoyi-vue-pro/ruoyi-vue-pro.sql.gz")
		digestMoves(t, st.DB(), Yudao{DB: st.DB()}, "UPDATE system_users SET nickname = 'x' WHERE id = 104",
			[]string{"UPDATE system_user_role SET deleted = 1 WHERE user_id = 104", "UPDATE system_menu SET permission = 'x:y' WHERE id = 1"})
	})
}

// digestMoves fails t unless f's digest stays through same and moves
// through each of moves.
func digestMoves(t *testing.T, db *sql.DB, f Fingerprinter, same string, moves []string) {
	t.Helper()
	ctx := context.Background()
	read := func() int64 {
		t.Helper()
		d, err := f.Fingerprint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	last := read()
	exec(t, db, same)
	if d := read(); d != last {
		t.Errorf("%s moved the digest", same)
	}
	for _, q := range moves {
		exec(t, db, q)
		if d := read(); d == last {
			t.Errorf("%s did not move the digest", q)
		} else {
			last = d
		}
	}
}
