package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/plugins"
)

// Issue 3, point 7: every call leaves a record (refused ones too) with
// plugin, user, run, status, HTTP status, latency, attempts and error
// class, never a credential; metrics count calls per plugin and outcome.
func TestExecutionRecords(t *testing.T) {
	up := newUpstream(t, nil)
	failingUp := newUpstream(t, respond(503, "text/plain", []byte("down, key="+secretKey)))
	doc := `{"name":"%NAME","description":"d","parameters":{"type":"object","properties":{"q":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/r","retry":{"max_attempts":2,"backoff_ms":1}},
	  "auth_config":{"type":"api_key","mapping":[{"source":"KEY","target":"key","location":"query"}]}}`
	okPlugin := mustPlugin(t, strings.ReplaceAll(doc, "%NAME", "lookup"), up.URL)
	badPlugin := mustPlugin(t, strings.ReplaceAll(doc, "%NAME", "flaky"), failingUp.URL)
	disabled := mustPlugin(t, strings.ReplaceAll(doc, "%NAME", "off"), up.URL)
	disabled.Status = "1"
	for _, p := range []*plugins.Plugin{okPlugin, badPlugin, disabled} {
		p.Catalog = true // labelled by name, as plugins loaded from the catalog are
	}

	h := newHarness(t)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	h.Metrics = m
	creds := map[string]string{"KEY": secretKey}
	calls := []struct {
		p    Call
		want Record
	}{
		{Call{Plugin: okPlugin, Arguments: json.RawMessage(`{"q":"a"}`), Credentials: creds, UserID: 7, RunID: "run-1"},
			Record{PluginName: "lookup", UserID: 7, RunID: "run-1", Status: StatusOK, HTTPStatus: 200, Attempts: 1}},
		{Call{Plugin: badPlugin, Arguments: json.RawMessage(`{}`), Credentials: creds, UserID: 8},
			Record{PluginName: "flaky", UserID: 8, Status: StatusError, HTTPStatus: 503, Attempts: 2, ErrorClass: CodeHTTPError}},
		{Call{Plugin: okPlugin, Arguments: json.RawMessage(`{"q":1}`), Credentials: creds},
			Record{PluginName: "lookup", Status: StatusRefused, ErrorClass: CodeInvalidArguments}},
		{Call{Plugin: okPlugin, Arguments: json.RawMessage(`{}`), UserID: 9},
			Record{PluginName: "lookup", UserID: 9, Status: StatusRefused, ErrorClass: CodeMissingCredentials}},
		{Call{Plugin: disabled, Arguments: json.RawMessage(`{}`), Credentials: creds},
			Record{PluginName: "off", Status: StatusRefused, ErrorClass: CodePluginDisabled}},
	}
	ids := map[string]Record{}
	for _, c := range calls {
		res, _ := h.Execute(context.Background(), c.p)
		c.want.ID = res.ExecutionID
		ids[res.ExecutionID] = c.want
	}
	recs := h.flush(t)
	if len(recs) != len(calls) {
		t.Fatalf("%d records for %d calls", len(recs), len(calls))
	}
	for _, r := range recs {
		want, ok := ids[r.ID]
		if !ok {
			t.Fatalf("record %s matches no call", r.ID)
		}
		if r.PluginName != want.PluginName || r.UserID != want.UserID || r.RunID != want.RunID || r.Status != want.Status ||
			r.HTTPStatus != want.HTTPStatus || r.Attempts != want.Attempts || r.ErrorClass != want.ErrorClass {
			t.Errorf("record %+v\nwant   %+v", r, want)
		}
		if r.CreatedAt.IsZero() || time.Since(r.CreatedAt) > time.Minute || (r.Status != StatusOK) != (r.ErrorMessage != "") {
			t.Errorf("record %+v", r)
		}
	}
	logs := h.logs.String()
	if n := strings.Count(logs, `msg="tool call"`); n != len(calls) {
		t.Errorf("%d log lines for %d calls:\n%s", n, len(calls), logs)
	}
	for _, want := range []string{"plugin=lookup user=7 run=run-1", "status=ok", "status=error code=http_error http_status=503", "status=refused code=invalid_arguments"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	if f := leaked(fmt.Sprintf("%+v", recs)+logs, secretKey); f != nil {
		t.Fatalf("secret %q in records or logs", f)
	}

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := s.GetCounter().GetValue()
			if h := s.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			got[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = fmt.Sprint(v)
		}
	}
	want := map[string]string{}
	for _, series := range []string{"outcome=ok,plugin=lookup", "outcome=http_error,plugin=flaky",
		"outcome=invalid_arguments,plugin=lookup", "outcome=missing_credentials,plugin=lookup", "outcome=plugin_disabled,plugin=off"} {
		want["blindexec_tool_calls_total{"+series+"}"] = "1"
		want["blindexec_tool_call_duration_seconds{"+series+"}"] = "1"
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("metrics\n got %v\nwant %v", got, want)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("registering twice on one registry succeeded")
	}
}

