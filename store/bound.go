package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
)

// boundKey holds, in a statement's settings, the cancel of the bound
// boundStatements put on it.
const boundKey = "blindexec:bound"

// registerBounds bounds every statement of the store by QueryTimeout (the
// caller's deadline when nearer): on MySQL a database that stops
// answering without closing the connection (a partition) would otherwise
// hold a route's own query — a token's, a pending item's, an import's —
// until the answer's deadline or the operating system gave up, however
// bounded the reads other calls share are. A statement cut so fails
// with context.DeadlineExceeded, which the routes answer 503
// database_unavailable. Migrations run through goose on the pool, not
// here, and are not bounded. Rows a statement returns are read within
// it (gorm scans before the callbacks end), except Row and Rows, whose
// bound ends when it expires.
func (s *Store) registerBounds() error {
	begin := func(db *gorm.DB) {
		ctx, cancel := context.WithTimeout(db.Statement.Context, QueryTimeout)
		db.Statement.Context = ctx
		db.InstanceSet(boundKey, cancel)
	}
	end := func(db *gorm.DB) {
		if cancel, ok := db.InstanceGet(boundKey); ok {
			cancel.(context.CancelFunc)()
		}
	}
	cb := s.db.Callback()
	for _, reg := range []struct {
		before, after func(string, func(*gorm.DB)) error
	}{
		{cb.Create().Before("*").Register, cb.Create().After("*").Register},
		{cb.Query().Before("*").Register, cb.Query().After("*").Register},
		{cb.Update().Before("*").Register, cb.Update().After("*").Register},
		{cb.Delete().Before("*").Register, cb.Delete().After("*").Register},
		{cb.Raw().Before("*").Register, cb.Raw().After("*").Register},
	} {
		if err := reg.before("blindexec:bound", begin); err != nil {
			return err
		}
		if err := reg.after("blindexec:unbound", end); err != nil {
			return err
		}
	}
	// Row and Rows return rows their caller reads after the callbacks:
	// the bound is left to expire rather than cut them.
	return cb.Row().Before("*").Register("blindexec:bound", func(db *gorm.DB) {
		ctx, cancel := context.WithCancel(db.Statement.Context)
		time.AfterFunc(QueryTimeout, cancel)
		db.Statement.Context = ctx
	})
}

// transaction runs one of a route's short writes in a transaction
// bounded by QueryTimeout as a whole (the caller's deadline when
// nearer), its BEGIN included (review 74): a route waits on it no
// longer than on one statement. COMMIT, which database/sql sends with no
// context, is left to the DSN's timeouts (docs/security.md).
func (s *Store) transaction(ctx context.Context, fn func(tx *gorm.DB) error) error {
	ctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	return s.db.WithContext(ctx).Transaction(fn)
}

// beginBounded begins a transaction on db, the beginning bounded by
// QueryTimeout (the caller's context when it ends first): on MySQL a
// database that stops answering without closing the connection would
// otherwise hold the caller at its BEGIN for as long as the connection
// lived, whatever bounds its statements. database/sql ties a
// transaction's whole life to the context it began with, so the bound
// cannot be a deadline on it: the context given to BeginTx is cut by
// QueryTimeout or the caller only until the transaction has begun; its
// statements are bounded as every other (registerBounds, bounded).
func beginBounded(ctx context.Context, db *sql.DB, opts *sql.TxOptions) (*sql.Tx, error) {
	b := &beginContext{Context: ctx, done: make(chan struct{})}
	stopCaller := context.AfterFunc(ctx, func() { b.cut(ctx.Err()) })
	timer := time.AfterFunc(QueryTimeout, func() { b.cut(context.DeadlineExceeded) })
	tx, err := db.BeginTx(b, opts)
	stopCaller()
	timer.Stop()
	if cut := b.begun(); cut != nil {
		// Cut as it began: database/sql rolls such a transaction back.
		if err == nil {
			tx.Rollback()
		}
		return nil, fmt.Errorf("begin a transaction: %w", cut)
	}
	return tx, err
}

// beginContext is the caller's context (its values and deadline) whose
// Done and Err are beginBounded's cut alone.
type beginContext struct {
	context.Context
	done chan struct{}

	mu      sync.Mutex
	err     error
	settled bool
}

func (b *beginContext) Done() <-chan struct{} { return b.done }

func (b *beginContext) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// cut ends the context, unless the transaction has begun.
func (b *beginContext) cut(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.settled && b.err == nil {
		b.err = err
		close(b.done)
	}
}

// begun settles the context, never cut after, and returns the cause it
// was cut with, if it was.
func (b *beginContext) begun() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settled = true
	return b.err
}

// statements sends statements outside gorm: the pool, gorm's pool (its
// statement cache) or one of the store's own transactions.
type statements interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// bounded sends each statement bounded by QueryTimeout (the caller's
// deadline when nearer), as registerBounds bounds gorm's: the
// statements outside gorm (the embeddings', the recorder's, the change
// counters', the quota's) were otherwise held by a database that stops
// answering for as long as their caller's context, a background loop's
// none. The rows a query returns are read after it, so its bound is left
// to expire rather than cut them (as gorm's Row and Rows).
type bounded struct{ q statements }

func (b bounded) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	return b.q.ExecContext(ctx, query, args...)
}

func (b bounded) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return b.q.QueryContext(expiring(ctx), query, args...)
}

func (b bounded) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return b.q.QueryRowContext(expiring(ctx), query, args...)
}

// expiring is ctx ended QueryTimeout from now.
func expiring(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(QueryTimeout, cancel)
	return ctx
}

// raw is the pool, each statement bounded.
func (s *Store) raw() bounded { return bounded{s.sqlDB} }
