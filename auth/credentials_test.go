package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// rawValue reads the credential column with plain SQL, bypassing the store.
func rawValue(t *testing.T, s *store.Store, userID int64, key string) (value, keyID string) {
	t.Helper()
	err := s.DB().QueryRowContext(context.Background(),
		"SELECT credential_value, key_id FROM sys_user_credential WHERE user_id = ? AND credential_key = ?",
		userID, key).Scan(&value, &keyID)
	if err != nil {
		t.Fatalf("raw read of credential %d/%s: %v", userID, key, err)
	}
	return value, keyID
}

func TestCredentialService(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		keyB64 := newKeyB64(t)
		svc := auth.NewCredentialService(s, mustKeyring(t, keyB64, ""))
		secrets := map[string]string{
			"openai_api_key": "sk-proj-abcdefghijklmnop-WXYZ",
			"pin":            "1234",
			"basic.pass-1":   "pässwörd-ünïcode-秘密",
		}
		for k, v := range secrets {
			if err := svc.Set(ctx, 42, k, v, "admin"); err != nil {
				t.Fatalf("Set(%s): %v", k, err)
			}
		}
		for k, v := range secrets {
			raw, kid := rawValue(t, s, 42, k)
			if strings.Contains(raw, v) || !strings.HasPrefix(raw, "v1:"+kidOf(t, keyB64)+":") || kid != kidOf(t, keyB64) {
				t.Errorf("column for %s holds %q (key_id %q): want v1:%s:<ciphertext> without the plaintext", k, raw, kid, kidOf(t, keyB64))
			}
		}

		got, err := svc.Resolve(ctx, 42, []string{"openai_api_key", "pin", "absent"})
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		if len(got) != 2 || got["openai_api_key"] != secrets["openai_api_key"] || got["pin"] != "1234" {
			t.Errorf("Resolve = %v", got)
		}
		if got, err := svc.Resolve(ctx, 43, []string{"pin"}); err != nil || len(got) != 0 {
			t.Errorf("Resolve for another user = %v, %v; want empty", got, err)
		}

		// Replace a value.
		if err := svc.Set(ctx, 42, "pin", "9876", "ops"); err != nil {
			t.Fatal(err)
		}
		if got, _ := svc.Resolve(ctx, 42, []string{"pin"}); got["pin"] != "9876" {
			t.Errorf("after replace, pin = %q", got["pin"])
		}

		list, err := svc.List(ctx, 42)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		want := map[string]string{"basic.pass-1": "****e-秘密", "openai_api_key": "****WXYZ", "pin": "****"}
		if len(list) != len(want) {
			t.Fatalf("List = %+v, want %d entries", list, len(want))
		}
		for _, m := range list {
			if m.Masked != want[m.Key] || m.KeyID != kidOf(t, keyB64) || m.UpdateTime.IsZero() {
				t.Errorf("List entry %+v, want masked %q", m, want[m.Key])
			}
		}

		if err := svc.Delete(ctx, 42, "pin"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if err := svc.Delete(ctx, 42, "pin"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Delete of absent key: %v, want store.ErrNotFound", err)
		}
	})
}

func TestCredentialKeyValidation(t *testing.T) {
	svc := auth.NewCredentialService(nil, mustKeyring(t, newKeyB64(t), "")) // rejected before any store call
	for _, key := range []string{"", "has space", "semi;colon", "slash/key", "ключ", strings.Repeat("k", 129)} {
		if err := svc.Set(context.Background(), 1, key, "v", ""); err == nil {
			t.Errorf("Set accepted key %q", key)
		}
		if err := svc.Delete(context.Background(), 1, key); err == nil {
			t.Errorf("Delete accepted key %q", key)
		}
	}
	for _, key := range []string{"a", "A.b-c_9", strings.Repeat("k", 128)} {
		if err := auth.ValidateCredentialKey(key); err != nil {
			t.Errorf("ValidateCredentialKey(%q): %v", key, err)
		}
	}
}

