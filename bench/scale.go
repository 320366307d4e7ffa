package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/plugins"
)

// benchScale is issue 19's point 4, in one process of the engine:
// -scale-sessions MCP sessions open at once on /mcp (their clients in a
// child process, so that the memory measured is the server's), with the
// p99 of a call spread over all of them; -scale-runs streaming LLM runs
// at once against the scripted model (engine time per step, memory); and,
// with BLINDEXEC_TEST_MYSQL_DSN, execution records sustained on MariaDB at
// the engine's full call rate. Not in the default run: -only scale.
func benchScale(ctx context.Context, o benchOpts) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := scaleSessions(ctx, o, self); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	if err := withTB(func(tb *benchTB) error { return scaleRuns(ctx, o, tb) }); err != nil {
		return fmt.Errorf("runs: %w", err)
	}
	if os.Getenv("BLINDEXEC_TEST_MYSQL_DSN") == "" {
		fmt.Println("== records sustained on MariaDB: skipped (set BLINDEXEC_TEST_MYSQL_DSN)")
		return nil
	}
	if err := scaleRecords(ctx, o); err != nil {
		return fmt.Errorf("records: %w", err)
	}
	return nil
}

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// gatewayFixture is the engine of the gateway group on SQLite, served over
// HTTP, with user 7's token.
type gatewayFixture struct {
	e     *env
	p     *plugins.Plugin
	up    *httptest.Server
	srv   *httptest.Server
	token string
}

func newGatewayFixture(ctx context.Context, dsn string) (_ *gatewayFixture, err error) {
	f := &gatewayFixture{up: companyUpstream()}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	if f.e, err = newEnvOn(ctx, dsn, nil); err != nil {
		return nil, err
	}
	if err := f.e.creds.Set(ctx, gatewayUser, "QCC_KEY", gatewayAPIKey, "bench"); err != nil {
		return nil, err
	}
	if f.p, err = plugins.Parse([]byte(companyPlugin(f.up.URL))); err != nil {
		return nil, err
	}
	row, err := catalog.RowFromPlugin(f.p)
	if err != nil {
		return nil, err
	}
	if err := f.e.st.CreatePlugin(ctx, row); err != nil {
		return nil, err
	}
	if f.token, _, err = api.IssueToken(ctx, f.e.st, gatewayUser, "bench-scale", 0, ""); err != nil {
		return nil, err
	}
	if _, err := f.e.changes.Poll(ctx); err != nil {
		return nil, err
	}
	// The scale group opens all its sessions as one user: the caps
	// (32 a user by default) would end all but the last ones.
	f.srv = httptest.NewServer((&api.Server{Store: f.e.st, Creds: f.e.creds, Executor: f.e.ex, Changes: f.e.changes,
		MCP: &api.MCPConfig{Sessions: mcpserver.SessionLimits{PerUser: 1 << 20, Total: 1 << 20}}}).Handler())
	return f, nil
}

func (f *gatewayFixture) close() {
	if f.srv != nil {
		f.srv.Close()
	}
	if f.e != nil {
		f.e.close()
	}
	f.up.Close()
}

func scaleSessions(ctx context.Context, o benchOpts, self string) error {
	f, err := newGatewayFixture(ctx, "")
	if err != nil {
		return err
	}
	defer f.close()
	rc, err := startRemoteClient(ctx, self, gatewaySpec{Kind: "mcp-http", URL: f.srv.URL + "/mcp", Token: f.token})
	if err != nil {
		return err
	}
	defer rc.close()
	if _, err := rc.do(remoteOp{Op: "warmup", N: 50}); err != nil {
		return err
	}
	g0, h0 := runtime.NumGoroutine(), heapInUse()
	t0 := time.Now()
	if _, err := rc.do(remoteOp{Op: "sessions", N: o.scaleSessions}); err != nil {
		return err
	}
	opened := time.Since(t0)
	g1, h1 := runtime.NumGoroutine(), heapInUse()
	a, err := rc.do(remoteOp{Op: "spread", N: max(o.n, o.scaleSessions)})
	if err != nil {
		return err
	}
	lat := a.Latencies
	sortDurations(lat)
	fmt.Printf("== %d MCP sessions open at once on /mcp (streamable HTTP, per-user token; clients in a child process)\n", o.scaleSessions)
	fmt.Printf("   opened in %s; server heap %+.1f kB and %+.1f goroutines per session; a call spread over all of them:\n",
		opened.Round(time.Millisecond), (float64(h1)-float64(h0))/1024/float64(o.scaleSessions), float64(g1-g0)/float64(o.scaleSessions))
	fmt.Printf("   p50 %s, p99 %s over %d calls, one after another, each on the next session\n\n",
		round(quantile(lat, .5)), round(quantile(lat, .99)), len(lat))
	return nil
}

// runClock adds up, per run, the time spent in round trips (model and
// upstream), the body read to its end included: the run's counter rides
// in the request's context.
type runClock struct{ next http.RoundTripper }

type runClockKey struct{}

func (t runClock) RoundTrip(r *http.Request) (*http.Response, error) {
	c, _ := r.Context().Value(runClockKey{}).(*atomic.Int64)
	t0 := time.Now()
	resp, err := readThrough(t.next, r)
	if c != nil {
		c.Add(int64(time.Since(t0)))
	}
	return resp, err
}

