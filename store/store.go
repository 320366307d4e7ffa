// Package store is blindexec's relational storage: plugins, encrypted user
// credentials, API tokens, the execution log and import sources, on SQLite
// (the embedded default) or MySQL/MariaDB.
//
// The SQL files in package migrations are the source of truth for the
// schema; the gorm models here only map onto it. Every time the store writes
// is taken in Go, in UTC, and truncated to the column's precision, so that
// SQLite, MySQL (which rounds fractional seconds) and MariaDB (which
// truncates them) all hold the same value.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	mysqldrv "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/blindexec/blindexec/internal/redact"
)

// Dialect names returned by (*Store).Dialect and used as DSN schemes.
const (
	DialectSQLite = "sqlite"
	DialectMySQL  = "mysql"
)

// DefaultDSN is the database used when none is configured.
const DefaultDSN = "sqlite:blindexec.db"

// QueryTimeout bounds a query that other calls wait behind (a reload
// under a lock, a lease held under a user's bucket, a single-use claim):
// a database that stops answering without closing the connection would
// otherwise hold them until the operating system gives up.
const QueryTimeout = 5 * time.Second

var (
	// ErrNotFound reports that the addressed row does not exist.
	ErrNotFound = errors.New("not found")
	// ErrDuplicate reports a unique-key violation (MySQL error 1062, SQLite
	// UNIQUE constraint failed).
	ErrDuplicate = errors.New("already exists")
)

// boundedPrepare bounds the preparation of a statement, and the
// beginning of a transaction, by QueryTimeout:
// gorm prepares a statement once for every caller of it, and they all
// wait for that preparation whatever their own deadline, so a first
// caller without one would hold them all on a database that stopped
// answering. The statement's executions keep their callers' contexts.
type boundedPrepare struct{ *sql.DB }

func (b boundedPrepare) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	ctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	return b.DB.PrepareContext(ctx, query)
}

// BeginTx begins gorm's transactions bounded (beginBounded).
func (b boundedPrepare) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	return beginBounded(ctx, b.DB, opts)
}

// GetDBConn is the pool under it, for gorm's DB and Ping.
func (b boundedPrepare) GetDBConn() (*sql.DB, error) { return b.DB, nil }

// Store is a handle on the database. It is safe for concurrent use.
type Store struct {
	db      *gorm.DB
	sqlDB   *sql.DB
	dialect string
	// sqlitePath is the database file of a SQLite store ("" in memory):
	// Migrate locks a file beside it.
	sqlitePath string
	// pendingMax is how many items may wait for one user at once
	// (SetPendingMax; DefaultPendingMaxPerUser when 0).
	pendingMax int
	// changeMode is how the change counters move (SetChangeDetection;
	// ChangeTriggers when "").
	changeMode string
	// migrateDSN, on MySQL, is the DSN without its readTimeout, for the
	// migrations, on a pool of their own whose COMMIT is not bounded
	// (newCommitBoundConnector): one may take longer than any statement of a call (an
	// ALTER TABLE waiting for a lock, an index built over millions of
	// execution records), and a client that gives up leaves the server
	// finishing a DDL that goose never records, so every later migrate
	// fails on it.
	migrateDSN string
}

