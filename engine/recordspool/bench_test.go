package recordspool_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
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

// BenchmarkRecordSteps is the record's way in its two steps, each op a
// record, with nothing timed or waited for, so that instructions
// (callgrind) and allocations a record repeat on a shared machine:
// "append", the spool's append and fsync of a window's batch (140
// records: 20 ms at 7,000 a second) with the drainer handing them to a
// sink that keeps nothing; "insert", StoreSink's write of the drainer's
// batch (450 records, as BenchmarkRecordPath gathers them) into each
// database; "make", the records made and handed to nothing, is the
// harness's own share of the others' instructions. For instructions a
// record, the run of 20,000 less that of 2,000, over 18,000, less make's:
//
//	CGO_ENABLED=0 go test -c -o recordspool.test ./engine/recordspool/
//	GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
//	  ./recordspool.test -test.run '^$' -test.bench 'RecordSteps/append' -test.benchtime 20000x
func BenchmarkRecordSteps(b *testing.B) {
	b.Run("make", func(b *testing.B) { benchSteps(b, 140, func([]engine.Record) error { return nil }) })
	b.Run("append", func(b *testing.B) {
		sp, err := recordspool.Open(b.TempDir(), discardSink{}, recordspool.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer sp.Close(context.Background())
		benchSteps(b, 140, func(recs []engine.Record) error { return sp.WriteRecords(context.Background(), recs) })
	})
	testdb.EachB(b, func(b *testing.B, st *store.Store) {
		sink := api.StoreSink{Store: st}
		write := func(recs []engine.Record) error { return sink.WriteRecords(context.Background(), recs) }
		b.Run("insert", func(b *testing.B) { benchSteps(b, 450, write) })
		// The runner's calls: one tool, one user, every call a success,
		// its latency its own.
		b.Run("insert-latencies", func(b *testing.B) {
			benchSteps(b, 450, write, func(i int, r *engine.Record) { r.LatencyMS = int64(i % 37) })
		})
		// Records alike in nothing: tools, users, outcomes, runs, traces.
		b.Run("insert-mixed", func(b *testing.B) {
			benchSteps(b, 450, write, func(i int, r *engine.Record) {
				r.PluginName, r.UserID, r.LatencyMS, r.Attempts = fmt.Sprintf("tool_%d", i%7), int64(i%5), int64(i%37), 1+i%2
				if i%3 == 0 {
					r.Status, r.HTTPStatus, r.ErrorClass, r.ErrorMessage = "error", 502, "upstream_5xx", "bad gateway"
				}
				if i%4 == 0 {
					r.RunID, r.TraceID = fmt.Sprintf("run-%d", i%11), fmt.Sprintf("%032x", i)
				}
			})
		})
	})
}

// benchSteps hands write b.N records in batches of size, made beforehand
// as the recorder makes them (alike but for their ids) and changed by
// vary.
func benchSteps(b *testing.B, size int, write func([]engine.Record) error, vary ...func(i int, r *engine.Record)) {
	recs := make([]engine.Record, b.N)
	now := time.Now()
	for i := range recs {
		recs[i] = engine.Record{ID: uuid.Must(uuid.NewV7()).String(), PluginName: "github_repos_get",
			UserID: 42, Status: "ok", HTTPStatus: 200, LatencyMS: 3, Attempts: 1, CreatedAt: now}
		for _, v := range vary {
			v(i, &recs[i])
		}
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	for batch := range slices.Chunk(recs, size) {
		if err := write(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	// Exact to a hundredth: -benchmem rounds a record's share of a
	// batch's allocations down to a whole number.
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N), "allocs/record")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(b.N), "B/record")
}

type discardSink struct{}

func (discardSink) WriteRecords(context.Context, []engine.Record) error { return nil }
