package importer_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func newKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

func keyring(t *testing.T, master, old string) *auth.Keyring {
	t.Helper()
	kr, err := auth.ParseKeyring(master, old)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// A source's URL kept sealed is re-encrypted by `cred rotate` with the
// credentials: once the old key is dropped (the rotation's last step), a
// sync from the location as shown still fetches with it.
func TestRotateURLs(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		const full = "https://user:tok-8HqZ2w@docs.example/spec.json"
		shown := redact.Location(full)
		src := &store.ImportSource{Kind: store.SourceOpenAPI, Location: shown}
		if err := st.CreateImportSource(ctx, src); err != nil {
			t.Fatal(err)
		}
		oldKey, newKeyB64 := newKey(t), newKey(t)
		if err := importer.KeepURL(ctx, st, keyring(t, oldKey, ""), src.ID, full); err != nil {
			t.Fatal(err)
		}

		rotating := keyring(t, newKeyB64, oldKey)
		if n, err := importer.RotateURLs(ctx, st, rotating); err != nil || n != 1 {
			t.Fatalf("rotate: %d %v", n, err)
		}
		if n, err := importer.RotateURLs(ctx, st, rotating); err != nil || n != 0 {
			t.Errorf("a second rotation re-encrypted %d (%v), want none", n, err)
		}
		got, err := importer.FetchURL(ctx, st, keyring(t, newKeyB64, ""), shown, "")
		if err != nil || got != full {
			t.Errorf("a sync after the old key is dropped fetches %q (%v), want the URL kept", got, err)
		}
	})
}
