package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/store"
)

// FuzzDSNErrors: the password of a DSN never reaches a message about it,
// whatever the DSN holds around it: neither the redacted form Open quotes
// nor the driver's own refusal of a malformed DSN.
func FuzzDSNErrors(f *testing.F) {
	f.Add("root", "pa55word", "tcp(127.0.0.1:3306)/test")
	f.Add("u", "p@ss/w?rd", "tcp(db)/x?parseTime=maybe")
	f.Add("u", "s3cr3t!", "tcp(db:3306)")
	f.Add("", "only-a-password", "/db?tls=custom")
	f.Add("u", "pw:with:colons", "unix(/tmp/s)/db?loc=Nowhere/Land")
	f.Fuzz(func(t *testing.T, user, password, rest string) {
		if len(password) < 4 || strings.Contains(user, password) || strings.Contains(rest, password) {
			t.Skip() // the password must be the DSN's only copy of it
		}
		dsn := user + ":" + password + "@" + rest
		if got := store.RedactDSN(dsn); strings.Contains(got, password) {
			t.Fatalf("RedactDSN(%q) = %q", dsn, got)
		}
		_, pool, _, err := store.MySQLDialector(dsn)
		if err != nil && strings.Contains(err.Error(), password) {
			t.Fatalf("the refusal of %q quotes its password: %v", dsn, err)
		}
		if pool != nil {
			pool.Close()
		}
	})
}

// FuzzParseCursor: a page cursor a client sends is a cursor this store
// hands out or ErrBadCursor; one read is written back to a cursor read
// the same, and every cursor handed out reads as itself.
func FuzzParseCursor(f *testing.F) {
	f.Add(store.CursorString(1_796_000_000_000, "0193b1c2-aaaa-7bbb-8ccc-000000000001"), int64(5), "id")
	f.Add("", int64(-1), "x.y")
	f.Add("MTIzLg", int64(0), "")
	f.Add("KzEyLmE", int64(1<<62), strings.Repeat("i", 65))
	f.Fuzz(func(t *testing.T, s string, ms int64, id string) {
		gotMS, gotID, err := store.ParseCursor(s)
		switch {
		case err != nil && !errors.Is(err, store.ErrBadCursor):
			t.Fatalf("ParseCursor(%q): %v", s, err)
		case err == nil && s != "":
			if gotID == "" || len(gotID) > 64 {
				t.Fatalf("ParseCursor(%q) took id %q", s, gotID)
			}
			if ms2, id2, err := store.ParseCursor(store.CursorString(gotMS, gotID)); err != nil || ms2 != gotMS || id2 != gotID {
				t.Fatalf("%q read as (%d, %q), written back reads (%d, %q, %v)", s, gotMS, gotID, ms2, id2, err)
			}
		}
		if id == "" || len(id) > 64 {
			return
		}
		if ms2, id2, err := store.ParseCursor(store.CursorString(ms, id)); err != nil || ms2 != ms || id2 != id {
			t.Fatalf("cursor (%d, %q) reads (%d, %q, %v)", ms, id, ms2, id2, err)
		}
	})
}
