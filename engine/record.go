package engine

import (
	"context"
	"log/slog"
	"sync"
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
	ID           string    `json:"id"` // the Result's ExecutionID (a UUIDv7: time-ordered)
	RunID        string    `json:"run_id,omitempty"`
	PluginName   string    `json:"plugin_name"`
	UserID       int64     `json:"user_id"`
	Status       string    `json:"status"` // ok | error | refused
	HTTPStatus   int       `json:"http_status"`
	LatencyMS    int64     `json:"latency_ms"`
	Attempts     int       `json:"attempts"`
	ErrorClass   string    `json:"error_class,omitempty"` // the ToolError code
	ErrorMessage string    `json:"error_message,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
}

// RecordSink stores records (the store's execution log).
type RecordSink interface {
	WriteRecords(ctx context.Context, recs []Record) error
}

// RecorderOptions tune a Recorder; zero values take the defaults.
type RecorderOptions struct {
	BatchSize     int           // records per write (256)
	FlushInterval time.Duration // longest a record waits for a write (200 ms)
	Buffer        int           // records queued before Record blocks (4096)
	WriteTimeout  time.Duration // bound on one WriteRecords (10 s)
	Logger        *slog.Logger  // nil: slog.Default()
}

// Recorder writes records off the request path, in batches. Record
// queues; a background goroutine writes a batch when it is full or at
// the flush interval; Close writes what is left. A full queue makes
// Record wait rather than drop; a failed write is logged and retried
// once.
type Recorder struct {
	sink RecordSink
	opts RecorderOptions
	log  *slog.Logger

	mu     sync.RWMutex // held for reading while sending, for writing to close
	closed bool
	queue  chan Record
	done   chan struct{}
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
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	r := &Recorder{
		sink:  sink,
		opts:  opts,
		log:   opts.Logger,
		queue: make(chan Record, opts.Buffer),
		done:  make(chan struct{}),
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	go r.run()
	return r
}

// Record queues rec, waiting while the queue is full. After Close the
// record cannot be written; it is logged as lost.
func (r *Recorder) Record(rec Record) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		r.log.Error("execution record after the recorder closed: not written", "id", rec.ID, "plugin", rec.PluginName)
		return
	}
	r.queue <- rec
}

// Close stops accepting records and waits until every queued one is
// written, or ctx ends.
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.queue)
	}
	r.mu.Unlock()
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
	batch := make([]Record, 0, r.opts.BatchSize)
	flush := func() {
		if len(batch) > 0 {
			r.write(batch)
			// The sink may keep the slice: start a new one.
			batch = make([]Record, 0, r.opts.BatchSize)
		}
	}
	for {
		select {
		case rec, ok := <-r.queue:
			if !ok {
				flush()
				return
			}
			batch = append(batch, rec)
			if len(batch) >= r.opts.BatchSize {
				flush()
			}
		case <-tick.C:
			flush()
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
			return
		}
		r.log.Warn("writing execution records failed", "records", len(batch), "try", try, "err", err)
	}
	r.log.Error("execution records lost", "records", len(batch), "first_id", batch[0].ID, "err", err)
}
