// Command bench measures blindexec side by side in one run and prints
// ratios: the engine against a direct call to the same upstream.
//
//	go run ./bench            # everything
//	go run ./bench -only exec # one group
//
// Every upstream runs on loopback in this process.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/egress"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

func main() {
	var (
		only     = flag.String("only", "", "run only this group (exec)")
		n        = flag.Int("n", 3000, "calls per latency measurement (concurrency 1)")
		dur      = flag.Duration("d", 3*time.Second, "duration of each throughput measurement")
		conc     = flag.Int("c", 32, "concurrency of the throughput measurement")
		warmupN  = flag.Int("warmup", 300, "warm-up calls before each measurement")
		verbose  = flag.Bool("v", false, "log engine output")
		groups   = map[string]func(context.Context, benchOpts) error{"exec": benchExec}
		selected []string
	)
	flag.Parse()
	if !*verbose {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	for name := range groups {
		if *only == "" || *only == name {
			selected = append(selected, name)
		}
	}
	if len(selected) == 0 {
		fmt.Fprintf(os.Stderr, "bench: no group %q\n", *only)
		os.Exit(2)
	}
	sort.Strings(selected)
	fmt.Printf("blindexec bench: %s, %d CPUs, GOMAXPROCS %d\n\n", runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	opts := benchOpts{n: *n, dur: *dur, conc: *conc, warmup: *warmupN}
	for _, name := range selected {
		if err := groups[name](context.Background(), opts); err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: %v\n", name, err)
			os.Exit(1)
		}
	}
}

type benchOpts struct {
	n, conc, warmup int
	dur             time.Duration
}

// subject is one way of making the same call.
type subject struct {
	name string
	call func(ctx context.Context) error
}

type figures struct {
	p50, p99 time.Duration
	rps      float64
}

// latency runs call n times one after another and returns p50 and p99.
func latency(ctx context.Context, s subject, o benchOpts) (p50, p99 time.Duration, err error) {
	for i := 0; i < o.warmup; i++ {
		if err := s.call(ctx); err != nil {
			return 0, 0, err
		}
	}
	d := make([]time.Duration, o.n)
	for i := range d {
		t0 := time.Now()
		if err := s.call(ctx); err != nil {
			return 0, 0, err
		}
		d[i] = time.Since(t0)
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[len(d)*99/100], nil
}

// throughput runs call from conc goroutines for dur and returns calls/s.
func throughput(ctx context.Context, s subject, o benchOpts) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, o.dur)
	defer cancel()
	var done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := 0; i < o.conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := s.call(ctx); err != nil {
					if ctx.Err() == nil {
						once.Do(func() { firstErr = err })
					}
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(t0).Seconds(), firstErr
}

func measure(ctx context.Context, subjects []subject, o benchOpts) ([]figures, error) {
	out := make([]figures, len(subjects))
	for i, s := range subjects {
		p50, p99, err := latency(ctx, s, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		rps, err := throughput(ctx, s, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		out[i] = figures{p50, p99, rps}
	}
	return out, nil
}

func printTable(title string, subjects []subject, f []figures, conc int) {
	fmt.Println(title)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "subject\tp50\tp99\tp50 ×direct\tp99 ×direct\treq/s @%d\treq/s %% of direct\t\n", conc)
	for i, s := range subjects {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%.0f\t%.0f%%\t\n", s.name,
			round(f[i].p50), round(f[i].p99),
			float64(f[i].p50)/float64(f[0].p50), float64(f[i].p99)/float64(f[0].p99),
			f[i].rps, 100*f[i].rps/f[0].rps)
	}
	tw.Flush()
	fmt.Println()
}

func round(d time.Duration) time.Duration {
	if d > time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// benchExec compares one GET with a query argument and an API key header:
// direct net/http, the in-process executor (validation, credentials,
// records on) and POST /v1/execute over HTTP.
func benchExec(ctx context.Context, o benchOpts) error {
	body := []byte(`{"Status":"200","Result":[{"Name":"北京字节跳动科技有限公司","OperName":"张利东","StartDate":"2012-03-09"}]}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Token") == "" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer up.Close()

	dir, err := os.MkdirTemp("", "blindexec-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "bench.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	key := make([]byte, 32)
	rand.Read(key)
	kr, err := auth.ParseKeyring(base64.StdEncoding.EncodeToString(key), "")
	if err != nil {
		return err
	}
	creds := auth.NewCredentialService(st, kr)
	creds.CacheTTL = 10 * time.Second // the engine's default
	if err := creds.Set(ctx, 7, "QCC_KEY", "sk-bench-0123456789", "bench"); err != nil {
		return err
	}
	policy, err := egress.ParsePolicy("127.0.0.0/8")
	if err != nil {
		return err
	}
	rec := engine.NewRecorder(api.StoreSink{Store: st}, engine.RecorderOptions{})
	defer rec.Close(context.Background())
	ex := engine.NewExecutor(egress.NewClient(&egress.Dialer{Policy: policy}))
	ex.Credentials, ex.Recorder = creds, rec

	doc := `{"name":"search_company_basic","description":"search","parameters":{"type":"object","required":["keyword"],
	"properties":{"keyword":{"type":"string"},"page_index":{"type":"integer","default":1}}},
	"execution":{"method":"GET","base_url":"` + up.URL + `/ECIV4/Search","param_placement":"query"},
	"auth_config":{"type":"api_key","mapping":[{"source":"QCC_KEY","target":"Token","location":"header"}]}}`
	p, err := plugins.Parse([]byte(doc))
	if err != nil {
		return err
	}
	row, err := store.RowFromPlugin(p)
	if err != nil {
		return err
	}
	if err := st.CreatePlugin(ctx, row); err != nil {
		return err
	}
	srv := httptest.NewServer((&api.Server{Store: st, Creds: creds, Executor: ex, ServiceToken: "bench-service"}).Handler())
	defer srv.Close()

	direct := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	directURL := up.URL + "/ECIV4/Search?keyword=" + "%E5%AD%97%E8%8A%82%E8%B7%B3%E5%8A%A8&page_index=1"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	execStored := `{"name":"search_company_basic","arguments":{"keyword":"字节跳动"},"user_id":7}`
	execInline := `{"plugin":` + doc + `,"arguments":{"keyword":"字节跳动"},"credentials":{"QCC_KEY":"sk-bench-0123456789"}}`
	args := []byte(`{"keyword":"字节跳动"}`)
	payload := map[string]string{"QCC_KEY": "sk-bench-0123456789"}
	execute := func(ctx context.Context, call engine.Call) error {
		res, err := ex.Execute(ctx, call)
		if err != nil {
			return err
		}
		if !res.OK {
			return fmt.Errorf("call failed: %s", res.Error.Message)
		}
		return nil
	}
	post := func(ctx context.Context, body string) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/execute", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer bench-service")
		return drain(client.Do(req))
	}

	subjects := []subject{
		{"direct net/http", func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, "GET", directURL, nil)
			req.Header.Set("Token", "sk-bench-0123456789")
			return drain(direct.Do(req))
		}},
		{"executor, payload credentials", func(ctx context.Context) error {
			return execute(ctx, engine.Call{Plugin: p, Arguments: args, Credentials: payload})
		}},
		{"executor, stored credentials", func(ctx context.Context) error {
			return execute(ctx, engine.Call{Plugin: p, Arguments: args, UserID: 7})
		}},
		{"/v1/execute, inline plugin+credentials", func(ctx context.Context) error { return post(ctx, execInline) }},
		{"/v1/execute, catalog+stored credentials", func(ctx context.Context) error { return post(ctx, execStored) }},
	}
	f, err := measure(ctx, subjects, o)
	if err != nil {
		return err
	}
	printTable("== blind execution: GET with a query argument and an API key (loopback upstream)", subjects, f, o.conc)
	return nil
}

func drain(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}
