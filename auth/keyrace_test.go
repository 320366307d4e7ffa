package auth_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// together is the store as two replicas starting at once see it: each
// has read the key checks before either records its own.
type together struct {
	*store.Store
	read  *sync.WaitGroup
	reads *atomic.Int32
}

func (s together) VaultKeys(ctx context.Context) ([]store.VaultKey, error) {
	rows, err := s.Store.VaultKeys(ctx)
	if s.reads.Add(1) <= 2 { // the two starts' first reads
		s.read.Done()
		s.read.Wait()
	}
	return rows, err
}

// TestFirstKeysAtOnce: two replicas with different master keys starting
// together on a new database (serve --no-migrate beside a migration job,
// one back-off schedule) each read no key check and each recorded its
// own, and from then on each passed on its own check: credentials
// written by one were unreadable by the other. Now the first check is
// recorded only into an empty table: the second is refused.
func TestFirstKeysAtOnce(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var read sync.WaitGroup
		var reads atomic.Int32
		read.Add(2)
		errs := make([]error, 2)
		var done sync.WaitGroup
		for i := range errs {
			kr, err := auth.ParseKeyring(newKeyB64(t), "")
			if err != nil {
				t.Fatal(err)
			}
			done.Go(func() { errs[i] = auth.CheckKeys(ctx, together{s, &read, &reads}, kr, true) })
		}
		done.Wait()
		var km *auth.KeyMismatchError
		if (errs[0] == nil) == (errs[1] == nil) || !errors.As(errors.Join(errs...), &km) {
			t.Errorf("two keys recorded at once on a new database: %v", errs)
		}
		if rows, _ := s.VaultKeys(ctx); len(rows) != 1 {
			t.Errorf("key checks recorded: %d, want 1", len(rows))
		}
	})
}
