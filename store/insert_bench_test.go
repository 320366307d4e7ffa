package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// BenchmarkInsertExecutions writes the batches the record spool hands
// over (256 records) on each database: MySQL's when
// BLINDEXEC_TEST_MYSQL_DSN is set.
func BenchmarkInsertExecutions(b *testing.B) {
	testdb.EachB(b, func(b *testing.B, st *store.Store) {
		ctx := context.Background()
		uid := int64(7)
		for i := 0; b.Loop(); i++ {
			es := make([]store.Execution, 256)
			for j := range es {
				es[j] = store.Execution{ID: fmt.Sprintf("%08d-%04d", i, j), PluginName: "p", UserID: &uid, Status: "ok",
					HTTPStatus: 200, LatencyMS: 3, Attempts: 1, CreateTime: time.Now()}
			}
			if err := st.InsertExecutions(ctx, es); err != nil {
				b.Fatal(err)
			}
		}
	})
}