func TestCredentialCopiedRow(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc := auth.NewCredentialService(s, mustKeyring(t, newKeyB64(t), ""))
		if err := svc.Set(ctx, 1, "api_key", "victim-secret-value", "u1"); err != nil {
			t.Fatal(err)
		}
		raw, kid := rawValue(t, s, 1, "api_key")
		// An attacker with write access to the table copies the ciphertext
		// into rows of their own.
		for _, row := range []struct {
			user int64
			key  string
		}{{2, "api_key"}, {1, "other_key"}} {
			_, err := s.DB().ExecContext(ctx,
				"INSERT INTO sys_user_credential (user_id, credential_key, credential_value, key_id) VALUES (?, ?, ?, ?)",
				row.user, row.key, raw, kid)
			if err != nil {
				t.Fatal(err)
			}
			got, err := svc.Resolve(ctx, row.user, []string{row.key})
			if err == nil {
				t.Errorf("copied value decrypted for user %d key %s: %v", row.user, row.key, got)
			} else if strings.Contains(err.Error(), "victim-secret-value") {
				t.Errorf("error reveals the value: %v", err)
			}
		}
	})
}

func TestCredentialRotate(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		k1, k2 := newKeyB64(t), newKeyB64(t)
		values := map[string]string{"a": "value-a", "b": "value-b", "c": "value-c"}
		old := auth.NewCredentialService(s, mustKeyring(t, k1, ""))
		for k, v := range values {
			if err := old.Set(ctx, 5, k, v, ""); err != nil {
				t.Fatal(err)
			}
		}
		keys := []string{"a", "b", "c"}

		// New master key, old one kept for reading.
		svc := auth.NewCredentialService(s, mustKeyring(t, k2, k1))
		if err := svc.Set(ctx, 6, "fresh", "value-fresh", ""); err != nil {
			t.Fatal(err)
		}
		if got, err := svc.Resolve(ctx, 5, keys); err != nil || len(got) != 3 || got["b"] != "value-b" {
			t.Fatalf("Resolve with old key in the keyring = %v, %v", got, err)
		}
		n, err := svc.Rotate(ctx)
		if err != nil || n != len(values) {
			t.Fatalf("Rotate = %d, %v; want %d, nil", n, err, len(values))
		}
		for _, k := range keys {
			if raw, kid := rawValue(t, s, 5, k); kid != kidOf(t, k2) || !strings.HasPrefix(raw, "v1:"+kidOf(t, k2)+":") {
				t.Errorf("after Rotate %s is %q under %q, want kid %s", k, raw, kid, kidOf(t, k2))
			}
		}
		if n, err := svc.Rotate(ctx); err != nil || n != 0 {
			t.Errorf("second Rotate = %d, %v; want 0, nil", n, err)
		}

		// The old key can now be dropped; without the new one nothing opens.
		newOnly := auth.NewCredentialService(s, mustKeyring(t, k2, ""))
		if got, err := newOnly.Resolve(ctx, 5, keys); err != nil || got["a"] != "value-a" || got["c"] != "value-c" {
			t.Errorf("Resolve after rotation with the new key only = %v, %v", got, err)
		}
		oldOnly := auth.NewCredentialService(s, mustKeyring(t, k1, ""))
		if _, err := oldOnly.Resolve(ctx, 5, keys); err == nil || !strings.Contains(err.Error(), kidOf(t, k2)) {
			t.Errorf("Resolve with the retired key only: %v, want an unknown key id %s error", err, kidOf(t, k2))
		}
	})
}

func TestCredentialServiceNoMasterKey(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc := auth.NewCredentialService(s, mustKeyring(t, "", ""))
		// Nothing stored, nothing read: no error, so the engine runs keyless.
		if got, err := svc.Resolve(ctx, 1, []string{"k"}); err != nil || len(got) != 0 {
			t.Errorf("Resolve of nothing without a key = %v, %v", got, err)
		}
		if err := svc.Set(ctx, 1, "k", "value", ""); !errors.Is(err, auth.ErrNoMasterKey) {
			t.Errorf("Set without a key: %v, want ErrNoMasterKey", err)
		}
		if err := auth.NewCredentialService(s, mustKeyring(t, newKeyB64(t), "")).Set(ctx, 1, "k", "value", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Resolve(ctx, 1, []string{"k"}); !errors.Is(err, auth.ErrNoMasterKey) {
			t.Errorf("Resolve without a key: %v, want ErrNoMasterKey", err)
		}
		if _, err := svc.List(ctx, 1); !errors.Is(err, auth.ErrNoMasterKey) {
			t.Errorf("List without a key: %v, want ErrNoMasterKey", err)
		}
		if _, err := svc.Rotate(ctx); !errors.Is(err, auth.ErrNoMasterKey) {
			t.Errorf("Rotate without a key: %v, want ErrNoMasterKey", err)
		}
	})
}

