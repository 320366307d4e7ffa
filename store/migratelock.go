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

// lockMySQL takes GET_LOCK on a connection of its own and returns its
// release. The lock belongs to that connection, so a process that dies
// mid-migration releases it with its connection. The name carries the
// database, as GET_LOCK names are server-wide.
func lockMySQL(ctx context.Context, db *sql.DB) (unlock func(), err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	const name = "CONCAT('blindexec.migrate.', DATABASE())"
	for {
		var got sql.NullInt64
		// Each wait is bounded, so that a cancelled context is noticed.
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+name+", 1)").Scan(&got); err != nil {
			conn.Close()
			return nil, fmt.Errorf("migration lock: %w", err)
		}
		if got.Valid && got.Int64 == 1 {
			return func() {
				conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK("+name+")")
				conn.Close()
			}, nil
		}
		if err := ctx.Err(); err != nil {
			conn.Close()
			return nil, fmt.Errorf("migration lock: %w", err)
		}
	}
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
