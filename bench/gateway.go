package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/go-sql-driver/mysql"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/bench/mcprelay"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/quota"
	"github.com/blindexec/blindexec/store"
)

// The gateway group (issue 19) puts every way a client reaches one call
// side by side with the floor of its transport: the bare relays make the
// same hop with no engine. Its calls: seed 001's search_company_basic
// (GET, a query argument, an API key header from user 7's stored
// credentials) against a loopback upstream.
const (
	gatewayTool    = mcprelay.Tool
	gatewayKeyword = "字节跳动"
	gatewayUser    = 7
	gatewayAPIKey  = mcprelay.APIKey
	// gatewayQuotaUser's calls fall under a quota rule of
	// gatewayQuotaCalls a day (leases of 1%); gatewayUser's under none.
	gatewayQuotaUser  = gatewayUser + 1
	gatewayQuotaCalls = 1_000_000
	// gatewaySmallQuotaUser's under one of gatewaySmallQuotaCalls, for
	// the leases' writes at a limit that makes many.
	gatewaySmallQuotaUser  = gatewayUser + 2
	gatewaySmallQuotaCalls = 100_000
	// gatewayLeaseRate is the rate at which the leases' writes are
	// measured.
	gatewayLeaseRate = 2000
)

// gatewaySpec says how a client reaches a subject; a child process of the
// runner (-gateway-outside) dials it from the same spec.
type gatewaySpec struct {
	Kind    string   `json:"kind"` // get, post, mcp-http, mcp-stdio
	URL     string   `json:"url,omitempty"`
	Body    string   `json:"body,omitempty"`
	Token   string   `json:"token,omitempty"`
	Command []string `json:"command,omitempty"` // mcp-stdio: the server
	Env     []string `json:"env,omitempty"`     // mcp-stdio: added to the environment
	Stderr  string   `json:"stderr,omitempty"`  // mcp-stdio: the server's stderr goes to this file
	// Protocol is the MCP protocol version the client asks for; empty: the
	// go-sdk client's default.
	Protocol string `json:"protocol,omitempty"`
}

// gatewayProtocol is the MCP version the gateway's clients ask every
// subject for by default: the sessions' era, which every figure before
// issue 47 was taken in. The hand-written relay speaks 2026-07-28 too
// (server/discover, no session, the version in each request's _meta):
// -gateway-protocol 2026-07-28 compares every subject at it.
const gatewayProtocol = "2025-11-25"

// dial connects to spec and returns one call and how to close.
func (spec gatewaySpec) dial(ctx context.Context) (call func(context.Context) error, closeFn func(), err error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	switch spec.Kind {
	case "get":
		return func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, "GET", spec.URL, nil)
			req.Header.Set("Token", gatewayAPIKey)
			return drain(client.Do(req))
		}, client.CloseIdleConnections, nil
	case "post":
		return func(ctx context.Context) error {
			req, _ := http.NewRequestWithContext(ctx, "POST", spec.URL, strings.NewReader(spec.Body))
			req.Header.Set("Content-Type", "application/json")
			if spec.Token != "" {
				req.Header.Set("Authorization", "Bearer "+spec.Token)
			}
			return drain(client.Do(req))
		}, client.CloseIdleConnections, nil
	}
	var t sdk.Transport
	switch spec.Kind {
	case "mcp-http":
		var rt http.RoundTripper = client.Transport
		if spec.Token != "" {
			rt = bearer{rt, spec.Token}
		}
		t = &sdk.StreamableClientTransport{Endpoint: spec.URL, DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: rt}}
	case "mcp-stdio":
		cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
		cmd.Env = append(os.Environ(), spec.Env...)
		if spec.Stderr != "" {
			f, err := os.OpenFile(spec.Stderr, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				return nil, nil, err
			}
			defer f.Close() // the child holds its own descriptor
			cmd.Stderr = f
		}
		t = &sdk.CommandTransport{Command: cmd}
	default:
		return nil, nil, fmt.Errorf("unknown subject kind %q", spec.Kind)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench-gateway", Version: "1"}, nil).Connect(ctx, t, &sdk.ClientSessionOptions{ProtocolVersion: spec.Protocol})
	if err != nil {
		return nil, nil, fmt.Errorf("connect %s: %w", spec.Kind, err)
	}
	return func(ctx context.Context) error { return callTool(ctx, cs) }, func() { cs.Close() }, nil
}

// callTool makes the gateway's call on cs.
func callTool(ctx context.Context, cs *sdk.ClientSession) error {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: gatewayTool, Arguments: map[string]any{"keyword": gatewayKeyword}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) == 0 {
		b, _ := json.Marshal(res.Content)
		return fmt.Errorf("tool error: %s", b)
	}
	return nil
}

