package store

import (
	"context"
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

// transaction runs fn in a transaction bounded by QueryTimeout as a
// whole (the caller's deadline when nearer): gorm's BEGIN runs outside
// the callbacks registerBounds hooks, so on a database that stops
// answering a route's transaction (a credential's write, a pending
// item's) waited on it until the answer's deadline (review 74).
func (s *Store) transaction(ctx context.Context, fn func(tx *gorm.DB) error) error {
	ctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	return s.db.WithContext(ctx).Transaction(fn)
}
