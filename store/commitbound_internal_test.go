package store

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// deadlineConn is a network connection that only keeps its deadline.
type deadlineConn struct {
	net.Conn
	mu       sync.Mutex
	deadline time.Time
	set      chan struct{} // closed at the first deadline set
	once     sync.Once
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	c.once.Do(func() { close(c.set) })
	return nil
}

// answeredAtTheCut is a transaction whose COMMIT the server answers with
// an error just as the bound passes the connection's deadline.
type answeredAtTheCut struct{ conn *deadlineConn }

func (tx answeredAtTheCut) Commit() error {
	<-tx.conn.set
	return &mysqldrv.MySQLError{Number: errDeadlock, Message: "Deadlock found when trying to get lock"}
}

func (answeredAtTheCut) Rollback() error { return nil }

// TestCommitAnsweredAtTheCut (review77): a COMMIT the server answered
// with an error (a Galera certification failure, 1213) as the bound
// fired left the connection, which the driver keeps after an error
// packet, with its deadline passed, back in the pool (the next
// statement's read failing after it was sent, with a DSN setting
// writeTimeout), and called the answer "no answer". Now the deadline is
// cleared and the server's error returned as it is (a conflict, retried
// as one).
func TestCommitAnsweredAtTheCut(t *testing.T) {
	conn := &deadlineConn{set: make(chan struct{})}
	err := commitBoundTx{Tx: answeredAtTheCut{conn}, net: conn}.Commit()
	if !isConflict(err) || strings.Contains(err.Error(), "no answer") || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("commit: %v, want the server's conflict as it is", err)
	}
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if !conn.deadline.IsZero() {
		t.Errorf("the connection kept the deadline %v", conn.deadline)
	}
}
