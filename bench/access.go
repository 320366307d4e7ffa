package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

const (
	// accessUsers and accessTools are the size issue 46 states the cost
	// of listing and searching at.
	accessUsers = 1000
	accessTools = 2000
	// accessModules are the permission strings the tools need, one each
	// ("bench:m7:list"), as RuoYi's menus give one a page.
	accessModules = 50
	// accessTTL outlasts the run: the measured calls are the cached ones
	// (BLINDEXEC_PERMISSIONS_TTL_MS; a miss costs one query per user and
	// TTL, measured in access/bench_test.go's BenchmarkSourceRead).
	accessTTL = 10 * time.Minute
	// accessQuery is the operator's SELECT of BLINDEXEC_PERMISSIONS=query.
	accessQuery = "SELECT perm FROM bench_user_perms WHERE user_id = ?"
)

// benchAccess states what deciding who may use which tool (issue 46)
// costs, access off and on taking turns in the same rounds:
//
//   - a call (POST /v1/execute, tools/call on /mcp) of a plugin with
//     perms, its user's strings cached, against the same call with the
//     engine's default (BLINDEXEC_PERMISSIONS=none,
//     BLINDEXEC_TOOL_ACCESS=open) on a plugin without perms; and the
//     commands the permissions' database received during the measured
//     calls, counted by a proxy in front of MariaDB (zero: the cached
//     decision makes no round trip);
//   - GET /v1/tools and GET /v1/tools/search by 1,000 users in turn over
//     2,000 tools, before issue 46 (no access step), under the default,
//     and with perms on every tool (each user's strings grant all of
//     them, so that the answers are as large as the default's and the
//     difference is the decision's work alone).
//
// The permissions come from BLINDEXEC_PERMISSIONS=query on MariaDB (a
// table of 51,000 strings); the engine's own store is SQLite, as in the
// other groups.
func benchAccess(ctx context.Context, o benchOpts) error {
	if os.Getenv("BLINDEXEC_TEST_MYSQL_DSN") == "" {
		return errors.New("access: set BLINDEXEC_TEST_MYSQL_DSN (the permissions are read from MariaDB)")
	}
	var commands atomic.Int64
	db, stop, err := accessDatabase(ctx, &commands)
	if err != nil {
		return err
	}
	defer stop()
	on, err := access.New(db, access.Settings{Mode: access.ModePerms, Source: access.SourceQuery, Query: accessQuery, TTL: accessTTL})
	if err != nil {
		return err
	}
	fmt.Printf("== access: who may use which tool (issue 46), off and on taking turns; permissions from BLINDEXEC_PERMISSIONS=query on MariaDB, cached (TTL %v)\n", accessTTL)
	if err := accessCalls(ctx, o, on, &commands); err != nil {
		return err
	}
	return accessLists(ctx, o, on)
}

// accessDatabase creates the permissions' database: what accessUsers
// users hold, every module's string and one of their own; it returns a
// connection through a proxy that counts commands.
func accessDatabase(ctx context.Context, commands *atomic.Int64) (*sql.DB, func(), error) {
	dsn, drop, err := gatewayDatabase(ctx, "blindexec_bench_access")
	if err != nil {
		return nil, nil, err
	}
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql:"))
	if err != nil {
		drop()
		return nil, nil, err
	}
	addr, stopProxy, err := countingProxy(cfg.Addr, commands)
	if err != nil {
		drop()
		return nil, nil, err
	}
	cfg.Addr = addr
	db, err := sql.Open("mysql", cfg.FormatDSN())
	stop := func() {
		if db != nil {
			db.Close()
		}
		stopProxy()
		drop()
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE bench_user_perms (user_id BIGINT NOT NULL, perm VARCHAR(100) NOT NULL, KEY (user_id))"); err != nil {
		stop()
		return nil, nil, err
	}
	for u := 1; u <= accessUsers; u++ {
		var q strings.Builder
		q.WriteString("INSERT INTO bench_user_perms VALUES ")
		for m := range accessModules {
			fmt.Fprintf(&q, "(%d, 'bench:m%d:list'), ", u, m)
		}
		fmt.Fprintf(&q, "(%d, 'bench:u%d:own')", u, u)
		if _, err := db.ExecContext(ctx, q.String()); err != nil {
			stop()
			return nil, nil, err
		}
	}
	return db, stop, nil
}

