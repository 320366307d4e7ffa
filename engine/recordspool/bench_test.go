package recordspool_test

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/recordspool"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// BenchmarkRecordPath is a record's whole way under serve's settings: the
// recorder's group-commit window, the spool's append and fsync, the drain
// into the store (SQLite; MySQL too when BLINDEXEC_TEST_MYSQL_DSN is set).
// Records come at a steady 7,000 a second, the gateway's rate, so batches
// are the size they are in service rather than always full; cpu-µs/record
// is this process's user and system time over the run, per record, which
// is what a record takes from the calls sharing the machine.
//
//	go test -run '^$' -bench RecordPath -benchtime 30000x ./engine/recordspool/
func BenchmarkRecordPath(b *testing.B) {
	testdb.EachB(b, func(b *testing.B, st *store.Store) {
		b.Run("gather=default", func(b *testing.B) { benchRecordPath(b, st, 0) })
		b.Run("gather=off", func(b *testing.B) { benchRecordPath(b, st, -1) })
	})
}

func benchRecordPath(b *testing.B, st *store.Store, gather time.Duration) {
	sink := &countingSink{RecordSink: api.StoreSink{Store: st}}
	sp, err := recordspool.Open(b.TempDir(), sink, recordspool.Options{Gather: gather})
	if err != nil {
		b.Fatal(err)
	}
	rec := engine.NewRecorder(sp, engine.RecorderOptions{FlushInterval: 20 * time.Millisecond, InFlight: 4})
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	const perTick = 7
	cpu0 := processCPU()
	n := 0
	for b.Loop() {
		if n%perTick == 0 {
			<-tick.C
		}
		rec.Record(engine.Record{ID: uuid.Must(uuid.NewV7()).String(), PluginName: "github_repos_get",
			UserID: 42, Status: "ok", HTTPStatus: 200, LatencyMS: 3, Attempts: 1, CreatedAt: time.Now()})
		n++
	}
	ctx := context.Background()
	if err := rec.Close(ctx); err != nil {
		b.Fatal(err)
	}
	for sp.Stats().PendingRecords > 0 {
		time.Sleep(time.Millisecond)
	}
	cpu := processCPU() - cpu0
	if err := sp.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/record")
	b.ReportMetric(float64(n)/float64(sink.writes.Load()), "records/write")
}

// countingSink counts the database writes the drainer makes.
type countingSink struct {
	engine.RecordSink
	writes atomic.Int64
}

func (c *countingSink) WriteRecords(ctx context.Context, recs []engine.Record) error {
	c.writes.Add(1)
	return c.RecordSink.WriteRecords(ctx, recs)
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
