package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/engine"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/mcpimport"
)

// probe is one hostile request and the answer it must get.
type probe struct {
	name string
	n    int                             // requests measured
	do   func(ctx context.Context) error // nil: refused as expected
}

// benchHostile measures what refusing hostile input costs: per request,
// the latency and the CPU of the whole process (client and server on
// loopback), beside an ordinary call; then the size of /metrics after
// 20,000 distinct inline plugin names, and how long slow bodies hold a
// connection.
func benchHostile(ctx context.Context, o benchOpts) error {
	up := companyUpstream()
	defer up.Close()
	e, err := newEnv(ctx, nil)
	if err != nil {
		return err
	}
	defer e.close()
	_, err = e.addCompanyPlugin(ctx, up.URL, 7, "sk-bench-0123456789")
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	if e.ex.Metrics, err = engine.NewMetrics(reg); err != nil {
		return err
	}
	e.ex.Limiter = &engine.UserLimiter{MaxCalls: 16, MaxRuns: 4}
	s := &api.Server{Store: e.st, Creds: e.creds, Executor: e.ex, ServiceToken: "bench-service", AdminToken: "bench-admin",
		Registry: reg, Changes: e.changes, Deadlines: api.Deadlines{Body: time.Second}}
	if _, err := e.changes.Poll(ctx); err != nil {
		return err
	}
	m := enginemcp.NewManager(e.st, e.client())
	defer m.Close()
	s.MCP = &api.MCPConfig{Manager: m} // serves /v1/tools/{name}/call
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	mcpRefused := func(schema any) func(context.Context) error {
		return func(context.Context) error {
			if _, _, err := mcpimport.Parameters(schema, 0); err == nil {
				return fmt.Errorf("inputSchema accepted")
			}
			return nil
		}
	}
	held := make([]func(), 16)
	for i := range held {
		if held[i], err = e.ex.Limiter.AcquireCall(9); err != nil {
			return err
		}
	}
	defer func() {
		for _, r := range held {
			r()
		}
	}()
	dotPath := mustParse(`{"name":"repo","description":"d","parameters":{"type":"object","properties":{"id":{"type":"string"}}},
		"execution":{"method":"GET","base_url":"` + up.URL + `/users/{id}"}}`)

	var probes []probe
	for _, r := range hostileRequests(hostileTarget{tool: "search_company_basic", user: 7, heldUser: 9, limit: 16, upstream: up.URL}) {
		probes = append(probes, probe{r.name, r.n, func(ctx context.Context) error { return r.send(ctx, client, srv.URL, "bench-service") }})
	}
	for _, sc := range hostileSchemas() {
		probes = append(probes, probe{"MCP inputSchema, " + sc.name + " (tool refused)", 100, mcpRefused(sc.schema)})
	}
	probes = append(probes, []probe{
		{"executor, path value %2e%2e (refused)", 300, func(ctx context.Context) error {
			_, err := e.ex.Execute(ctx, engine.Call{Plugin: dotPath, Arguments: []byte(`{"id":"%2e%2e"}`)})
			if err == nil {
				return fmt.Errorf("sent")
			}
			return nil
		}},
	}...)
	fmt.Println("== hostile input: what a refusal costs (loopback, client and server in this process)")
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "request\tn\tp50\tp99\tCPU per request\t\n")
	for _, pr := range probes {
		if err := pr.do(ctx); err != nil { // warm-up, and the answer checked
			return fmt.Errorf("%s: %w", pr.name, err)
		}
		d := make([]time.Duration, pr.n)
		cpu0 := cpuTime()
		for i := range d {
			t0 := time.Now()
			if err := pr.do(ctx); err != nil {
				return fmt.Errorf("%s: %w", pr.name, err)
			}
			d[i] = time.Since(t0)
		}
		cpu := (cpuTime() - cpu0) / time.Duration(pr.n)
		sortDurations(d)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t\n", pr.name, pr.n, round(quantile(d, .5)), round(quantile(d, .99)), round(cpu))
	}
	tw.Flush()
	fmt.Println()

	if err := benchMetricsCardinality(ctx, e.ex, reg, up.URL); err != nil {
		return err
	}
	return benchSlowBodies(srv.URL, 200, time.Second)
}

func mustParse(doc string) *plugins.Plugin {
	p, err := plugins.Parse([]byte(doc))
	if err != nil {
		panic(err)
	}
	return p
}

// hostileTarget is what issue 13's HTTP attacks are aimed at: a catalog
// tool taking string arguments that user may call, a user whose calls in
// flight are at the limit per user, and an upstream for inline plugins.
type hostileTarget struct {
	tool           string
	user, heldUser int64
	limit          int
	upstream       string
}

// hostileRequest is one of issue 13's attacks over HTTP and the status of
// its refusal; the first of hostileRequests is an ordinary call, for scale.
type hostileRequest struct {
	name       string
	n          int // requests measured
	path, body string
	status     int
}