// accessServer serves e with checker deciding (nil: no access step, as
// before issue 46).
func accessServer(e *env, checker *access.Checker) *httptest.Server {
	s := &api.Server{Store: e.st, Creds: e.creds, Executor: e.ex, Changes: e.changes, MCP: &api.MCPConfig{}}
	if checker != nil {
		e.ex.Access, s.Access = checker, checker
	}
	return httptest.NewServer(s.Handler())
}

// accessCalls measures a call with access off and on.
func accessCalls(ctx context.Context, o benchOpts, on *access.Checker, commands *atomic.Int64) error {
	up := companyUpstream()
	defer up.Close()
	serve := func(checker *access.Checker, perms string) (*httptest.Server, string, func(), error) {
		e, err := newEnv(ctx, nil)
		if err != nil {
			return nil, "", nil, err
		}
		if _, err := e.addCompanyPlugin(ctx, up.URL, gatewayUser, gatewayAPIKey); err != nil {
			e.close()
			return nil, "", nil, err
		}
		if perms != "" {
			if _, err := e.st.SetPluginsPerms(ctx, []string{gatewayTool}, &perms, "bench"); err != nil {
				e.close()
				return nil, "", nil, err
			}
		}
		token, _, err := api.IssueToken(ctx, e.st, gatewayUser, "bench-access", 0, "")
		if err != nil {
			e.close()
			return nil, "", nil, err
		}
		if _, err := e.changes.Poll(ctx); err != nil {
			e.close()
			return nil, "", nil, err
		}
		srv := accessServer(e, checker)
		return srv, token, func() { srv.Close(); e.close() }, nil
	}
	off, offToken, closeOff, err := serve(&access.Checker{}, "")
	if err != nil {
		return err
	}
	defer closeOff()
	onSrv, onToken, closeOn, err := serve(on, "bench:m7:list")
	if err != nil {
		return err
	}
	defer closeOn()

	execBody := `{"name":"` + gatewayTool + `","arguments":{"keyword":"` + gatewayKeyword + `"}}`
	subjects, closeAll, err := dialSubjects(ctx, []namedSpec{
		{"POST /v1/execute, access off", gatewaySpec{Kind: "post", URL: off.URL + "/v1/execute", Body: execBody, Token: offToken}},
		{"POST /v1/execute, access on", gatewaySpec{Kind: "post", URL: onSrv.URL + "/v1/execute", Body: execBody, Token: onToken}},
		{"/mcp tools/call, access off", gatewaySpec{Kind: "mcp-http", URL: off.URL + "/mcp", Token: offToken, Protocol: o.gatewayMCP}},
		{"/mcp tools/call, access on", gatewaySpec{Kind: "mcp-http", URL: onSrv.URL + "/mcp", Token: onToken, Protocol: o.gatewayMCP}},
	})
	if err != nil {
		return err
	}
	defer closeAll()
	var calls atomic.Int64
	for i, s := range subjects {
		call := s.call
		subjects[i].call = func(ctx context.Context) error {
			calls.Add(1)
			return call(ctx)
		}
	}
	// The first call read user 7's strings; from here on, every one is
	// answered from the cache.
	before, calls0 := commands.Load(), calls.Load()
	f, err := measure(ctx, subjects, o)
	if err != nil {
		return err
	}
	queries, made := commands.Load()-before, calls.Load()-calls0
	fmt.Printf("   a call of a plugin with perms (user 7 holds one of them) against the default on a plugin without; %d rounds: %d calls each one after another, %s each at concurrency %d\n",
		max(o.rounds, 1), o.n/max(o.rounds, 1)*max(o.rounds, 1), o.dur, o.conc)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "subject\tp50\tp99\tp50 ×off\tp99 ×off\tcalls/s @%d\tCPU/call\tallocs/call\t\n", o.conc)
	for i, s := range subjects {
		base := f[i-i%2]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%.0f\t%s\t%.0f\t\n", s.name, round(f[i].p50), round(f[i].p99),
			float64(f[i].p50)/float64(base.p50), float64(f[i].p99)/float64(base.p99), f[i].rps, round(f[i].cpu), f[i].allocs)
	}
	tw.Flush()
	fmt.Printf("   commands to the permissions' database during the %d measured calls (warm-up included): %d\n\n", made, queries)
	return nil
}

