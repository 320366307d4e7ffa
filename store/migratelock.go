package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// mysqlMigrationLock is a goose session locker on MySQL's GET_LOCK: the
// lock belongs to the connection goose migrates on, so a process that dies
// mid-migration releases it with its connection. The name carries the
// database, as GET_LOCK names are server-wide.
type mysqlMigrationLock struct{}

// lockPoll bounds each wait, so that a cancelled context is noticed.
const lockPoll = time.Second

func (mysqlMigrationLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	for {
		var got sql.NullInt64
		err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(CONCAT('blindexec.migrate.', DATABASE()), ?)",
			int(lockPoll/time.Second)).Scan(&got)
		if err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if got.Valid && got.Int64 == 1 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
	}
}

func (mysqlMigrationLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "SELECT RELEASE_LOCK(CONCAT('blindexec.migrate.', DATABASE()))"); err != nil {
		return fmt.Errorf("release the migration lock: %w", err)
	}
	return nil
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