// gatewaySubject is a subject with its transport's floor (an index into
// the same table; itself for a floor).
type gatewaySubject struct {
	subject
	floor int
	// target: p50 (and p99, when maxP99 is set) at most this × the
	// floor's, throughput at least minShare of it; 0: no target.
	maxP50, maxP99, minShare float64
	// twin: the floor is the same route without one feature, and the
	// target is judged on the medians of the per-round ratios.
	twin bool
}

// benchGateway measures, on SQLite and (with BLINDEXEC_TEST_MYSQL_DSN) on
// MariaDB, with the record spool on: the direct call, a bare net/http
// relay, the in-process executor, POST /v1/execute, a bare go-sdk MCP relay
// over streamable HTTP and /mcp, a bare go-sdk relay over stdio and
// `blindexec mcp serve --stdio`. With -gateway-outside the clients run in
// a child process each, as real clients do (the executor stays in
// process: it has no wire).
func benchGateway(ctx context.Context, o benchOpts) error {
	dir, err := os.MkdirTemp("", "blindexec-gateway")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := buildBinary(ctx, o, dir)
	if err != nil {
		return err
	}
	relayBin, err := buildRelay(ctx, o, dir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dbs := []string{"sqlite"}
	if os.Getenv("BLINDEXEC_TEST_MYSQL_DSN") != "" {
		dbs = append(dbs, "mysql")
	}
	for _, db := range dbs {
		if err := gatewayOn(ctx, o, db, bin, relayBin, self); err != nil {
			return fmt.Errorf("%s: %w", db, err)
		}
	}
	return nil
}

// gatewayDatabase creates the MariaDB database of the run and returns its
// DSN (as BLINDEXEC_DB takes it) and how to drop it.
func gatewayDatabase(ctx context.Context, name string) (string, func(), error) {
	cfg, err := mysql.ParseDSN(os.Getenv("BLINDEXEC_TEST_MYSQL_DSN"))
	if err != nil {
		return "", nil, fmt.Errorf("BLINDEXEC_TEST_MYSQL_DSN: %w", err)
	}
	admin := *cfg
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		return "", nil, err
	}
	drop := func() {
		db.Exec("DROP DATABASE IF EXISTS " + name)
		db.Close()
	}
	if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
		db.Close()
		return "", nil, err
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		return "", nil, err
	}
	cfg.DBName, cfg.ParseTime = name, true
	return "mysql:" + cfg.FormatDSN(), drop, nil
}