// accessLists measures listing and searching per user.
func accessLists(ctx context.Context, o benchOpts, on *access.Checker) error {
	catalogEnv := func(perms bool) (*env, []string, error) {
		e, err := newEnv(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		if err := addAccessTools(ctx, e.st, perms); err != nil {
			e.close()
			return nil, nil, err
		}
		tokens := make([]string, accessUsers)
		for u := range tokens {
			if tokens[u], _, err = api.IssueToken(ctx, e.st, int64(u+1), "bench-access", 0, ""); err != nil {
				e.close()
				return nil, nil, err
			}
		}
		if _, err := e.changes.Poll(ctx); err != nil {
			e.close()
			return nil, nil, err
		}
		return e, tokens, nil
	}
	plain, plainTokens, err := catalogEnv(false)
	if err != nil {
		return err
	}
	defer plain.close()
	guarded, guardedTokens, err := catalogEnv(true)
	if err != nil {
		return err
	}
	defer guarded.close()
	before46 := accessServer(plain, nil)
	defer before46.Close()
	// A second server on the same store, deciding by the default.
	plainOpen := httptest.NewServer((&api.Server{Store: plain.st, Creds: plain.creds, Executor: plain.ex, Changes: plain.changes,
		MCP: &api.MCPConfig{}, Access: &access.Checker{}}).Handler())
	defer plainOpen.Close()
	onSrv := accessServer(guarded, on)
	defer onSrv.Close()

	queries := []string{"list the invoices of a customer", "create an order", "delete a user", "export the monthly report", "update a supplier"}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	get := func(base, path string, tokens []string, want int) func(context.Context) error {
		var next atomic.Int64
		return func(ctx context.Context) error {
			i := next.Add(1)
			u := base + path
			if path == "/v1/tools/search" {
				u += "?q=" + url.QueryEscape(queries[i%int64(len(queries))])
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
			req.Header.Set("Authorization", "Bearer "+tokens[i%int64(len(tokens))])
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var total struct {
				Total int `json:"total"`
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s", u, resp.Status)
			}
			if err := json.NewDecoder(resp.Body).Decode(&total); err != nil {
				return err
			}
			if path == "/v1/tools" && total.Total != want {
				return fmt.Errorf("%s lists %d tools, want %d", u, total.Total, want)
			}
			return nil
		}
	}
	var subjects []subject
	for _, path := range []string{"/v1/tools", "/v1/tools/search"} {
		subjects = append(subjects,
			subject{name: "GET " + path + ", before issue 46 (no access step)", call: get(before46.URL, path, plainTokens, accessTools)},
			subject{name: "GET " + path + ", BLINDEXEC_PERMISSIONS=none, open", call: get(plainOpen.URL, path, plainTokens, accessTools)},
			subject{name: "GET " + path + ", perms on every tool, query source", call: get(onSrv.URL, path, guardedTokens, accessTools)})
	}
	// Every user's strings read once before the measurement.
	for u := range int64(accessUsers) {
		if err := on.Allowed(ctx, access.Subject{User: u + 1}, &plugins.Plugin{Name: "warm", Perms: []string{"bench:m0:list"}}); err != nil {
			return err
		}
	}
	f, err := measure(ctx, subjects, o)
	if err != nil {
		return err
	}
	fmt.Printf("   %d tools, %d users in turn (a per-user token each), every tool listed to every user; %d rounds: %d calls each one after another, %s each at concurrency %d\n",
		accessTools, accessUsers, max(o.rounds, 1), o.n/max(o.rounds, 1)*max(o.rounds, 1), o.dur, o.conc)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "subject\tp50\tp99\tp99 ×before\tp99 ×none\tcalls/s @%d\tCPU/call\tallocs/call\t\n", o.conc)
	for i, s := range subjects {
		before, none := f[i-i%3], f[i-i%3+1]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%.0f\t%s\t%.0f\t\n", s.name, round(f[i].p50), round(f[i].p99),
			float64(f[i].p99)/float64(before.p99), float64(f[i].p99)/float64(none.p99), f[i].rps, round(f[i].cpu), f[i].allocs)
	}
	tw.Flush()
	return accessStepAlone(ctx, on)
}

