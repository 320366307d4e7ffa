package engine

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Record statuses.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusRefused = "refused" // nothing was sent
)

const maxRecordMessage = 1000

// Record is the execution record of one call. It never holds a credential:
// ErrorMessage is the masked message the caller saw, at most 1000 bytes.
type Record struct {
	ID           string `json:"id"` // the Result's ExecutionID (a UUIDv7: time-ordered)
	RunID        string `json:"run_id,omitempty"`
	PluginName   string `json:"plugin_name"`
	UserID       int64  `json:"user_id"`
	Status       string `json:"status"` // ok | error | refused
	HTTPStatus   int    `json:"http_status"`
	LatencyMS    int64  `json:"latency_ms"`
	Attempts     int    `json:"attempts"`
	ErrorClass   string `json:"error_class,omitempty"` // the ToolError code
	ErrorMessage string `json:"error_message,omitempty"`
	// Confirmation is the decision a confirmed call was sent on
	// (Call.Approval, Plan.Approve).
	Confirmation string `json:"confirmation,omitempty"`
	// Questions are the questions an upstream MCP server put to the
	// person during the call and their answers (JSON, masked; issue 48).
	Questions string    `json:"questions,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// TraceID is the trace the call ran in (tracing on), else empty.
	TraceID string `json:"trace_id,omitempty"`
}

// RecordSink stores records (the store's execution log).
type RecordSink interface {
	WriteRecords(ctx context.Context, recs []Record) error
}

// AdmittingSink is a RecordSink that can run out of room (the record
// spool). While Admit returns an error, the executor refuses calls rather
// than make calls it could not record.
type AdmittingSink interface {
	RecordSink
	Admit() error
}

// RecorderOptions tune a Recorder; zero values take the defaults.
type RecorderOptions struct {
	BatchSize     int           // records per write (256)
	FlushInterval time.Duration // longest a record waits for a write (200 ms)
	Buffer        int           // records queued before Record blocks (4096, at least BatchSize)
	WriteTimeout  time.Duration // bound on one WriteRecords (10 s)
	// InFlight is how many WriteRecords may run at once (1). A sink that
	// shares work between overlapping writes takes more: the spool appends
	// a window's batch while the previous one's fsync runs, and syncs both
	// with one fsync, so no batch waits for two.
	InFlight int
	Logger   *slog.Logger // nil: slog.Default()
}

// Recorder writes records off the request path, in batches. Record
// appends to a queue; a background goroutine hands the sink a batch when
// one is full or at the flush interval (without waiting for the previous
// write, up to InFlight at once), so a call costs no goroutine wake-up;
// Close writes what is left. A full queue makes Record wait rather than
// drop; a failed write is kept, first in the queue, and tried again at
// the next flush, and while the sink refuses writes no call is admitted
// (Admit): a process whose sink is the database itself (mcp serve
// --stdio, the CLI) would otherwise go on calling during an outage and
// lose every call's record. Only at Close is a batch the sink refuses
// twice lost, and logged.
type Recorder struct {
	sink RecordSink
	opts RecorderOptions
	log  *slog.Logger
	// down is the sink's last error while it refuses writes, nil once
	// one is written.
	down atomic.Pointer[error]

	mu      sync.Mutex
	drained *sync.Cond // the queue was emptied (Record waits on it when full)
	queue   []Record
	closed  bool
	kick    chan struct{} // a batch is full, or Close was called
	done    chan struct{}
}

// NewRecorder starts a Recorder writing to sink.
func NewRecorder(sink RecordSink, opts RecorderOptions) *Recorder {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 256
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 200 * time.Millisecond
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 4096
	}
	opts.Buffer = max(opts.Buffer, opts.BatchSize) // a full batch must fit
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	opts.InFlight = max(opts.InFlight, 1)
	r := &Recorder{
		sink: sink,
		opts: opts,
		log:  cmp.Or(opts.Logger, slog.Default()),
		kick: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	r.drained = sync.NewCond(&r.mu)
	go r.run()
	return r
}

// Record queues rec, waiting while the queue is full. After Close the
// record cannot be written; it is logged as lost.
func (r *Recorder) Record(rec Record) {
	r.mu.Lock()
	for len(r.queue) >= r.opts.Buffer && !r.closed {
		r.drained.Wait()
	}
	if r.closed {
		r.mu.Unlock()
		r.log.Error("execution record after the recorder closed: not written", "id", rec.ID, "plugin", rec.PluginName)
		return
	}
	r.queue = append(r.queue, rec)
	full := len(r.queue) >= r.opts.BatchSize
	r.mu.Unlock()
	if full {
		r.wake()
	}
}

// Admit refuses while the sink refuses writes (the records of calls made
// wait in the queue); else it is the sink's Admit when it is an
// AdmittingSink, else nil.
func (r *Recorder) Admit() error {
	if err := r.down.Load(); err != nil {
		return fmt.Errorf("the execution records are not being written: %w", *err)
	}
	if a, ok := r.sink.(AdmittingSink); ok {
		return a.Admit()
	}
	return nil
}

func (r *Recorder) wake() {
	select {
	case r.kick <- struct{}{}:
	default: // already woken
	}
}

// Close stops accepting records and waits until every queued one is
// written, or ctx ends.
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.drained.Broadcast()
	r.mu.Unlock()
	r.wake()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Recorder) run() {
	defer close(r.done)
	tick := time.NewTicker(r.opts.FlushInterval)
	defer tick.Stop()
	var writes sync.WaitGroup
	defer writes.Wait()
	slots := make(chan struct{}, r.opts.InFlight) // a token per write running
	for {
		select {
		case <-tick.C:
		case <-r.kick:
		}
		r.mu.Lock()
		queued, closed := r.queue, r.closed
		// The sink may keep what it is given: a new queue, of the size
		// the last window took, so that filling it rarely regrows it.
		r.queue = make([]Record, 0, len(queued))
		r.drained.Broadcast()
		r.mu.Unlock()
		for batch := range slices.Chunk(queued, r.opts.BatchSize) {
			slots <- struct{}{}
			writes.Go(func() {
				defer func() { <-slots }()
				r.write(batch)
			})
		}
		if closed {
			return
		}
	}
}

func (r *Recorder) write(batch []Record) {
	var err error
	for try := 1; try <= 2; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), r.opts.WriteTimeout)
		err = r.sink.WriteRecords(ctx, batch)
		cancel()
		if err == nil {
			if r.down.Swap(nil) != nil {
				r.log.Info("execution records are written again: admitting calls")
			}
			return
		}
		if r.down.Load() == nil {
			r.log.Warn("writing execution records failed", "records", len(batch), "try", try, "err", err)
		}
	}
	r.mu.Lock()
	closed := r.closed
	if !closed {
		// Kept for the next flush; Close's last flush takes it too,
		// since it reads the queue once closed is set.
		r.queue = slices.Concat(batch, r.queue)
	}
	r.mu.Unlock()
	if closed {
		r.log.Error("execution records lost", "records", len(batch), "first_id", batch[0].ID, "err", err)
		return
	}
	if r.down.Swap(&err) == nil {
		r.log.Error("execution records not written: refusing calls until they are; the records are kept", "records", len(batch), "err", err)
	}
	// Tried again after a pause even when no flush is due (a full queue
	// makes Record wait for one).
	time.AfterFunc(min(r.opts.FlushInterval, time.Second), r.wake)
}