// Open connects to dsn, which is "sqlite:PATH" or "mysql:" followed by a
// go-sql-driver DSN. It does not migrate; call Migrate for that.
func Open(ctx context.Context, dsn string) (*Store, error) {
	scheme, rest, _ := strings.Cut(dsn, ":")
	if strings.HasPrefix(rest, "//") && (scheme == DialectSQLite || scheme == DialectMySQL) {
		if scheme == DialectMySQL {
			// A URL (mysql://host:3306/db) is what other tools take.
			return nil, fmt.Errorf("open database: %q: mysql: takes a go-sql-driver DSN, not a URL: write it without //, e.g. mysql:user:pass@tcp(host:3306)/db", redact.Value(dsn))
		}
		// sqlite://file.db is file.db to some tools and /file.db to others.
		return nil, fmt.Errorf("open database: %q: write sqlite:PATH without // (sqlite:blindexec.db for a file in the working directory, sqlite:/var/lib/blindexec.db for an absolute path)", redact.Value(dsn))
	}
	var (
		dialector  gorm.Dialector
		pool       *sql.DB // opened here rather than by gorm (SQLite), closed on failure
		migrateDSN string
		err        error
	)
	switch scheme {
	case DialectSQLite:
		if pool, err = openSQLite(ctx, rest); err == nil {
			dialector = &sqlite.Dialector{Conn: pool}
		}
	case DialectMySQL:
		dialector, pool, migrateDSN, err = mysqlDialector(rest)
	default:
		return nil, fmt.Errorf("open database: unknown scheme in %q: want sqlite:PATH or mysql:DSN", redact.Value(dsn))
	}
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", scheme, err)
	}

	db, err := gorm.Open(dialector, &gorm.Config{
		// SQL values may be ciphertexts or tokens: never log them.
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
		// The hot statements (catalog lookups, execution records) repeat:
		// preparing them once spares the parse on every call. Bounded, as
		// IN lists of varying length make distinct statements.
		PrepareStmt:        true,
		PrepareStmtMaxSize: 256,
		PrepareStmtTTL:     time.Hour,
	})
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		return nil, fmt.Errorf("open %s database: %w", scheme, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", scheme, err)
	}
	if p, ok := db.ConnPool.(*gorm.PreparedStmtDB); ok {
		p.ConnPool = boundedPrepare{sqlDB}
	}
	if scheme == DialectSQLite {
		// WAL allows concurrent readers; writers queue on busy_timeout, so a
		// small pool is enough and avoids piling up waiting writers.
		sqlDB.SetMaxOpenConns(4)
		sqlDB.SetMaxIdleConns(4)
	} else {
		sqlDB.SetMaxOpenConns(20)
		sqlDB.SetMaxIdleConns(10)
		// Below the usual server wait_timeout, so idle connections are
		// recycled before the server drops them.
		sqlDB.SetConnMaxLifetime(5 * time.Minute)
	}
	s := &Store{db: db, sqlDB: sqlDB, dialect: scheme, migrateDSN: migrateDSN}
	if err := s.registerBounds(); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s database: %w", scheme, err)
	}
	if err := s.registerBumps(); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s database: %w", scheme, err)
	}
	if scheme == DialectSQLite {
		s.sqlitePath = sqliteFile(rest)
	}
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// sqliteBusyTimeout is how long a SQLite statement waits for another
// connection's lock (busy_timeout) before failing with SQLITE_BUSY.
const sqliteBusyTimeout = 5 * time.Second

// openSQLite opens the pool of the SQLite database at path and its first
// connection, which switches the file to WAL. SQLite refuses that switch
// with SQLITE_BUSY at once, without calling the busy handler, while
// another connection holds the file's write lock (another process
// starting on the same fresh file, switching it too): the pragma reads
// the header under a shared lock and then upgrades it, and an upgrade that
// waited could deadlock. So the first connection is retried, for as long
// as busy_timeout would wait; the switch persists, and on a file already
// in WAL the pragma writes nothing, so the pool's later connections do
// not meet it.
func openSQLite(ctx context.Context, path string) (*sql.DB, error) {
	if path == "" {
		return nil, errors.New("empty path: want sqlite:PATH")
	}
	// _txlock=immediate takes the write lock when a transaction begins, so
	// concurrent read-then-write transactions wait on busy_timeout instead
	// of failing with SQLITE_BUSY when they upgrade.
	params := fmt.Sprintf("_pragma=journal_mode(WAL)&_pragma=busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()) +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	db, err := sql.Open(sqlite.DriverName, path+sep+params)
	if err != nil {
		return nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, sqliteBusyTimeout)
	defer cancel()
	if err := retryWhile(waitCtx, math.MaxInt, isBusy, func() error { return db.PingContext(waitCtx) }); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// sqliteBusy is SQLite's SQLITE_BUSY, the primary result code of the
// extended ones glebarez/go-sqlite reports.
const sqliteBusy = 5

// isBusy reports whether err is SQLite's SQLITE_BUSY.
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == sqliteBusy
}

// mysqlDialector is the dialector of dsn over a pool whose transactions
// commit bounded (newCommitBoundConnector), and the DSN migrations run on
// (Store.migrateDSN), without the bound nor a readTimeout.
func mysqlDialector(dsn string) (gorm.Dialector, *sql.DB, string, error) {
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		return nil, nil, "", err
	}
	// DATETIME columns must scan into time.Time.
	cfg.ParseTime = true
	// Report matched rather than changed rows, so that an update which
	// happens to write identical values is not mistaken for a missing row.
	cfg.ClientFoundRows = true
	patient := cfg.Clone()
	patient.ReadTimeout = 0
	connector, err := newCommitBoundConnector(cfg)
	if err != nil {
		return nil, nil, "", err
	}
	pool := sql.OpenDB(connector)
	return mysql.New(mysql.Config{DSNConfig: cfg, Conn: pool}), pool, patient.FormatDSN(), nil
}

