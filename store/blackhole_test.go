package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestBlackholedPrepareBounded: with the database blackholed
// (connections open, nothing answered), the first use of a statement
// prepares it once for every caller, and the others of that statement
// wait for that preparation whatever their own deadline (gorm's
// statement cache): a first caller without a deadline held them all for
// as long as the connection lived. The preparation is bounded by
// store.QueryTimeout, so another caller's read is decided within it.
func TestBlackholedPrepareBounded(t *testing.T) {
	_, proxy, through := testdb.Blackholable(t)
	st := testdb.At(t, through)
	proxy.Blackhole()
	// The test's own bound: the code under test's must come well before.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	go st.ListQuotaRules(ctx) // the first use: no deadline of its own but the test's
	time.Sleep(200 * time.Millisecond)
	short, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	began := time.Now()
	_, err := st.ListQuotaRules(short)
	if took, bound := time.Since(began), store.QueryTimeout+2*time.Second; took > bound || err == nil {
		t.Errorf("a read behind another's preparation: %v after %v, want an error within %v", err, took, bound)
	}
}
