package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// database/sql sends COMMIT with no context, and go-sql-driver/mysql
// reads its answer without a deadline unless the DSN sets readTimeout:
// a database that stopped answering between a transaction's statements
// (each bounded) and its COMMIT held the caller for as long as the
// connection lived. The serving pool's connections are therefore dialed
// by commitBoundConnector, which keeps each one's network connection, and
// a COMMIT (or ROLLBACK, sent with no context either) not answered within
// QueryTimeout has its connection's deadline passed: the read fails, the
// driver closes the connection and the pool drops it. Migrations run on a pool of their own (migrateDSN), unbounded.

// dialedKey carries, in Connect's context, where the dial puts the
// network connection it made.
type dialedKey struct{}

// newCommitBoundConnector is the MySQL connector of cfg whose transactions
// commit and roll back bounded.
func newCommitBoundConnector(cfg *mysqldrv.Config) (driver.Connector, error) {
	cfg = cfg.Clone()
	dial := cfg.DialFunc
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if slot, ok := ctx.Value(dialedKey{}).(*net.Conn); ok && err == nil {
			*slot = c
		}
		return c, err
	}
	c, err := mysqldrv.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return commitBoundConnector{c}, nil
}

type commitBoundConnector struct{ driver.Connector }

func (c commitBoundConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var dialed net.Conn
	conn, err := c.Connector.Connect(context.WithValue(ctx, dialedKey{}, &dialed))
	if err != nil || dialed == nil {
		return conn, err
	}
	return &commitBoundConn{mysqlConn: conn.(mysqlConn), net: dialed}, nil
}

// mysqlConn is what go-sql-driver's connection offers database/sql; each
// is passed on as it is, so that the pool uses the connection as it
// would unwrapped.
type mysqlConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// commitBoundConn is a connection whose transactions commit and roll
// back bounded.
type commitBoundConn struct {
	mysqlConn
	net net.Conn
}

func (c *commitBoundConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.mysqlConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return commitBoundTx{Tx: tx, net: c.net}, nil
}

type commitBoundTx struct {
	driver.Tx
	net net.Conn
}

// ErrCommitOutcomeUnknown is a COMMIT sent whose answer never came (cut
// by the bound, or its connection broken meanwhile): the database may
// have committed it or not, so the caller must not report the write as
// not done (a client retrying a create would make a second).
var ErrCommitOutcomeUnknown = errors.New("the database did not answer the COMMIT: the write may have been done or not")

// Commit commits, its answer awaited QueryTimeout at most; an answer
// that never came is ErrCommitOutcomeUnknown.
func (t commitBoundTx) Commit() error {
	err := t.bounded("commit", t.Tx.Commit)
	if _, answered := errors.AsType[*mysqldrv.MySQLError](err); err != nil && !answered {
		return fmt.Errorf("%w: %w", ErrCommitOutcomeUnknown, err)
	}
	return err
}

// Rollback rolls back, its answer awaited QueryTimeout at most: a
// transaction given up after its statements were answered sends ROLLBACK
// with no context as COMMIT is sent.
func (t commitBoundTx) Rollback() error { return t.bounded("rollback", t.Tx.Rollback) }

// bounded runs end (the transaction's COMMIT or ROLLBACK), its answer
// awaited QueryTimeout at most.
func (t commitBoundTx) bounded(op string, end func() error) error {
	fired := make(chan struct{})
	cut := time.AfterFunc(QueryTimeout, func() {
		t.net.SetDeadline(time.Now())
		close(fired)
	})
	err := end()
	if cut.Stop() {
		return err
	}
	<-fired
	// Answered as it was cut (a success, or the server's error, after
	// which the driver keeps the connection): the connection goes back
	// to the pool, so its deadline is cleared and the answer is the
	// server's. Else the read failed and the driver closed it.
	if _, answered := errors.AsType[*mysqldrv.MySQLError](err); err == nil || answered {
		t.net.SetDeadline(time.Time{})
		return err
	}
	return fmt.Errorf("%s: no answer within %v (%w): %w", op, QueryTimeout, err, context.DeadlineExceeded)
}