// Issue 3, point 7: records are batched off the request path; a full
// queue makes Record wait rather than drop; a failed write is retried;
// Close writes everything queued.
func TestRecorderLosesNothing(t *testing.T) {
	sink := &memSink{fail: 1} // the first write fails and is retried
	r := NewRecorder(sink, RecorderOptions{BatchSize: 64, Buffer: 8, FlushInterval: time.Hour, Logger: discardLogger()})
	const n = 1000
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range n / 4 {
				r.Record(Record{ID: fmt.Sprintf("%d-%d", w, i)})
			}
		})
	}
	wg.Wait()
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, rec := range sink.records() {
		seen[rec.ID] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct records written, want %d", len(seen), n)
	}
	r.Record(Record{ID: "late"}) // logged, not a panic
}

func TestRecorderFlushesOnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // a fake clock: no real waiting
		sink := &memSink{}
		r := NewRecorder(sink, RecorderOptions{})
		defer r.Close(context.Background())
		r.Record(Record{ID: "one"})
		time.Sleep(199 * time.Millisecond)
		synctest.Wait()
		if len(sink.records()) != 0 {
			t.Fatal("flushed a partial batch before the interval")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if len(sink.records()) != 1 {
			t.Fatal("a lone record was not flushed at the 200ms interval")
		}
	})
}

// heldSink holds its first write until release is closed, and says which
// records reached it.
type heldSink struct {
	memSink
	release chan struct{}
	first   sync.Once
}

func (s *heldSink) WriteRecords(ctx context.Context, recs []Record) error {
	hold := false
	s.first.Do(func() { hold = true })
	s.memSink.WriteRecords(ctx, recs)
	if hold {
		<-s.release
	}
	return nil
}

// Issue 15: with InFlight 2, a batch reaches the sink while the previous
// write still runs (the spool appends it during the previous fsync); with
// 1, it waits for it.
func TestRecorderInFlight(t *testing.T) {
	for _, tc := range []struct {
		inFlight int
		want     int // records in the sink while the first write is held
	}{{1, 1}, {2, 2}} {
		t.Run(fmt.Sprint(tc.inFlight), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := &heldSink{release: make(chan struct{})}
				r := NewRecorder(sink, RecorderOptions{BatchSize: 1, InFlight: tc.inFlight, Logger: discardLogger()})
				r.Record(Record{ID: "a"})
				synctest.Wait() // a's write is held
				r.Record(Record{ID: "b"})
				synctest.Wait()
				if got := len(sink.records()); got != tc.want {
					t.Fatalf("%d records in the sink while the first write runs, want %d", got, tc.want)
				}
				close(sink.release)
				if err := r.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				if got := len(sink.records()); got != 2 {
					t.Fatalf("%d records written, want 2", got)
				}
			})
		})
	}
}

