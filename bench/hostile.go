package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/console"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/loop"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/internal/hostiledoc"
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
	// The user at its limit of calls in flight has the tool's credential
	// too: the limit, not a missing credential, must refuse its call.
	if err := e.creds.Set(ctx, 9, "QCC_KEY", "sk-bench-held", "bench"); err != nil {
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
	llm := hostileLLM()
	defer llm.Close()
	oc := openai.DefaultConfig("")
	oc.BaseURL = llm.URL + "/v1"
	s.Runner = &loop.Runner{Client: loop.NewClient(oc), Executor: e.ex, LLMRetries: -1}
	con, err := console.New(s, e.st, e.key, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	srv := httptest.NewServer(con.Handler(s.Handler()))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
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
	target := hostileTarget{tool: "search_company_basic", user: 7, heldUser: 9, limit: 16, upstream: up.URL}
	for _, r := range append(hostileRequests(target), hostileRequests30(target)...) {
		probes = append(probes, probe{r.name, r.n, func(ctx context.Context) error { return r.send(ctx, client, srv.URL, "bench-service") }})
	}
	for _, sc := range hostileSchemas() {
		probes = append(probes, probe{"MCP inputSchema, " + sc.name + " (tool refused)", 100, mcpRefused(sc.schema)})
	}
	for _, r := range hostileImports() {
		probes = append(probes, probe{r.name, r.n, func(ctx context.Context) error { return r.send(ctx, client, srv.URL, "bench-admin") }})
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

// hostileRequest is one of issue 13's and issue 30's attacks over HTTP
// and the status of its refusal; the first of hostileRequests is an
// ordinary call, for scale.
type hostileRequest struct {
	name       string
	n          int    // requests measured
	method     string // "": POST
	path, body string
	status     int
	also       int      // another status it may get (0: none)
	header     []string // name, value pairs; a value "{base}" is the engine's URL
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
		{name: "reference: /v1/execute, an ordinary call (200)", n: 300, path: "/v1/execute", body: args(`{"keyword":"字节跳动"}`), status: 200},
		{name: "/v1/execute, arguments 100,000 deep, 200 KB (400, body scan)", n: 100, path: "/v1/execute", body: args(`{"keyword":` + nest(100_000) + `}`), status: 400},
		{name: "/v1/execute, arguments 65 deep (422, executor)", n: 300, path: "/v1/execute", body: args(`{"keyword":` + nest(64) + `}`), status: 422},
		{name: "/v1/execute, arguments of 100,001 elements, 200 KB (422, executor)", n: 100, path: "/v1/execute", body: args(`{"keyword":[` + strings.Repeat("0,", 100_000) + `0]}`), status: 422},
		{name: "/v1/tools/{name}/call, 10,000 deep, 20 KB (400, body scan)", n: 300, path: "/v1/tools/" + t.tool + "/call", body: `{"keyword":` + nest(10_000) + `}`, status: 400},
		{name: "/v1/execute, body of 9 MiB (413)", n: 20, path: "/v1/execute", body: `{"arguments":{"s":"` + strings.Repeat("x", 9<<20) + `"}}`, status: 413},
		{name: "/v1/execute, inline plugin, 40,000 parameters, 1.1 MB (400, bytes)", n: 20, path: "/v1/execute", body: inline(manyProps(40_000)), status: 400},
		{name: "/v1/execute, inline plugin, 2,001 parameters (400, properties)", n: 100, path: "/v1/execute", body: inline(manyProps(2_001)), status: 400},
		{name: fmt.Sprintf("/v1/execute, user over %d calls in flight (429)", t.limit), n: 300, path: "/v1/execute",
			body: fmt.Sprintf(`{"name":%q,"user_id":%d,"arguments":{"keyword":"x"}}`, t.tool, t.heldUser), status: 429},
	}
}

// hostileImports are the OpenAPI documents that make far more than they
// hold (hostiledoc.SharedBody), imported dry by the administrator: the
// attacker review's 2,000 operations of one body of 3,000 properties
// (33 s before the import's limits: now each operation imports with
// its body as one free-form argument, over an inline plugin's 2,000
// properties even with its fields free-form), and of 1,999 (refused
// whole when its plugins pass the import's 64 MiB).
func hostileImports() []hostileRequest {
	header := []string{"Content-Type", "application/vnd.oai.openapi+json"}
	path := "/v1/plugins/import/openapi?dry_run=true&location=hostile.json"
	return []hostileRequest{
		{name: "import, 2,000 operations × a body of 3,000 properties, 1 MB (200, every body made one free-form argument)", n: 10, path: path,
			body: string(hostiledoc.SharedBody(2000, 3000)), status: 200, header: header},
		{name: "import, 2,000 operations × a body of 1,999 properties, 0.8 MB (400 import_too_large)", n: 3, path: path,
			body: string(hostiledoc.SharedBody(2000, plugins.DefaultSchemaLimits.Properties-1)), status: 400, header: header},
	}
}

// hostileRequests30 are issue 30's attacks over HTTP: a model that
// answers too much needs the engine's LLM endpoint to be hostileLLM.
func hostileRequests30(t hostileTarget) []hostileRequest {
	mcpHeader := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "X-User-Id", "7"}
	report := `{"csp-report":{"document-uri":"http://x/console/","violated-directive":"script-src","blocked-uri":"inline","original-policy":"` + strings.Repeat("p", 800) + `"}}`
	run := func(model string) string {
		return fmt.Sprintf(`{"user_id":%d,"model":%q,"plugin_names":[%q],"messages":[{"role":"user","content":"look it up"}]}`, t.user, model, t.tool)
	}
	return []hostileRequest{
		{name: "/v1/tools/search, q of 30,000 characters (400)", n: 300, method: "GET", path: "/v1/tools/search?q=" + strings.Repeat("a", 30_000), status: 400},
		{name: "/mcp initialize, one user past its 32 sessions (200: its oldest idle one ends)", n: 2000, path: "/mcp",
			body:   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`,
			status: 200, header: mcpHeader},
		{name: "/console/csp-report, 16 KiB (413)", n: 300, path: "/console/csp-report", body: `{"x":"` + strings.Repeat("a", 16<<10) + `"}`, status: 413},
		{name: "/console/csp-report, the same 1 KiB report again (204, counted, not logged)", n: 2000, path: "/console/csp-report", body: report, status: 204},
		{name: "/console/login, wrong tokens from one address (303, then 429 unchecked)", n: 2000, path: "/console/login", body: "token=wrong",
			status: 429, also: 303, header: []string{"Content-Type", "application/x-www-form-urlencoded", "Origin", "{base}"}},
		{name: "/v1/runs, the model answers 200 MB (502, cut at 4 MiB)", n: 20, path: "/v1/runs", body: run(hostileModelHuge), status: 502},
		{name: "/v1/runs, the model asks 1,000 tool calls (200, 32 executed)", n: 20, path: "/v1/runs", body: run(hostileModelMany), status: 200},
	}
}

// The models of hostileLLM.
const (
	hostileModelHuge = "hostile-huge" // a tool call of 200 MB of arguments
	hostileModelMany = "hostile-many" // 1,000 tool calls, then an answer
)

// hostileLLM is an OpenAI-compatible endpoint (base URL: its URL + "/v1")
// answering as its model says: hostileModelHuge streams 200 MB of tool
// call arguments, hostileModelMany asks 1,000 tool calls of the tool
// named in the request and answers once tool results come back.
func hostileLLM() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string
			Messages []struct{ Role string }
			Tools    []struct{ Function struct{ Name string } }
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		head := `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant",`
		tail := `},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
		switch {
		case req.Model == hostileModelHuge:
			io.WriteString(w, head+`"tool_calls":[{"id":"c","type":"function","function":{"name":"t","arguments":"`)
			chunk := strings.Repeat("x", 1<<20)
			for range 200 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return // the engine stopped reading
				}
			}
			io.WriteString(w, `"}}]`+tail)
		case req.Messages[len(req.Messages)-1].Role == "tool" || len(req.Tools) == 0:
			io.WriteString(w, head+`"content":"done"},"finish_reason":"stop"}]}`)
		default:
			var b strings.Builder
			b.WriteString(head + `"tool_calls":[`)
			for i := range 1000 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"id":"c%d","type":"function","function":{"name":%q,"arguments":"{\"keyword\":\"x\"}"}}`, i, req.Tools[0].Function.Name)
			}
			io.WriteString(w, b.String()+`]`+tail)
		}
	}))
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

// send sends the request to base with the bearer token and checks the
// status.
func (r hostileRequest) send(ctx context.Context, client *http.Client, base, token string) error {
	req, err := http.NewRequestWithContext(ctx, cmp.Or(r.method, "POST"), base+r.path, strings.NewReader(r.body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(r.header); i += 2 {
		req.Header.Set(r.header[i], strings.ReplaceAll(r.header[i+1], "{base}", base))
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != r.status && (r.also == 0 || resp.StatusCode != r.also) {
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