// countingStore counts the reads that reach the store.
type countingStore struct {
	auth.CredentialStore
	reads int
}

func (c *countingStore) GetCredentials(ctx context.Context, userID int64, keys []string) ([]store.Credential, error) {
	c.reads++
	return c.CredentialStore.GetCredentials(ctx, userID, keys)
}

func TestResolveCache(t *testing.T) {
	st := &countingStore{CredentialStore: testdb.Open(t, "sqlite")}
	cs := auth.NewCredentialService(st, mustKeyring(t, newKeyB64(t), ""))
	changes := &fixedVersions{}
	cs.Changes = changes
	ctx := context.Background()
	if err := cs.Set(ctx, 7, "K", "v1-secret", "t"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		got, err := cs.Resolve(ctx, 7, []string{"K", "ABSENT"})
		if err != nil || got["K"] != "v1-secret" || len(got) != 1 {
			t.Fatalf("resolve: %v %v", got, err)
		}
	}
	if st.reads != 1 {
		t.Fatalf("%d store reads for three resolves; want 1 (values and absences cached)", st.reads)
	}
	// A write through the service takes effect at once.
	if err := cs.Set(ctx, 7, "K", "v2-secret", "t"); err != nil {
		t.Fatal(err)
	}
	if got, _ := cs.Resolve(ctx, 7, []string{"K"}); got["K"] != "v2-secret" {
		t.Fatalf("stale value after Set: %v", got)
	}
	if err := cs.Delete(ctx, 7, "K"); err != nil {
		t.Fatal(err)
	}
	if got, _ := cs.Resolve(ctx, 7, []string{"K"}); len(got) != 0 {
		t.Fatalf("value survives Delete: %v", got)
	}
	// The counter moves (a write elsewhere): the next resolve reads.
	cs.Resolve(ctx, 7, []string{"K"})
	before := st.reads
	cs.Resolve(ctx, 7, []string{"K"})
	if st.reads != before {
		t.Fatalf("a cached absence was read again")
	}
	changes.v.Credentials++
	cs.Resolve(ctx, 7, []string{"K"})
	if st.reads != before+1 {
		t.Fatalf("after the counter moved, %d reads; want 1", st.reads-before)
	}
	// Off: every resolve reads.
	cs.Changes = nil
	before = st.reads
	cs.Resolve(ctx, 7, []string{"K"})
	cs.Resolve(ctx, 7, []string{"K"})
	if st.reads != before+2 {
		t.Fatalf("with the cache off, %d reads; want 2", st.reads-before)
	}
}

// fixedVersions is a change counter the test moves by hand.
type fixedVersions struct{ v store.Versions }

func (f *fixedVersions) Current() store.Versions { return f.v }

// TestCredentialVersions: a stored credential's version is stable until
// it is written again — with the same value too (a fresh nonce) — and
// is no hash of the plaintext.
func TestCredentialVersions(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc := auth.NewCredentialService(s, mustKeyring(t, newKeyB64(t), ""))
		const value = "sk-proj-abcdefghijklmnop-WXYZ"
		if err := svc.Set(ctx, 42, "k", value, "admin"); err != nil {
			t.Fatal(err)
		}
		v1, err := svc.Versions(ctx, 42, []string{"k", "absent"})
		if err != nil || len(v1) != 1 || len(v1["k"]) != 64 {
			t.Fatalf("Versions = %v, %v; want one 64-hex version", v1, err)
		}
		plain := sha256.Sum256([]byte(value))
		if v1["k"] == hex.EncodeToString(plain[:]) {
			t.Error("the version is the plaintext's hash")
		}
		if again, _ := svc.Versions(ctx, 42, []string{"k"}); again["k"] != v1["k"] {
			t.Errorf("version moved without a write: %s then %s", v1["k"], again["k"])
		}
		if err := svc.Set(ctx, 42, "k", value, "admin"); err != nil {
			t.Fatal(err)
		}
		if v2, _ := svc.Versions(ctx, 42, []string{"k"}); v2["k"] == v1["k"] {
			t.Error("the version did not change when the value was written again")
		}
	})
}
