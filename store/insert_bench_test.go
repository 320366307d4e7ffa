package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func BenchmarkInsertExecutions(b *testing.B) {
	st := testdb.Open(b, "sqlite")
	ctx := context.Background()
	uid := int64(7)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		es := make([]store.Execution, 256)
		for j := range es {
			es[j] = store.Execution{ID: fmt.Sprintf("%08d-%04d", i, j), PluginName: "p", UserID: &uid, Status: "ok",
				HTTPStatus: 200, LatencyMS: 3, Attempts: 1, CreateTime: time.Now()}
		}
		if err := st.InsertExecutions(ctx, es); err != nil {
			b.Fatal(err)
		}
	}
}
