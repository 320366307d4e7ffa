package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"strings"
	"syscall"
	"time"
)

// Migration lock on MySQL: a row of its own table, which every node of a
// cluster sees (GET_LOCK is one server's: on a Galera cluster each node
// would grant it to a replica of its own). The row names its holder and
// an expiry on the database's clock, which the holder pushes on while it
// migrates: a holder that dies without releasing it holds it at most
// migrateLease longer.
const (
	migrateLockTable = "sys_ai_migrate_lock"
	migrateLease     = 30 * time.Second
	// migrateLockPoll is the longest wait between two claims of a lock
	// held by another replica.
	migrateLockPoll = 250 * time.Millisecond
)

// lockMySQL claims the migration lock row, waiting within ctx, and returns
// a context that ends only if the lock is lost (its lease taken over: this
// replica stalled past it), not with ctx, and the lock's release. A MySQL
// migration cut by its caller's deadline is not rolled back: the server
// finishes the DDL it was sent and goose never records it, so every later
// migrate fails on it (serve gives each start attempt 30 s).
func lockMySQL(ctx context.Context, db *sql.DB) (held context.Context, unlock func(), err error) {
	// CREATE TABLE IF NOT EXISTS is safe to race: on a Galera cluster DDL
	// runs in one total order on every node.
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+migrateLockTable+
		" (lock_id TINYINT NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expire_time DATETIME(6) NOT NULL) ENGINE=InnoDB"); err != nil {
		return nil, nil, fmt.Errorf("migration lock: %w", err)
	}
	var id [12]byte
	rand.Read(id[:])
	owner := hex.EncodeToString(id[:])
	lease := fmt.Sprintf("UTC_TIMESTAMP(6) + INTERVAL %d SECOND", int(migrateLease/time.Second))
	for {
		got, err := claimMigrateLock(ctx, db, owner, lease)
		if err != nil {
			return nil, nil, fmt.Errorf("migration lock: %w", err)
		}
		if got {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("migration lock: %w", ctx.Err())
		case <-time.After(migrateLockPoll/2 + mathrand.N(migrateLockPoll/2)):
		}
	}
	held, lost := context.WithCancelCause(context.WithoutCancel(ctx))
	done := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(migrateLease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			res, err := db.ExecContext(held, "UPDATE "+migrateLockTable+" SET expire_time = "+lease+" WHERE lock_id = 1 AND owner = ?", owner)
			if err != nil {
				continue // tried again at the next tick, well inside the lease
			}
			if n, _ := res.RowsAffected(); n == 0 {
				lost(errors.New("migration lock lost: another replica took it over past its lease"))
				return
			}
		}
	}()
	return held, func() {
		close(done)
		<-renewed
		db.ExecContext(context.WithoutCancel(ctx), "DELETE FROM "+migrateLockTable+" WHERE lock_id = 1 AND owner = ?", owner)
		lost(nil)
	}, nil
}

// claimMigrateLock inserts the lock row, or takes it over when its lease
// is over. Another replica's claim at the same moment is a duplicate key
// on one server and a conflict (1213) between nodes of a cluster: either
// way that replica holds it.
func claimMigrateLock(ctx context.Context, db *sql.DB, owner, lease string) (bool, error) {
	_, err := db.ExecContext(ctx, "INSERT INTO "+migrateLockTable+" (lock_id, owner, expire_time) VALUES (1, ?, "+lease+")", owner)
	if err == nil {
		return true, nil
	}
	if err := classify(err); !errors.Is(err, ErrDuplicate) && !errors.Is(err, ErrConflict) {
		return false, err
	}
	res, err := db.ExecContext(ctx, "UPDATE "+migrateLockTable+" SET owner = ?, expire_time = "+lease+" WHERE lock_id = 1 AND expire_time < UTC_TIMESTAMP(6)", owner)
	if err != nil {
		if isConflict(err) {
			return false, nil
		}
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// lockFile takes an exclusive flock on path, creating it, and returns its
// release. The kernel drops the lock when the process dies.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("migration lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("migration lock %s: %w", path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sqliteFile is the file of a SQLite DSN path, or "" for an in-memory
// database.
func sqliteFile(dsn string) string {
	path, query, _ := strings.Cut(dsn, "?")
	path = strings.TrimPrefix(path, "file:")
	if path == "" || path == ":memory:" || strings.Contains(query, "mode=memory") {
		return ""
	}
	return path
}
