package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func TestCheckKeys(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		keyA, keyB := newKeyB64(t), newKeyB64(t)
		ring := func(master, old string) *auth.Keyring {
			kr, err := auth.ParseKeyring(master, old)
			if err != nil {
				t.Fatal(err)
			}
			return kr
		}
		mismatch := func(err error, want string) {
			t.Helper()
			var km *auth.KeyMismatchError
			if !errors.As(err, &km) || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want a KeyMismatchError saying %q", err, want)
			}
		}
		// No master key: nothing to check.
		if err := auth.CheckKeys(ctx, s, ring("", ""), true); err != nil {
			t.Fatal(err)
		}
		// A new database takes the first key; without record nothing is kept.
		if err := auth.CheckKeys(ctx, s, ring(keyB, ""), false); err != nil {
			t.Fatal(err)
		}
		if rows, _ := s.VaultKeys(ctx); len(rows) != 0 {
			t.Fatalf("a check without record wrote %v", rows)
		}
		if err := auth.CheckKeys(ctx, s, ring(keyA, ""), true); err != nil {
			t.Fatal(err)
		}
		a := ring(keyA, "")
		if err := auth.CheckKeys(ctx, s, a, true); err != nil {
			t.Fatalf("the same key again: %v", err)
		}
		// Another key is refused even before any credential is stored: the
		// quickstart's blocks each generating a key.
		mismatch(auth.CheckKeys(ctx, s, ring(keyB, ""), true), "the database was set up with key id "+a.MasterKeyID())
		// A credential under A; B with A kept as old passes, and is recorded.
		if err := auth.NewCredentialService(s, a).Set(ctx, 7, "K", "value-1234", "test"); err != nil {
			t.Fatal(err)
		}
		if err := auth.CheckKeys(ctx, s, ring(keyB, keyA), true); err != nil {
			t.Fatalf("new key with the old one kept: %v", err)
		}
		// B alone now matches a check but cannot read the credential under A.
		mismatch(auth.CheckKeys(ctx, s, ring(keyB, ""), false), "1 under key id "+a.MasterKeyID())
		// A check that its key cannot open (same kid, other key) is refused.
		if _, err := s.DB().ExecContext(ctx, "UPDATE sys_ai_vault_key SET check_value = ? WHERE key_id = ?",
			"v1:"+a.MasterKeyID()+":AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", a.MasterKeyID()); err != nil {
			t.Fatal(err)
		}
		mismatch(auth.CheckKeys(ctx, s, a, false), "does not open the database's check")
	})
}