func gatewayOn(ctx context.Context, o benchOpts, db, bin, relayBin, self string) error {
	up := companyUpstream()
	defer up.Close()
	var dsn string
	if db == "mysql" {
		d, drop, err := gatewayDatabase(ctx, "blindexec_bench_gateway")
		if err != nil {
			return err
		}
		defer drop()
		dsn = d
	}
	e, err := newEnvOn(ctx, dsn, nil)
	if err != nil {
		return err
	}
	defer e.close()
	p, err := e.addCompanyPlugin(ctx, up.URL, gatewayUser, gatewayAPIKey)
	if err != nil {
		return err
	}
	userToken, _, err := api.IssueToken(ctx, e.st, gatewayUser, "bench-gateway", 0, "")
	if err != nil {
		return err
	}
	quotaToken, err := gatewayQuotaRule(ctx, e, gatewayQuotaUser, gatewayQuotaCalls)
	if err != nil {
		return err
	}
	smallQuotaToken, err := gatewayQuotaRule(ctx, e, gatewaySmallQuotaUser, gatewaySmallQuotaCalls)
	if err != nil {
		return err
	}
	quotaWrites, err := countQuotaWrites(ctx, e.st.DB(), db)
	if err != nil {
		return err
	}
	if _, err := e.changes.Poll(ctx); err != nil {
		return err
	}
	// As serve keeps it: leases idle for 2 s go back (here, while the
	// other subjects take their turns), to be leased again.
	keeper := quota.New(e.st, e.changes, nil, time.UTC, nil)
	keeperCtx, stopKeeper := context.WithCancel(ctx)
	defer stopKeeper()
	go keeper.Run(keeperCtx)
	srv := httptest.NewServer((&api.Server{Store: e.st, Creds: e.creds, Executor: e.ex, ServiceToken: "bench-service",
		Changes: e.changes, MCP: &api.MCPConfig{}, Quota: keeper}).Handler())
	defer srv.Close()

	directURL := up.URL + "/ECIV4/Search?keyword=" + url.QueryEscape(gatewayKeyword)
	relay := httptest.NewServer(httpRelay(up.URL))
	defer relay.Close()
	relayServer := mcprelay.NewSDK(up.URL) // one server for every session, as the go-sdk's examples serve
	mcpRelay := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return relayServer }, nil))
	defer mcpRelay.Close()
	rawRelay := httptest.NewServer(mcprelay.NewRaw(up.URL))
	defer rawRelay.Close()

	execBody := `{"name":"` + gatewayTool + `","arguments":{"keyword":"` + gatewayKeyword + `"}}`
	ourStdio := gatewaySpec{Kind: "mcp-stdio", Command: []string{bin, "mcp", "serve", "--stdio"},
		Env: []string{"BLINDEXEC_DB=" + e.dsn, "BLINDEXEC_MASTER_KEY=" + e.key, "BLINDEXEC_EGRESS_ALLOW=127.0.0.0/8",
			fmt.Sprintf("BLINDEXEC_MCP_USER=%d", gatewayUser), "BLINDEXEC_LOG_LEVEL=warn"},
		Stderr: filepath.Join(e.dir, "stdio.log")}
	// Each subject names its floor, and its target (issue 19's point 2).
	direct := gatewaySpec{Kind: "get", URL: directURL}
	specs := []struct {
		name, floor              string
		spec                     gatewaySpec
		inProcess                bool    // even with -gateway-outside
		maxP50, maxP99, minShare float64 // the target; 0: none
		twin                     bool    // the floor is this route without one feature
	}{
		{name: "direct net/http (the floor)", spec: direct},
		{name: "bare HTTP relay (net/http, no engine)", floor: "direct net/http (the floor)",
			spec: gatewaySpec{Kind: "post", URL: relay.URL, Body: execBody}},
		{name: "direct net/http, in process", spec: direct, inProcess: true},
		{name: "executor, in process", floor: "direct net/http, in process", inProcess: true},
		{name: "POST /v1/execute (per-user token)", floor: "bare HTTP relay (net/http, no engine)", maxP50: 1.25, minShare: 0.8,
			spec: gatewaySpec{Kind: "post", URL: srv.URL + "/v1/execute", Body: execBody, Token: userToken}},
		// The same with a quota rule on the caller (issue 37), each beside
		// its twin without (before it in one round, after it in the next):
		// the cost of counting.
		{name: "POST /v1/execute, a quota rule on", floor: "POST /v1/execute (per-user token)", maxP50: 1.05, minShare: 0.95, twin: true,
			spec: gatewaySpec{Kind: "post", URL: srv.URL + "/v1/execute", Body: execBody, Token: quotaToken}},
		// MCP (issue 38): the hand-written relay counts as the floor when
		// it beats the go-sdk relay by 10% in p50 and calls/s; the
		// engine's target is 1.1× its p50 and p99 and 90% of its calls/s.
		{name: "bare MCP relay, streamable HTTP (go-sdk)", spec: gatewaySpec{Kind: "mcp-http", URL: mcpRelay.URL}},
		{name: "hand-written MCP relay, streamable HTTP (no SDK)", floor: "bare MCP relay, streamable HTTP (go-sdk)", maxP50: 0.9, minShare: 1.1,
			spec: gatewaySpec{Kind: "mcp-http", URL: rawRelay.URL}},
		{name: "blindexec /mcp, streamable HTTP", floor: "hand-written MCP relay, streamable HTTP (no SDK)", maxP50: 1.1, maxP99: 1.1, minShare: 0.9,
			spec: gatewaySpec{Kind: "mcp-http", URL: srv.URL + "/mcp", Token: userToken}},
		{name: "blindexec /mcp, a quota rule on", floor: "blindexec /mcp, streamable HTTP", maxP50: 1.05, minShare: 0.95, twin: true,
			spec: gatewaySpec{Kind: "mcp-http", URL: srv.URL + "/mcp", Token: quotaToken}},
		{name: "bare MCP relay, stdio (go-sdk)", spec: gatewaySpec{Kind: "mcp-stdio", Command: []string{relayBin, "sdk", up.URL}}},
		{name: "hand-written MCP relay, stdio (no SDK)", floor: "bare MCP relay, stdio (go-sdk)", maxP50: 0.9, minShare: 1.1,
			spec: gatewaySpec{Kind: "mcp-stdio", Command: []string{relayBin, "raw", up.URL}}},
		{name: "blindexec mcp serve --stdio", floor: "hand-written MCP relay, stdio (no SDK)", maxP50: 1.1, maxP99: 1.1, minShare: 0.9, spec: ourStdio},
		// Both MCP servers again in this process, over the SDK's in-memory
		// transports (stdio's framing without the pipes): the server side
		// shows in -profile-dir and in the allocations.
		{name: "bare MCP relay, in-memory", spec: gatewaySpec{Kind: "mcp-memory"}, inProcess: true},
		{name: "catalog MCP server, in-memory", floor: "bare MCP relay, in-memory", spec: gatewaySpec{Kind: "mcp-memory"}, inProcess: true},
	}
	executor := func(ctx context.Context) error {
		res, err := e.ex.Execute(ctx, engine.Call{Plugin: p, Arguments: []byte(`{"keyword":"` + gatewayKeyword + `"}`), UserID: gatewayUser})
		if err == nil && !res.OK {
			err = fmt.Errorf("call failed: %s", res.Error.Message)
		}
		return err
	}
	catalogService := mcpserver.NewService(catalog.New(e.st, e.changes, nil), e.ex, mcpserver.Options{})
	inMemory := map[string]*sdk.Server{"bare MCP relay, in-memory": mcprelay.NewSDK(up.URL),
		"catalog MCP server, in-memory": catalogService.NewServer(gatewayUser)}
	for i := range specs {
		if strings.HasPrefix(specs[i].spec.Kind, "mcp") {
			specs[i].spec.Protocol = o.gatewayMCP
		}
	}
	keep := map[string]bool{specs[0].name: true} // the direct call, every chain's last floor
	for _, s := range slices.Backward(specs) {   // a floor comes before its subjects: keep floors of floors
		if keep[s.name] || len(o.gatewayOnly) == 0 || slices.ContainsFunc(o.gatewayOnly, func(w string) bool { return strings.Contains(s.name, w) }) {
			keep[s.name], keep[s.floor] = true, true
		}
	}
	var subjects []gatewaySubject
	index := map[string]int{}
	for _, s := range specs {
		if !keep[s.name] {
			continue
		}
		if s.inProcess && s.spec.Kind == "get" && !o.gatewayOutside {
			continue // the same as the floor above when the clients are in process
		}
		gs := gatewaySubject{subject: subject{name: s.name}, maxP50: s.maxP50, maxP99: s.maxP99, minShare: s.minShare, twin: s.twin}
		switch {
		case s.spec.Kind == "":
			gs.call = executor
		case s.spec.Kind == "mcp-memory":
			ct, st := sdk.NewInMemoryTransports()
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go inMemory[s.name].Run(sctx, st)
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench-gateway", Version: "1"}, nil).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: o.gatewayMCP})
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			defer cs.Close()
			gs.call = func(ctx context.Context) error { return callTool(ctx, cs) }
		case o.gatewayOutside && !s.inProcess:
			rc, err := startRemoteClient(ctx, self, s.spec)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			defer rc.close()
			gs.remote = rc
		default:
			call, closeFn, err := s.spec.dial(ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			defer closeFn()
			gs.call = call
		}
		floor := s.floor
		if _, ok := index[floor]; !ok && floor == "direct net/http, in process" {
			floor = specs[0].name
		}
		if f, ok := index[floor]; ok {
			gs.floor = f
		} else {
			gs.floor = len(subjects)
		}
		index[s.name] = len(subjects)
		subjects = append(subjects, gs)
	}

	plain := make([]subject, len(subjects))
	for i := range subjects {
		plain[i] = subjects[i].subject
	}
	for _, s := range plain { // each answers before the clock starts
		if err := s.once(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	oc := o
	oc.conc = o.gatewayConc
	f, err := measure(ctx, plain, oc)
	if err != nil {
		return err
	}
	where := "clients in this process"
	if o.gatewayOutside {
		where = "clients in a child process each (the executor in process); allocations are this process's: servers and upstream"
	}
	fmt.Printf("== gateway on %s, records through the spool (`mcp serve --stdio`: straight to the database, as it writes them): %s\n", db, where)
	fmt.Printf("   subjects take turns in %d rounds: %d calls each one after another, %s each at concurrency %d; MCP clients ask for protocol %s\n",
		max(o.rounds, 1), o.n/max(o.rounds, 1)*max(o.rounds, 1), o.dur, oc.conc, cmp.Or(o.gatewayMCP, "(the go-sdk's default)"))
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "subject\tp50\tp99\tp50 ×floor\tp99 ×floor\tcalls/s @%d\t%% of floor\tCPU/call\t×floor\tallocs/call\tkB/call\ttarget\t\n", oc.conc)
	for i, s := range subjects {
		fl := f[s.floor]
		verdictText := ""
		switch {
		case s.twin:
			p50, rps := perRoundRatios(f[i], fl)
			verdictText = fmt.Sprintf("per round p50 ≤%.2f×, ≥%.0f%%: %s", s.maxP50, 100*s.minShare, verdict(p50.median <= s.maxP50 && rps.median >= s.minShare))
		case s.maxP99 > 0:
			ok := float64(f[i].p50) <= s.maxP50*float64(fl.p50) && float64(f[i].p99) <= s.maxP99*float64(fl.p99) && f[i].rps >= s.minShare*fl.rps
			verdictText = fmt.Sprintf("p50 ≤%.2f×, p99 ≤%.2f×, ≥%.0f%%: %s", s.maxP50, s.maxP99, 100*s.minShare, verdict(ok))
		case s.maxP50 > 0:
			ok := float64(f[i].p50) <= s.maxP50*float64(fl.p50) && f[i].rps >= s.minShare*fl.rps
			verdictText = fmt.Sprintf("p50 ≤%.2f×, ≥%.0f%%: %s", s.maxP50, 100*s.minShare, verdict(ok))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%.0f\t%.0f%%\t%s\t%.2f\t%.0f\t%.1f\t%s\t\n", s.name, round(f[i].p50), round(f[i].p99),
			float64(f[i].p50)/float64(fl.p50), float64(f[i].p99)/float64(fl.p99), f[i].rps, 100*f[i].rps/fl.rps, round(f[i].cpu), float64(f[i].cpu)/float64(fl.cpu),
			f[i].allocs, f[i].bytes/1024, verdictText)
	}
	tw.Flush()
	fmt.Println("   floors: the executor and the bare HTTP relay against the direct call, /v1/execute against the bare HTTP relay,")
	fmt.Println("   the hand-written MCP relay against the go-sdk relay of its transport, each MCP surface against the hand-written one; allocations (latency phase) and CPU/call")
	fmt.Println("   (this process's CPU time per call at concurrency) count this whole process: client, server and upstream")
	fmt.Println("   when in it; a stdio server, and a client run outside, is another process.")
	for i, s := range subjects {
		if s.twin {
			p50, rps := perRoundRatios(f[i], f[s.floor])
			fmt.Printf("   %s against %s, round by round (median [min–max] of %d): p50 ×%s, calls/s ×%s;"+
				" the runtime's processors idle in the throughput phases (waiting): %.1f%% against %.1f%%\n",
				s.name, subjects[s.floor].name, len(f[i].perRound), p50, rps, 100*f[i].idle, 100*f[s.floor].idle)
		}
	}
	if keep["POST /v1/execute, a quota rule on"] {
		if err := gatewayLeaseWrites(ctx, srv.URL+"/v1/execute", execBody, quotaWrites, []gatewayQuota{
			{gatewayQuotaCalls, quotaToken}, {gatewaySmallQuotaCalls, smallQuotaToken}}); err != nil {
			return err
		}
	}
	fmt.Println()
	fmt.Println("   the tail (latency phase, concurrency 1): this process's runtime — the servers in it and the upstream")
	tw = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "subject\tp99/p50\tGCs per 1,000 calls\tGC pauses per call\tGC share of CPU\tGo scheduler latency p99\tmax\t\n")
	for i, s := range subjects {
		t, calls := f[i].tail, float64(o.n/max(o.rounds, 1)*max(o.rounds, 1))
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%s\t%.0f%%\t%s\t%s\t\n", s.name, float64(f[i].p99)/float64(f[i].p50),
			1000*float64(t.gcCycles)/calls, round(time.Duration(float64(t.gcPauses)/calls)), 100*t.gcCPU/max(t.totalCPU, 1e-9),
			round(t.schedP99), round(t.schedMax))
	}
	tw.Flush()
	fmt.Println()
	var stdio []struct {
		name string
		spec gatewaySpec
	}
	for _, s := range specs {
		if keep[s.name] && s.spec.Kind == "mcp-stdio" {
			stdio = append(stdio, struct {
				name string
				spec gatewaySpec
			}{s.name, s.spec})
		}
	}
	if err := gatewayMemory(ctx, e.dir, oc.conc, stdio); err != nil {
		return err
	}
	return gatewayToolsList(ctx, o, e, userToken)
}

