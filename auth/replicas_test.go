package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestReplicasDisagree: replicas on one database with another admin
// token, no service token where the others have one, or a keyring
// lacking the key a peer writes under, are told apart by the digests they
// record (ops78); replicas that agree, those in the middle of a key
// change done in order included, report nothing. The database holds
// neither a token nor its plain hash.
func TestReplicasDisagree(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		k1, k2 := newKeyB64(t), newKeyB64(t)
		replica := func(master, old, admin, service string) *auth.Replicas {
			kr, err := auth.ParseKeyring(master, old)
			if err != nil {
				t.Fatal(err)
			}
			return &auth.Replicas{Store: s, Keyring: kr, Host: "h " + admin, Version: "v", Every: time.Second,
				Settings: []auth.Setting{{Name: "BLINDEXEC_ADMIN_TOKEN", Value: admin}, {Name: "BLINDEXEC_SERVICE_TOKEN", Value: service}}}
		}
		round := func(rs ...*auth.Replicas) {
			t.Helper()
			for range 2 { // each sees the others' rows of the first
				for _, r := range rs {
					if err := r.Round(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		agree := func(rs ...*auth.Replicas) {
			t.Helper()
			for i, r := range rs {
				if d := r.Disagreements(); len(d) != 0 {
					t.Errorf("replica %d: %q, want none", i, d)
				}
			}
		}
		says := func(r *auth.Replicas, want ...string) {
			t.Helper()
			d := strings.Join(r.Disagreements(), "\n")
			for _, w := range want {
				if !strings.Contains(d, w) {
					t.Errorf("disagreements %q, want %q", d, w)
				}
			}
		}
		a, b := replica(k1, "", "admin-a", "svc"), replica(k1, "", "admin-a", "svc")
		round(a, b)
		agree(a, b)

		c := replica(k1, "", "admin-c", "")
		round(a, b, c)
		says(a, "another BLINDEXEC_ADMIN_TOKEN than this one", "no BLINDEXEC_SERVICE_TOKEN where this one has one", "h admin-c")
		says(c, "another BLINDEXEC_ADMIN_TOKEN than this one", "a BLINDEXEC_SERVICE_TOKEN where this one has none", "h admin-a")
		rows, err := s.Replicas(ctx, time.Now().Add(-time.Minute), time.Now().Add(-time.Hour))
		if err != nil || len(rows) != 3 {
			t.Fatalf("rows %v, %v; want 3", rows, err)
		}
		for _, secret := range []string{"admin-a", "admin-c", "svc"} {
			plain := sha256.Sum256([]byte(secret))
			for _, r := range rows {
				if strings.Contains(r.Settings, secret) || strings.Contains(r.Settings, hex.EncodeToString(plain[:])) {
					t.Fatalf("a row holds %q or its sha256: %s", secret, r.Settings)
				}
			}
		}
		if err := s.DeleteReplica(ctx, rowOf(t, rows, "h admin-c")); err != nil { // c stops
			t.Fatal(err)
		}
		round(a, b)
		agree(a, b)

		// A key change in order: step 1 (K2 in _OLD), then step 2 on one
		// replica: they compare under K1, and both read K2.
		a, b = replica(k1, k2, "admin-a", "svc"), replica(k2, k1, "admin-a", "svc")
		round(a, b)
		agree(a, b)
		// Step 1 skipped: the replica on K1 alone cannot read what the
		// other writes, and says so before anything is written.
		a2 := replica(k1, "", "admin-a", "svc")
		round(a2, b)
		says(a2, "writes credentials under master key id", "BLINDEXEC_MASTER_KEYS_OLD")
		// Once a credential is under K2, the key check says it too.
		cs := auth.NewCredentialService(s, b.Keyring)
		if err := cs.Set(ctx, 7, "KEY", "value-7", "test"); err != nil {
			t.Fatal(err)
		}
		round(a2)
		says(a2, "this replica: BLINDEXEC_MASTER_KEY", "1 under key id")
		// A replica with no key in common cannot compare tokens.
		k3 := newKeyB64(t)
		d := replica(k3, "", "admin-a", "svc")
		round(d)
		says(d, "holds no master key this replica holds")
	})
}

func rowOf(t *testing.T, rows []store.Replica, host string) string {
	t.Helper()
	for _, r := range rows {
		if r.Host == host {
			return r.ReplicaID
		}
	}
	t.Fatalf("no replica of host %q", host)
	return ""
}
