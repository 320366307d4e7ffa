package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// ErrConflict reports that the database aborted a statement or a
// transaction over a concurrent write of the same rows: on one server a
// deadlock (MySQL error 1213) or a lock wait timeout (1205); on a Galera
// cluster also a certification failure — another node committed a write
// of the same row first — which Galera reports as 1213, at COMMIT or at
// the next statement of a transaction its applier aborted; on TiDB a write
// conflict of an optimistic transaction (9007).
var ErrConflict = errors.New("write conflict")

// MySQL error numbers of a conflict.
const (
	errLockWaitTimeout   = 1205
	errDeadlock          = 1213 // also Galera's certification failure
	errTiDBWriteConflict = 9007
)

// isConflict reports whether err is a conflict (ErrConflict's errors).
func isConflict(err error) bool {
	if errors.Is(err, ErrConflict) {
		return true
	}
	var myErr *mysqldrv.MySQLError
	return errors.As(err, &myErr) && (myErr.Number == errDeadlock || myErr.Number == errLockWaitTimeout || myErr.Number == errTiDBWriteConflict)
}

// Retries of a conflict.
const (
	// claimAttempts bounds the tries of a conditional claim (a pending
	// item decided, an approved item sent, a run moved): a claim that
	// still conflicts after them lost to the writer it conflicts with.
	claimAttempts = 3
	// leaseAttempts bounds the tries of a quota lease: every replica's
	// leases of a window write its one row, so conflicts come in bursts
	// (about 2 s of pauses at most).
	leaseAttempts = 24
	// conflictPause is the first pause between tries; it doubles up to
	// conflictPauseMax, and each pause is drawn at random below it so
	// that the writers that conflicted do not meet again in step.
	conflictPause    = 2 * time.Millisecond
	conflictPauseMax = 100 * time.Millisecond
)

// retryConflicts calls fn until it returns anything but a conflict, at
// most attempts times (retryWhile).
func retryConflicts(ctx context.Context, attempts int, fn func() error) error {
	return retryWhile(ctx, attempts, isConflict, fn)
}

// retryWhile calls fn until it returns an error that retryable does not
// accept, at most attempts times, with a jittered, growing pause between
// tries. It returns fn's last error (a retryable one when every try
// failed so), or ctx's.
func retryWhile(ctx context.Context, attempts int, retryable func(error) bool, fn func() error) error {
	pause := conflictPause
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !retryable(err) || attempt >= attempts {
			return err
		}
		t := time.NewTimer(rand.N(pause) + time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (after %v)", ctx.Err(), err)
		case <-t.C:
		}
		pause = min(2*pause, conflictPauseMax)
	}
}

// claim runs a conditional update — one that moves a row out of the state
// it requires — retrying conflicts. It reports whether this call moved the
// row: false when another writer did, including when the update still
// conflicts after its tries, as every writer of such a row moves it out of
// that state (a decision, a claim, an expiry).
func claim(ctx context.Context, update func() (moved bool, err error)) (bool, error) {
	var moved bool
	err := retryConflicts(ctx, claimAttempts, func() (err error) {
		moved, err = update()
		return err
	})
	if isConflict(err) {
		return false, nil // somebody else won
	}
	return moved, err
}