// hostileRequests are issue 13's attacks that arrive over HTTP; the bench
// sends them to an in-process server, the fault runner to serve.
func hostileRequests(t hostileTarget) []hostileRequest {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	args := func(a string) string {
		return fmt.Sprintf(`{"name":%q,"user_id":%d,"arguments":%s}`, t.tool, t.user, a)
	}
	manyProps := func(n int) string {
		b, _ := json.Marshal(stringProps(n))
		return string(b)
	}
	inline := func(params string) string {
		return `{"plugin":{"name":"big","description":"d","parameters":` + params +
			`,"execution":{"method":"GET","base_url":"` + t.upstream + `/x"}},"arguments":{}}`
	}
	return []hostileRequest{
		{"reference: /v1/execute, an ordinary call (200)", 300, "/v1/execute", args(`{"keyword":"字节跳动"}`), 200},
		{"/v1/execute, arguments 100,000 deep, 200 KB (400, body scan)", 100, "/v1/execute", args(`{"keyword":` + nest(100_000) + `}`), 400},
		{"/v1/execute, arguments 65 deep (422, executor)", 300, "/v1/execute", args(`{"keyword":` + nest(64) + `}`), 422},
		{"/v1/execute, arguments of 100,001 elements, 200 KB (422, executor)", 100, "/v1/execute", args(`{"keyword":[` + strings.Repeat("0,", 100_000) + `0]}`), 422},
		{"/v1/tools/{name}/call, 10,000 deep, 20 KB (400, body scan)", 300, "/v1/tools/" + t.tool + "/call", `{"keyword":` + nest(10_000) + `}`, 400},
		{"/v1/execute, body of 9 MiB (413)", 20, "/v1/execute", `{"arguments":{"s":"` + strings.Repeat("x", 9<<20) + `"}}`, 413},
		{"/v1/execute, inline plugin, 40,000 parameters, 1.1 MB (400, bytes)", 20, "/v1/execute", inline(manyProps(40_000)), 400},
		{"/v1/execute, inline plugin, 2,001 parameters (400, properties)", 100, "/v1/execute", inline(manyProps(2_001)), 400},
		{fmt.Sprintf("/v1/execute, user over %d calls in flight (429)", t.limit), 300, "/v1/execute",
			fmt.Sprintf(`{"name":%q,"user_id":%d,"arguments":{"keyword":"x"}}`, t.tool, t.heldUser), 429},
	}
}

// hostileSchema is an MCP tool's inputSchema of issue 13 that costs too
// much to compile: the tool is refused at import or tools/list.
type hostileSchema struct {
	name   string
	schema map[string]any
}

// stringProps is an object schema of n string properties.
func stringProps(n int) map[string]any {
	props := make(map[string]any, n)
	for i := range n {
		props[fmt.Sprintf("p%d", i)] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "object", "properties": props}
}

func hostileSchemas() []hostileSchema {
	wide := plugins.DefaultSchemaLimits.Properties + 1
	defs := map[string]any{"d0": map[string]any{"type": "string"}}
	for i := 1; i <= 30; i++ {
		ref := map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i-1)}
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"anyOf": []any{ref, ref}}
	}
	return []hostileSchema{
		{fmt.Sprintf("%d properties", wide), stringProps(wide)},
		{"$refs doubling 30 times", map[string]any{"type": "object", "$defs": defs,
			"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/d30"}}}},
	}
}

// send posts the request to base with the bearer token and checks the status.
func (r hostileRequest) send(ctx context.Context, client *http.Client, base, token string) error {
	req, err := http.NewRequestWithContext(ctx, "POST", base+r.path, strings.NewReader(r.body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != r.status {
		return fmt.Errorf("HTTP %d, want %d: %.200s", resp.StatusCode, r.status, b)
	}
	return nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchMetricsCardinality executes calls of 20,000 inline plugins with
// distinct names (refused: the arguments are not an object, so nothing is
// sent) and reports the size of /metrics and the heap it took.
func benchMetricsCardinality(ctx context.Context, ex *engine.Executor, reg *prometheus.Registry, base string) error {
	size := func() (int, error) {
		rec := httptest.NewRecorder()
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.Len(), nil
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before, _ := size()
	h0 := heap()
	const names = 20_000
	for i := range names {
		p := &plugins.Plugin{Name: fmt.Sprintf("inline_%d", i), Description: "d", Parameters: []byte(`{"type":"object"}`),
			Execution: plugins.Execution{Method: "GET", BaseURL: base + "/x"}}
		if _, err := ex.Execute(ctx, engine.Call{Plugin: p, Arguments: []byte(`[]`)}); err == nil {
			return fmt.Errorf("inline call %d not refused", i)
		}
	}
	after, _ := size()
	h1 := heap()
	fmt.Printf("== metrics: %d inline plugin names\n", names)
	fmt.Printf("   /metrics %d KB before, %d KB after; heap %+.1f MB (records and caches included)\n\n",
		before>>10, after>>10, (float64(h1)-float64(h0))/(1<<20))
	return nil
}

// benchSlowBodies opens conns connections that send a body one byte every
// 100 ms and reports when the server had answered or closed each, with
// the body deadline at deadline.
func benchSlowBodies(url string, conns int, deadline time.Duration) error {
	addr := strings.TrimPrefix(url, "http://")
	g0 := runtime.NumGoroutine()
	t0 := time.Now()
	done := make(chan time.Duration, conns)
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		go func() {
			slowBody(c, "bench-service")
			done <- time.Since(t0)
		}()
	}
	var last time.Duration
	for range conns {
		last = max(last, <-done)
	}
	time.Sleep(100 * time.Millisecond)
	fmt.Printf("== slow bodies: %d connections sending a byte every 100 ms, body deadline %s\n", conns, deadline)
	fmt.Printf("   all cut %s after the first byte (a 1,000-byte body would take 100 s); goroutines %d before, %d after\n\n",
		last.Round(10*time.Millisecond), g0, runtime.NumGoroutine())
	return nil
}

// slowBody sends on c a POST /v1/execute whose 1,000-byte body comes a
// byte every 100 ms, and returns once the server closed c (at most a
// minute), then closes it.
func slowBody(c net.Conn, token string) {
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n", token)
	go func() {
		for range 1000 {
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	io.Copy(io.Discard, c) // until the server closes
}
