package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMigrateAtOnce: replicas starting at the same moment on an empty
// database migrate it once between them — every Migrate succeeds, each
// migration is recorded once, the lock is released — in repeated rounds.
// The lock is a row every node of a cluster sees, not a server's GET_LOCK.
func TestMigrateAtOnce(t *testing.T) {
	testdb.EachKind(t, func(t *testing.T, kind string) {
		for round := range 3 {
			dsn := testdb.DSN(t, kind)
			replicas := make([]*store.Store, 4)
			for i := range replicas {
				replicas[i] = testdb.At(t, dsn)
			}
			start := make(chan struct{})
			errs := make([]error, len(replicas))
			var wg sync.WaitGroup
			for i, s := range replicas {
				wg.Go(func() {
					<-start
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
					defer cancel()
					errs[i] = s.Migrate(ctx)
				})
			}
			close(start)
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("round %d, replica %d: %v", round, i, err)
				}
			}
			if err := replicas[0].CheckMigrated(t.Context()); err != nil {
				t.Errorf("round %d: %v", round, err)
			}
			var dupes int
			if err := replicas[0].DB().QueryRowContext(t.Context(),
				"SELECT COUNT(*) FROM (SELECT version_id FROM goose_db_version GROUP BY version_id HAVING COUNT(*) > 1) d").Scan(&dupes); err != nil {
				t.Fatal(err)
			}
			if dupes != 0 {
				t.Errorf("round %d: %d migrations recorded more than once", round, dupes)
			}
			if kind == store.DialectMySQL {
				var held int
				replicas[0].DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM sys_ai_migrate_lock").Scan(&held)
				if held != 0 {
					t.Errorf("round %d: the migration lock is still held", round)
				}
			}
		}
	})
}

// TestMigrateLockOfADeadReplica: a lock row whose holder died (its lease
// over) is taken over; one still within its lease is waited for.
func TestMigrateLockOfADeadReplica(t *testing.T) {
	s := testdb.Open(t, store.DialectMySQL)
	ctx := t.Context()
	if _, err := s.DB().ExecContext(ctx, "INSERT INTO sys_ai_migrate_lock (lock_id, owner, expire_time) VALUES (1, 'dead', UTC_TIMESTAMP(6) - INTERVAL 1 SECOND)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate past a dead holder's lease: %v", err)
	}
	if _, err := s.DB().ExecContext(ctx, "INSERT INTO sys_ai_migrate_lock (lock_id, owner, expire_time) VALUES (1, 'alive', UTC_TIMESTAMP(6) + INTERVAL 30 SECOND)"); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.Migrate(wait); err == nil {
		t.Fatal("migrated while another replica held the lock")
	}
}
