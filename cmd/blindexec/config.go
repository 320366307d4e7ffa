package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/egress"
	"github.com/blindexec/blindexec/engine/loop"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// config is every setting: a flag each, with its BLINDEXEC_ environment
// variable as the default. The README's configuration table lists them.
type config struct {
	db           string
	masterKey    string
	oldKeys      string
	adminToken   string
	serviceToken string
	addr         string
	egressAllow  string
	maxTimeout   time.Duration
	changePoll   time.Duration
	logLevel     string
	llmBaseURL   string
	llmAPIKey    string
	llmModel     string
	// toolSearch is BLINDEXEC_TOOL_SEARCH*: tool search over large
	// catalogs, in the LLM loop and the MCP server.
	toolSearch    toolset.Config
	toolSearchErr error
	// llmHTTP, when set, is the LLM client's HTTP client (tests).
	llmHTTP *http.Client
	// dial, when set, is what the egress dialer dials with after its
	// policy check (tests put a loopback-only guard here).
	dial egress.DialFunc
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def
	}
	if ms, err := strconv.Atoi(v); err == nil {
		return time.Duration(ms) * time.Millisecond
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d
	}
	return def
}

func (c *config) bind(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&c.db, "db", env("BLINDEXEC_DB", "sqlite:blindexec.db"), "database: sqlite:PATH or mysql:DSN (BLINDEXEC_DB)")
	f.StringVar(&c.egressAllow, "egress-allow", env("BLINDEXEC_EGRESS_ALLOW", ""), "CIDRs and host names outbound calls may reach despite the default deny of loopback, private and link-local addresses (BLINDEXEC_EGRESS_ALLOW)")
	f.DurationVar(&c.maxTimeout, "max-timeout", envDuration("BLINDEXEC_MAX_TIMEOUT_MS", 60*time.Second), "ceiling on any call's timeout (BLINDEXEC_MAX_TIMEOUT_MS, milliseconds)")
	f.DurationVar(&c.changePoll, "change-poll", envDuration("BLINDEXEC_CHANGE_POLL_MS", time.Second), "how often a long-running process reads the change counters, after which changes made elsewhere (other replicas, RuoYi's SQL) take effect (BLINDEXEC_CHANGE_POLL_MS, milliseconds)")
	f.StringVar(&c.logLevel, "log-level", env("BLINDEXEC_LOG_LEVEL", "info"), "debug, info, warn or error (BLINDEXEC_LOG_LEVEL)")
	// Secrets come from the environment only: a flag would show in ps.
	c.masterKey = os.Getenv("BLINDEXEC_MASTER_KEY")
	c.oldKeys = os.Getenv("BLINDEXEC_MASTER_KEYS_OLD")
	c.adminToken = os.Getenv("BLINDEXEC_ADMIN_TOKEN")
	c.serviceToken = os.Getenv("BLINDEXEC_SERVICE_TOKEN")
	c.addr = env("BLINDEXEC_ADDR", "127.0.0.1:8080")
	c.llmBaseURL = os.Getenv("BLINDEXEC_LLM_BASE_URL")
	c.llmAPIKey = os.Getenv("BLINDEXEC_LLM_API_KEY")
	c.llmModel = os.Getenv("BLINDEXEC_LLM_MODEL")
	c.toolSearch, c.toolSearchErr = toolset.ConfigFromEnv(os.Getenv)
}

func (c *config) logger() *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

// openStore opens the database and, when migrate is set, brings its schema
// up to date.
func (c *config) openStore(ctx context.Context, migrate bool) (*store.Store, error) {
	st, err := store.Open(ctx, c.db)
	if err != nil {
		return nil, err
	}
	if migrate {
		if err := st.Migrate(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

func (c *config) credentials(st *store.Store) (*auth.CredentialService, error) {
	kr, err := auth.ParseKeyring(c.masterKey, c.oldKeys)
	if err != nil {
		return nil, err
	}
	return auth.NewCredentialService(st, kr), nil
}

// engineParts are the runtime pieces shared by serve and exec.
type engineParts struct {
	store    *store.Store
	creds    *auth.CredentialService
	executor *engine.Executor
	recorder *engine.Recorder
	client   *http.Client // egress-guarded
	mcp      *enginemcp.Manager
	// changes follows the change counters; catalog and the credential and
	// MCP server caches are fresh while it stands still. Long-running
	// commands run its poll loop.
	changes *store.Watcher
	catalog *catalog.Catalog
}

func (c *config) engine(ctx context.Context, migrate bool, log *slog.Logger) (*engineParts, error) {
	if c.toolSearchErr != nil {
		return nil, c.toolSearchErr
	}
	client, err := c.egressClient()
	if err != nil {
		return nil, err
	}
	st, err := c.openStore(ctx, migrate)
	if err != nil {
		return nil, err
	}
	creds, err := c.credentials(st)
	if err != nil {
		st.Close()
		return nil, err
	}
	changes := store.NewWatcher(st, c.changePoll, log)
	if _, err := changes.Poll(ctx); err != nil {
		st.Close()
		return nil, err
	}
	creds.Changes = changes
	rec := engine.NewRecorder(api.StoreSink{Store: st}, engine.RecorderOptions{Logger: log})
	ex := engine.NewExecutor(client)
	ex.Credentials, ex.Recorder, ex.MaxTimeout, ex.Logger = creds, rec, c.maxTimeout, log
	m := enginemcp.NewManager(st, client)
	m.Logger, m.Changes = log, changes
	ex.Register(plugins.TypeMCP, enginemcp.Invoker{Manager: m})
	return &engineParts{store: st, creds: creds, executor: ex, recorder: rec, client: client, mcp: m,
		changes: changes, catalog: catalog.New(st, changes, log)}, nil
}

// close ends the MCP sessions, flushes the execution records and closes
// the database.
func (p *engineParts) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.mcp.Close()
	p.recorder.Close(ctx)
	p.store.Close()
}

// runner is the LLM loop on the operator's endpoint, or nil when none is
// configured. The endpoint is operator configuration: it is not subject to
// the egress policy, and no payload can change it.
func (c *config) runner(ex *engine.Executor, log *slog.Logger) *loop.Runner {
	if c.llmBaseURL == "" {
		return nil
	}
	oc := openai.DefaultConfig(c.llmAPIKey)
	oc.BaseURL = c.llmBaseURL
	if c.llmHTTP != nil {
		oc.HTTPClient = c.llmHTTP
	}
	return &loop.Runner{Client: loop.NewClient(oc), Executor: ex, DefaultModel: c.llmModel, ToolSearch: c.toolSearch, Logger: log}
}
