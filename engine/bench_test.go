package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/egress/egresstest"
)

// The benchmarks compare the executor (validation, auth, execution
// records, metrics on) with a plain net/http GET of the same request to
// the same loopback upstream; the target is executor p50 ≤ 1.3× direct:
//
//	go test -bench . -run '^$' ./engine/

func benchUpstream(b *testing.B) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":{"items":[{"id":1,"name":"字节跳动"},{"id":2,"name":"腾讯科技"}]},"total":2}`)
	}))
	b.Cleanup(s.Close)
	return s
}

type discardSink struct{}

func (discardSink) WriteRecords(context.Context, []Record) error { return nil }

// benchExecute returns one executor call with validation, auth, execution
// records and metrics on.
func benchExecute(b *testing.B, base string) func() {
	p := mustPlugin(b, `{"name":"search_company_basic","description":"d",
	  "parameters":{"type":"object","properties":{"keyword":{"type":"string"},"page_index":{"type":"integer","default":1}},"required":["keyword"]},
	  "execution":{"method":"GET","base_url":"%s/ECIV4/Search","param_placement":"query"},
	  "auth_config":{"type":"api_key","mapping":[{"source":"QCC_KEY","target":"Token","location":"header"}]}}`, base)
	ex := NewExecutor(egresstest.Client(b))
	ex.Logger = slog.New(slog.DiscardHandler)
	ex.Recorder = NewRecorder(discardSink{}, RecorderOptions{})
	b.Cleanup(func() { ex.Recorder.Close(context.Background()) })
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	ex.Metrics = m
	call := Call{
		Plugin:      p,
		Arguments:   json.RawMessage(`{"keyword":"字节跳动"}`),
		Credentials: map[string]string{"QCC_KEY": "bench-key-0123456789"},
		UserID:      1,
	}
	return func() {
		res, err := ex.Execute(context.Background(), call)
		if err != nil || !res.OK {
			b.Fatalf("%v %+v", err, res.Error)
		}
	}
}

// benchDirect returns the same GET made with plain net/http.
func benchDirect(b *testing.B, base string) func() {
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	b.Cleanup(client.CloseIdleConnections)
	url := base + "/ECIV4/Search?keyword=%E5%AD%97%E8%8A%82%E8%B7%B3%E5%8A%A8"
	return func() {
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Token", "bench-key-0123456789")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, DefaultMaxResponseBytes))
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(body) == 0 {
			b.Fatal(err, resp.StatusCode)
		}
	}
}

func BenchmarkExecute(b *testing.B) { measure(b, benchExecute(b, benchUpstream(b).URL)) }

func BenchmarkDirect(b *testing.B) { measure(b, benchDirect(b, benchUpstream(b).URL)) }

// BenchmarkExecuteVsDirect alternates the two, so that a load change on a
// shared machine hits both alike, and reports p50 of each and their ratio
// (the target: at most 1.3).
func BenchmarkExecuteVsDirect(b *testing.B) {
	base := benchUpstream(b).URL
	exec, direct := benchExecute(b, base), benchDirect(b, base)
	var le, ld []time.Duration
	for b.Loop() {
		start := time.Now()
		exec()
		mid := time.Now()
		direct()
		le, ld = append(le, mid.Sub(start)), append(ld, time.Since(mid))
	}
	pe, pd := p50(le), p50(ld)
	b.ReportMetric(float64(pe.Nanoseconds()), "exec-p50-ns")
	b.ReportMetric(float64(pd.Nanoseconds()), "direct-p50-ns")
	b.ReportMetric(float64(pe)/float64(pd), "p50-ratio")
}

func p50(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// measure runs op b.N times and reports p50 and p99 beside the mean.
func measure(b *testing.B, op func()) {
	b.ReportAllocs()
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		op()
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}