// gatewayQuotaRule gives user the plugin's credential and a quota rule of
// calls a day, and returns the user's token.
func gatewayQuotaRule(ctx context.Context, e *env, user, calls int64) (string, error) {
	if err := e.creds.Set(ctx, user, "QCC_KEY", gatewayAPIKey, "bench"); err != nil {
		return "", err
	}
	rule := quota.Rule{Name: fmt.Sprint("bench-", calls), UserID: &user, Calls: calls, Window: quota.Day}
	if err := e.st.CreateQuotaRule(ctx, rule.Row()); err != nil {
		return "", err
	}
	tok, _, err := api.IssueToken(ctx, e.st, user, fmt.Sprint("bench-gateway-quota-", user), 0, "")
	return tok, err
}

// countQuotaWrites has the database count the rows written to
// sys_ai_quota_use (a window's first row, leases, leases given back) in a
// table of the bench's own, by triggers: the leases' writes counted where
// they land, not as the keeper reports them. read returns the count.
func countQuotaWrites(ctx context.Context, db *sql.DB, dialect string) (read func(context.Context) (int64, error), err error) {
	body := "UPDATE bench_quota_writes SET n = n + 1"
	if dialect == "sqlite" {
		body = "BEGIN " + body + "; END"
	}
	for _, q := range []string{
		"CREATE TABLE bench_quota_writes (n BIGINT NOT NULL)",
		"INSERT INTO bench_quota_writes (n) VALUES (0)",
		"CREATE TRIGGER bench_quota_insert AFTER INSERT ON sys_ai_quota_use FOR EACH ROW " + body,
		"CREATE TRIGGER bench_quota_update AFTER UPDATE ON sys_ai_quota_use FOR EACH ROW " + body,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("count the quota writes: %w", err)
		}
	}
	return func(ctx context.Context) (n int64, err error) {
		err = db.QueryRowContext(ctx, "SELECT n FROM bench_quota_writes").Scan(&n)
		return n, err
	}, nil
}