func scaleRuns(ctx context.Context, o benchOpts, tb *benchTB) error {
	up := companyUpstream()
	defer up.Close()
	e, err := newEnv(ctx, func(next http.RoundTripper) http.RoundTripper { return runClock{next} })
	if err != nil {
		return err
	}
	defer e.close()
	p, err := plugins.Parse([]byte(companyPlugin(up.URL)))
	if err != nil {
		return err
	}
	if err := e.creds.Set(ctx, gatewayUser, "QCC_KEY", gatewayAPIKey, "bench"); err != nil {
		return err
	}
	n := o.scaleRuns
	// One scripted model per run: a shared script would hand one run's
	// answer to another's first turn.
	models := make([]*openaitest.Server, n)
	runners := make([]*loop.Runner, n)
	for i := range models {
		models[i] = openaitest.New(tb)
		cfg := models[i].Config()
		cfg.HTTPClient = &http.Client{Transport: runClock{cfg.HTTPClient.(*http.Client).Transport}}
		runners[i] = &loop.Runner{Client: loop.NewClient(cfg), Executor: e.ex, DefaultModel: "gpt-bench", LLMTimeout: time.Minute}
	}
	usage := openai.Usage{PromptTokens: 180, CompletionTokens: 24, TotalTokens: 204}
	answer := "北京字节跳动科技有限公司的法定代表人是张利东，成立于2012年3月9日。需要我继续查询它的股东或变更记录吗？"
	req := loop.Request{UserID: gatewayUser, Options: loop.Options{Stream: true}, Plugins: []*plugins.Plugin{p},
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "查一下字节跳动的工商信息"}}}
	waves := max(o.scaleWaves, 1)
	var steps []time.Duration
	var peak uint64
	h0 := heapInUse()
	for w := range waves + 1 { // the first wave warms up
		for _, m := range models {
			m.Script(
				openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: gatewayTool, Arguments: `{"keyword":"` + gatewayKeyword + `"}`}}, Usage: usage, Chunk: 4},
				openaitest.Turn{Content: answer, Usage: usage, Chunk: 4},
			)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		stop := make(chan struct{})
		go func() { // the heap's peak while the runs are in flight
			var m runtime.MemStats
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
					runtime.ReadMemStats(&m)
					mu.Lock()
					peak = max(peak, m.HeapInuse)
					mu.Unlock()
				}
			}
		}()
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outside := new(atomic.Int64)
				rctx := context.WithValue(ctx, runClockKey{}, outside)
				<-start
				t0 := time.Now()
				reply := runners[i].Run(rctx, req, nil)
				took := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				if reply.Status != loop.StatusCompleted || len(reply.Steps) != 1 {
					if firstErr == nil {
						firstErr = fmt.Errorf("run ended %s with %d steps, error %v", reply.Status, len(reply.Steps), reply.Error)
					}
					return
				}
				if w > 0 { // two steps a run: the tool step and the answer step
					per := (took - time.Duration(outside.Load())) / 2
					steps = append(steps, per, per)
				}
			}()
		}
		close(start)
		wg.Wait()
		close(stop)
		if firstErr != nil {
			return firstErr
		}
	}
	sortDurations(steps)
	fmt.Printf("== %d streaming LLM runs at once (scripted model, one per run; %d waves after a warm-up wave; 2 steps a run)\n", n, waves)
	fmt.Printf("   engine time per step (run wall time − its model and upstream round trips, halved): p50 %s, p99 %s\n",
		round(quantile(steps, .5)), round(quantile(steps, .99)))
	fmt.Printf("   heap in use: %s before, %s at the peak of a wave: %.0f kB per run in flight (the scripted models included)\n\n",
		mb(h0), mb(peak), (float64(peak)-float64(h0))/1024/float64(n))
	return nil
}

func scaleRecords(ctx context.Context, o benchOpts) error {
	dsn, drop, err := gatewayDatabase(ctx, "blindexec_bench_scale")
	if err != nil {
		return err
	}
	defer drop()
	f, err := newGatewayFixture(ctx, dsn)
	if err != nil {
		return err
	}
	defer f.close()
	call, closeFn, err := gatewaySpec{Kind: "post", URL: f.srv.URL + "/v1/execute", Token: f.token,
		Body: `{"name":"` + gatewayTool + `","arguments":{"keyword":"` + gatewayKeyword + `"}}`}.dial(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	cfg, _ := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql:"))
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	count := func() (n int64, err error) {
		err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sys_ai_execution").Scan(&n)
		return n, err
	}
	s := subject{name: "POST /v1/execute", call: call}
	if err := s.warmup(ctx, o.warmup); err != nil {
		return err
	}
	before, err := count()
	if err != nil {
		return err
	}
	calls, took, err := s.throughput(ctx, o.gatewayConc, o.scaleRecordsFor)
	if err != nil {
		return err
	}
	stopped := time.Now()
	var written int64
	for {
		n, err := count()
		if err != nil {
			return err
		}
		if written = n - before; written >= calls || time.Since(stopped) > time.Minute {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	lag := time.Since(stopped)
	fmt.Printf("== execution records on MariaDB (same machine) at the engine's full rate: POST /v1/execute at concurrency %d for %s\n",
		o.gatewayConc, o.scaleRecordsFor)
	fmt.Printf("   %d calls, %.0f calls/s; %d records written (%s), the last %s after the load stopped: %.0f records/s sustained\n\n",
		calls, float64(calls)/took.Seconds(), written, verdict(written >= calls), lag.Round(time.Millisecond),
		float64(written)/(took+lag).Seconds())
	return nil
}