// fullSink is a sink out of room, as the record spool is when the
// database has been away too long.
type fullSink struct{ memSink }

func (*fullSink) Admit() error { return fmt.Errorf("spool full") }

// Issue 15, point 2: a call that could not be recorded is not made.
func TestNoCallWithoutRoomForItsRecord(t *testing.T) {
	up := newUpstream(t, nil)
	p := mustPlugin(t, `{"name":"lookup","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"%s/r"}}`, up.URL)
	h := newHarness(t)
	sink := &fullSink{}
	h.Recorder = NewRecorder(sink, RecorderOptions{Logger: h.Logger})
	res, err := h.Execute(context.Background(), Call{Plugin: p, Arguments: json.RawMessage(`{}`)})
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Code != CodeRecordsUnavailable || res.Error == nil || res.Error.Code != CodeRecordsUnavailable {
		t.Fatalf("Execute = %+v, %v; want a records_unavailable refusal", res, err)
	}
	if err := h.Recorder.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(up.Hits()) != 0 || len(sink.records()) != 0 {
		t.Errorf("%d requests sent and %d records written, want none", len(up.Hits()), len(sink.records()))
	}
}

// Issue 15, point 3: a call canceled at shutdown is recorded, saying why.
func TestCanceledCallRecordsTheCause(t *testing.T) {
	started := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})
	p := mustPlugin(t, `{"name":"slow","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"%s/r"}}`, up.URL)
	h := newHarness(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-started
		cancel(errors.New("the engine is shutting down"))
	}()
	res, _ := h.Execute(ctx, Call{Plugin: p, Arguments: json.RawMessage(`{}`)})
	recs := h.flush(t)
	if len(recs) != 1 || recs[0].ID != res.ExecutionID || recs[0].Status != StatusError ||
		recs[0].ErrorMessage != "the call was canceled: the engine is shutting down" {
		t.Fatalf("records %+v, want the canceled call with its cause", recs)
	}
}

// A sink that refuses writes (the database itself, under mcp serve
// --stdio or the CLI, during an outage) loses no record: the records of
// calls made are kept and written once it takes them again, and
// meanwhile no call is made. Before, each batch was tried twice, then
// dropped, while calls went on.
func TestRecorderKeepsRecordsWhileSinkDown(t *testing.T) {
	up := newUpstream(t, nil)
	p := mustPlugin(t, `{"name":"lookup","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"%s/r"}}`, up.URL)
	h := newHarness(t)
	sink := &memSink{fail: 5} // five writes refused: the outage
	h.Recorder = NewRecorder(sink, RecorderOptions{FlushInterval: 5 * time.Millisecond, Logger: h.Logger})
	call := Call{Plugin: p, Arguments: json.RawMessage(`{}`)}
	first, err := h.Execute(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	refusedOnce := false
	for deadline := time.Now().Add(5 * time.Second); len(sink.records()) == 0 && time.Now().Before(deadline); {
		if !refusedOnce && h.Recorder.Admit() != nil {
			refusedOnce = true
			res, err := h.Execute(context.Background(), call)
			var refused *RefusedError
			if !errors.As(err, &refused) || refused.Code != CodeRecordsUnavailable || !strings.Contains(res.Error.Message, "sink down") {
				t.Errorf("a call while the records are not written: %+v, %v; want records_unavailable saying why", res.Error, err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	if !refusedOnce {
		t.Error("calls were admitted while the sink refused every write")
	}
	recs := sink.records()
	if len(recs) != 1 || recs[0].ID != first.ExecutionID {
		t.Fatalf("records written once the sink is back: %+v, want the first call's", recs)
	}
	if err := h.Recorder.Admit(); err != nil {
		t.Errorf("calls still refused once the records are written: %v", err)
	}
	if len(up.Hits()) != 1 {
		t.Errorf("%d requests sent, want the first call's only", len(up.Hits()))
	}
	if err := h.Recorder.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