// accessStepAlone times the decision alone over a 2,000-tool list (what
// a per-user list adds to its answer), users in turn, cached: the figure
// the answers' own tail hides; and a search's, the set of the usable
// tools kept per user (access.Checker.UsableSet), once every user's set
// is made.
func accessStepAlone(ctx context.Context, on *access.Checker) error {
	ps := make([]*plugins.Plugin, accessTools)
	for i := range ps {
		ps[i] = &plugins.Plugin{Name: fmt.Sprintf("tool_%04d", i), Perms: []string{fmt.Sprintf("bench:m%d:list", i%accessModules)}}
	}
	// timed times step; the count of the tools it found usable is
	// taken after the clock stopped.
	timed := func(what string, step func(sub access.Subject) (func() int, error)) error {
		lat := make([]time.Duration, 5*accessUsers)
		for i := range lat {
			t0 := time.Now()
			usable, err := step(access.Subject{User: int64(i%accessUsers) + 1})
			lat[i] = time.Since(t0)
			if err != nil || usable() != accessTools {
				return fmt.Errorf("%s: not every tool usable: %v", what, err)
			}
		}
		sortDurations(lat)
		fmt.Printf("   %s over %d tools, %d times, users in turn: p50 %v, p99 %v\n",
			what, accessTools, len(lat), round(quantile(lat, 0.5)), round(quantile(lat, 0.99)))
		return nil
	}
	if err := timed("the access step alone of a list (access.Checker.Usable, strings cached)", func(sub access.Subject) (func() int, error) {
		usable, err := on.Usable(ctx, sub, ps)
		return func() int { return len(usable) }, err
	}); err != nil {
		return err
	}
	if err := timed("a search's (access.Checker.UsableSet, each user's set kept)", func(sub access.Subject) (func() int, error) {
		set, err := on.UsableSet(ctx, sub, ps)
		return func() int {
			n := 0
			for i := range ps {
				if set.Has(i) {
					n++
				}
			}
			return n
		}, err
	}); err != nil {
		return err
	}
	fmt.Println()
	return nil
}

// addAccessTools stores accessTools plugins, each needing one module's
// string when perms is set.
func addAccessTools(ctx context.Context, st *store.Store, perms bool) error {
	nouns := []string{"invoice", "order", "user", "report", "supplier", "customer", "contract", "payment", "shipment", "ticket"}
	verbs := []string{"list", "create", "update", "delete", "export"}
	params := store.JSON(`{"type":"object","properties":{"id":{"type":"string","description":"The record's id."},"page":{"type":"integer","default":1}}}`)
	cfg := store.JSON(`{"execution":{"type":"http","method":"GET","base_url":"http://127.0.0.1:9/records"}}`)
	for i := range accessTools {
		verb, noun := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		p := &store.Plugin{Name: fmt.Sprintf("%s_%s_%04d", verb, noun, i), Title: verb + " " + noun,
			Description:     fmt.Sprintf("%s the %ss of module %d (%s records, paged).", strings.ToUpper(verb[:1])+verb[1:], noun, i%accessModules, noun),
			ParameterSchema: params, ExecutionConfig: cfg}
		if perms {
			s := fmt.Sprintf("bench:m%d:list", i%accessModules)
			p.Perms = &s
		}
		if err := st.CreatePlugin(ctx, p); err != nil {
			return err
		}
	}
	return nil
}