// Dialect is DialectSQLite or DialectMySQL.
func (s *Store) Dialect() string { return s.dialect }

// DB is the underlying connection pool, for raw queries in tests and tools.
func (s *Store) DB() *sql.DB { return s.sqlDB }

// Ping checks that the database is reachable.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s database: %w", s.dialect, err)
	}
	return nil
}

// Close closes the connection pool.
func (s *Store) Close() error { return s.sqlDB.Close() }

// Migrate applies every pending migration of the store's dialect. It runs
// under a lock, so replicas starting together on a fresh database wait for
// the one that migrates instead of racing it: on MySQL a row of
// sys_ai_migrate_lock, which every node of a cluster sees, held under a
// lease the holder renews (lockMySQL); on SQLite an exclusive lock on the
// file beside the database (goose reads the version outside its migration
// transaction, so the database's own write lock does not cover the check).
func (s *Store) Migrate(ctx context.Context) error {
	_, err := s.MigrateApplied(ctx)
	return err
}

// MigrateApplied is Migrate, returning the versions this call applied
// (none: the schema was up to date, or another replica migrated it), so
// that an upgrade says what it changed.
func (s *Store) MigrateApplied(ctx context.Context) ([]int64, error) {
	db := s.sqlDB
	if s.migrateDSN != "" {
		patient, err := sql.Open("mysql", s.migrateDSN)
		if err != nil {
			return nil, fmt.Errorf("migrate %s database: %w", s.dialect, err)
		}
		defer patient.Close()
		db = patient
	}
	p, err := s.migrationProvider(db)
	if err != nil {
		return nil, fmt.Errorf("migrate %s database: %w", s.dialect, err)
	}
	var unlock func()
	switch {
	case s.dialect == DialectMySQL:
		ctx, unlock, err = lockMySQL(ctx, s.sqlDB)
	case s.sqlitePath != "":
		unlock, err = lockFile(ctx, s.sqlitePath+".migrate.lock")
	default:
		unlock = func() {} // in memory: no other process can see it
	}
	if err != nil {
		return nil, fmt.Errorf("migrate %s database: %w", s.dialect, err)
	}
	defer unlock()
	results, err := p.Up(ctx)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			err = fmt.Errorf("%w: %w", err, cause)
		}
		return nil, fmt.Errorf("migrate %s database: %w", s.dialect, err)
	}
	// Counter triggers or rows removed by hand since migration 00004 ran
	// are put back: goose would not run it again.
	if err := s.repairChanges(ctx); err != nil {
		return nil, fmt.Errorf("migrate %s database: %w", s.dialect, err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// classify maps driver errors onto the sentinels callers branch on, keeping
// the original text (which names the violated key) in the message.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ErrNotFound
	}
	var myErr *mysqldrv.MySQLError
	if errors.As(err, &myErr) && myErr.Number == 1062 {
		return fmt.Errorf("%w: %v", ErrDuplicate, err)
	}
	if isConflict(err) {
		return fmt.Errorf("%w: %v", ErrConflict, err)
	}
	// glebarez/go-sqlite's *Error carries the extended result code.
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		const constraintPrimaryKey, constraintUnique = 1555, 2067
		if c := coded.Code(); c == constraintUnique || c == constraintPrimaryKey {
			return fmt.Errorf("%w: %v", ErrDuplicate, err)
		}
	}
	return err
}

// affected turns an update or delete that matched no row into ErrNotFound.
func affected(res *gorm.DB) error {
	if res.Error != nil {
		return classify(res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// dbTime is t as stored in a DATETIME column: UTC, whole seconds.
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// dbTimePtr is dbTime for nullable columns.
func dbTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := dbTime(*t)
	return &v
}

// now is the current time as stored in a DATETIME column.
func now() time.Time { return dbTime(time.Now()) }