// gatewayQuota is a quota rule's limit a day and the token of its user.
type gatewayQuota struct {
	calls int64
	token string
}

// gatewayLeaseWrites sends POST /v1/execute at gatewayLeaseRate calls/s
// for 10 s under each rule and prints the rows the database wrote
// meanwhile (a lease taken as the calls start included).
func gatewayLeaseWrites(ctx context.Context, url, body string, writes func(context.Context) (int64, error), rules []gatewayQuota) error {
	const d = 10 * time.Second
	fmt.Printf("   the leases' database writes at %d calls/s of one user under one rule, %s each (counted by triggers on sys_ai_quota_use):\n", gatewayLeaseRate, d)
	for _, r := range rules {
		call, closeFn, err := gatewaySpec{Kind: "post", URL: url, Body: body, Token: r.token}.dial(ctx)
		if err != nil {
			return err
		}
		before, err := writes(ctx)
		if err != nil {
			closeFn()
			return err
		}
		n, took, err := paced(ctx, call, gatewayLeaseRate, d, 16)
		closeFn()
		if err != nil {
			return fmt.Errorf("leases at %d a day: %w", r.calls, err)
		}
		after, err := writes(ctx)
		if err != nil {
			return err
		}
		w := after - before
		size := quota.LeaseSize(r.calls)
		fmt.Printf("   limit %d a day (leases of %d): %d calls at %.0f calls/s, %d writes: %.2f writes/s, %.2f per %d calls (expected: top-ups of %d, %.2f)\n",
			r.calls, size, n, float64(n)/took.Seconds(), w, float64(w)/took.Seconds(),
			float64(w)/float64(n)*gatewayLeaseRate, gatewayLeaseRate, size-size/4, gatewayLeaseRate/float64(size-size/4))
	}
	return nil
}

// paced makes calls at rate a second for d from conc goroutines (slower
// when the calls cannot keep up), and returns the calls made and the time
// they took.
func paced(ctx context.Context, call func(context.Context) error, rate int, d time.Duration, conc int) (int64, time.Duration, error) {
	var next, done atomic.Int64
	interval := time.Second / time.Duration(rate)
	t0 := time.Now()
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				at := interval * time.Duration(next.Add(1)-1)
				if at >= d {
					return
				}
				time.Sleep(time.Until(t0.Add(at)))
				if err := call(ctx); err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(t0)
	close(errs)
	return done.Load(), took, <-errs
}

// httpRelay is the least any engine over HTTP can cost: a handler that
// reads the arguments, makes the direct call and copies the answer back.
func httpRelay(upstream string) http.Handler {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Arguments struct {
				Keyword string `json:"keyword"`
			} `json:"arguments"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body, err := mcprelay.Call(r.Context(), client, upstream, in.Arguments.Keyword)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
}

// remoteClient drives a subject from a child process (-child
// gateway-client SPEC): it reads one command per line on stdin and answers
// one JSON line on stdout.
type remoteClient struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

type remoteOp struct {
	Op   string        `json:"op"` // warmup, latency, throughput, sessions, spread
	N    int           `json:"n,omitempty"`
	Conc int           `json:"conc,omitempty"`
	Dur  time.Duration `json:"dur,omitempty"`
}

type remoteAnswer struct {
	Err       string          `json:"err,omitempty"`
	Latencies []time.Duration `json:"latencies,omitempty"`
	Calls     int64           `json:"calls,omitempty"`
	Took      time.Duration   `json:"took,omitempty"`
}

func startRemoteClient(ctx context.Context, self string, spec gatewaySpec) (*remoteClient, error) {
	b, _ := json.Marshal(spec)
	cmd := exec.Command(self, "-child", "gateway-client", string(b))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	return &remoteClient{cmd: cmd, in: in, out: sc}, nil
}

func (c *remoteClient) do(op remoteOp) (*remoteAnswer, error) {
	b, _ := json.Marshal(op)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	if !c.out.Scan() {
		return nil, fmt.Errorf("the client process ended: %v", c.out.Err())
	}
	var a remoteAnswer
	if err := json.Unmarshal(c.out.Bytes(), &a); err != nil {
		return nil, err
	}
	if a.Err != "" {
		return nil, errors.New(a.Err)
	}
	return &a, nil
}

func (c *remoteClient) close() {
	c.in.Close()
	c.cmd.Wait()
}

// childGatewayClient is the client process of -gateway-outside.
func childGatewayClient(args []string) error {
	if len(args) != 1 {
		return errors.New("gateway-client: want the subject's spec")
	}
	var spec gatewaySpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		return err
	}
	ctx := context.Background()
	call, closeFn, err := spec.dial(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	s := subject{name: spec.Kind, call: call}
	var sessions []*sdk.ClientSession
	sessionTransport := &http.Transport{MaxIdleConnsPerHost: 64}
	in := bufio.NewScanner(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var op remoteOp
		if err := json.Unmarshal(in.Bytes(), &op); err != nil {
			return err
		}
		var a remoteAnswer
		var err error
		switch op.Op {
		case "warmup":
			for range op.N {
				if err = call(ctx); err != nil {
					break
				}
			}
		case "latency":
			a.Latencies, err = latency(ctx, s, op.N)
		case "throughput":
			a.Calls, a.Took, err = throughput(ctx, s, op.Conc, op.Dur)
		case "sessions": // op.N more sessions kept open (mcp-http)
			for range op.N {
				t := &sdk.StreamableClientTransport{Endpoint: spec.URL, DisableStandaloneSSE: true,
					HTTPClient: &http.Client{Transport: bearer{sessionTransport, spec.Token}}}
				var cs *sdk.ClientSession
				// Sessions are of 2025-11-25: a client of 2026-07-28 opens none.
				if cs, err = sdk.NewClient(&sdk.Implementation{Name: "bench-scale", Version: "1"}, nil).Connect(ctx, t, &sdk.ClientSessionOptions{ProtocolVersion: gatewayProtocol}); err != nil {
					break
				}
				defer cs.Close()
				sessions = append(sessions, cs)
			}
		case "spread": // op.N calls one after another, each on the next session
			if len(sessions) == 0 {
				err = errors.New("spread: no sessions open")
				break
			}
			a.Latencies = make([]time.Duration, op.N)
			for i := range op.N {
				t0 := time.Now()
				if err = callTool(ctx, sessions[i%len(sessions)]); err != nil {
					break
				}
				a.Latencies[i] = time.Since(t0)
			}
		default:
			err = fmt.Errorf("unknown op %q", op.Op)
		}
		if err != nil {
			a = remoteAnswer{Err: err.Error()}
		}
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
	return in.Err()
}

// gatewayToolsList measures tools/list over /mcp on a catalog of 1,300
// tools, warm (issue 19's goal: under 20 ms with tool search off).
func gatewayToolsList(ctx context.Context, o benchOpts, e *env, token string) error {
	const tools = 1300
	have, err := e.st.ListPlugins(ctx, store.PluginFilter{})
	if err != nil {
		return err
	}
	for i := len(have); i < tools; i++ {
		p, err := plugins.Parse([]byte(fmt.Sprintf(`{"name":"bulk_tool_%04d","description":"look up record %d of the bulk catalog by id",
		"parameters":{"type":"object","required":["id"],"properties":{"id":{"type":"string","description":"the record's id"},
		"fields":{"type":"array","items":{"type":"string"}},"limit":{"type":"integer","minimum":1,"maximum":100}}},
		"execution":{"method":"GET","base_url":"http://127.0.0.1:9/records/%d","param_placement":"query"}}`, i, i, i)))
		if err != nil {
			return err
		}
		row, err := catalog.RowFromPlugin(p)
		if err != nil {
			return err
		}
		if err := e.st.CreatePlugin(ctx, row); err != nil {
			return err
		}
	}
	if _, err := e.changes.Poll(ctx); err != nil {
		return err
	}
	var subjects []subject
	listed := map[string]int{} // tools in a whole list, by subject
	var mu sync.Mutex
	count := func(name string, n int) {
		mu.Lock()
		defer mu.Unlock()
		listed[name] = n
	}
	for _, mode := range []toolset.Mode{toolset.ModeOff, toolset.ModeAuto} {
		srv := httptest.NewServer((&api.Server{Store: e.st, Creds: e.creds, Executor: e.ex, Changes: e.changes,
			MCP: &api.MCPConfig{ToolSearch: toolset.Config{Mode: mode}}}).Handler())
		defer srv.Close()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench-list", Version: "1"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: srv.URL + "/mcp", DisableStandaloneSSE: true,
				HTTPClient: &http.Client{Transport: bearer{http.DefaultTransport, token}}}, &sdk.ClientSessionOptions{ProtocolVersion: gatewayProtocol}) // the figures' own era
		if err != nil {
			return err
		}
		defer cs.Close()
		raw, err := rawLister(ctx, srv.URL+"/mcp", token)
		if err != nil {
			return err
		}
		rawName := fmt.Sprintf("tools/list, BLINDEXEC_TOOL_SEARCH=%s, raw JSON-RPC client", mode)
		subjects = append(subjects, subject{name: rawName, call: func(ctx context.Context) error {
			n, err := raw(ctx)
			if err == nil {
				count(rawName, n)
			}
			return err
		}})
		name := fmt.Sprintf("tools/list, BLINDEXEC_TOOL_SEARCH=%s, go-sdk client", mode)
		subjects = append(subjects, subject{name: name, call: func(ctx context.Context) error {
			n := 0 // every page, as a client wanting the catalog does
			for _, err := range cs.Tools(ctx, nil) {
				if err != nil {
					return err
				}
				n++
			}
			count(name, n)
			return nil
		}})
	}
	lo := o
	lo.n, lo.warmup, lo.conc, lo.rounds = max(o.n/20, 20), 5, 2, 1
	f, err := measure(ctx, subjects, lo)
	if err != nil {
		return err
	}
	fmt.Printf("== tools/list on a warm catalog of %d tools over /mcp (one session each, every page)\n", tools)
	for i, s := range subjects {
		fmt.Printf("   %s: %d tools listed, p50 %s, p99 %s, %.0f lists/s at concurrency %d, %.0f allocs and %.2f MB per list — goal p50 < 20 ms: %s\n",
			s.name, listed[s.name], round(f[i].p50), round(f[i].p99), f[i].rps, lo.conc, f[i].allocs, f[i].bytes/(1<<20), verdict(f[i].p50 < 20*time.Millisecond))
	}
	fmt.Println("   the raw client reads each page's bytes and its nextCursor only: the server's time; the go-sdk client")
	fmt.Println("   also decodes and checks every tool (ClientSession.ListTools)")
	fmt.Println()
	return nil
}

// rawLister opens a session on an MCP endpoint with plain HTTP and returns
// a tools/list of every page that reads no more of each answer than its
// nextCursor: what a list costs the server, and the wire.
func rawLister(ctx context.Context, endpoint, token string) (func(context.Context) (int, error), error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	var session string
	post := func(ctx context.Context, body string) ([]byte, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", endpoint, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode/100 != 2 {
			err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
		}
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			session = id
		}
		return b, err
	}
	if _, err := post(ctx, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench-raw","version":"1"}}}`); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if _, err := post(ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, fmt.Errorf("initialized: %w", err)
	}
	var ids atomic.Int64 // request ids, unique in the session at any concurrency
	ids.Store(1)
	return func(ctx context.Context) (int, error) {
		n, cursor := 0, ""
		for {
			params := `{}`
			if cursor != "" {
				params = `{"cursor":` + strconv.Quote(cursor) + `}`
			}
			b, err := post(ctx, `{"jsonrpc":"2.0","id":`+strconv.FormatInt(ids.Add(1), 10)+`,"method":"tools/list","params":`+params+`}`)
			if err != nil {
				return n, err
			}
			if i := bytes.Index(b, []byte("data: ")); i >= 0 { // an event stream: its one message
				b = b[i+len("data: "):]
			}
			res := gjson.GetBytes(b, "result")
			if !res.Exists() {
				return n, fmt.Errorf("tools/list: %.200s", b)
			}
			n += int(res.Get("tools.#").Int())
			if cursor = res.Get("nextCursor").String(); cursor == "" {
				return n, nil
			}
		}
	}, nil
}
