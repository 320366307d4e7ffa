package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/console"
	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/loop"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/engine/questions"
	"github.com/blindexec/blindexec/engine/recordspool"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/internal/settings"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/quota"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/toolsearch"
	"github.com/blindexec/blindexec/tracing"
)

// config is every setting: a flag each where one makes sense, with its
// BLINDEXEC_ variable (read strictly by internal/settings) as the default.
// docs/configuration.md lists them.
type config struct {
	db           string
	masterKey    string
	oldKeys      string
	adminToken   string
	serviceToken string
	metricsToken string // reads /metrics only
	addr         string
	egressAllow  string
	// plaintext lists the hosts credentials may reach over http besides
	// loopback (BLINDEXEC_PLAINTEXT_CREDENTIAL_HOSTS).
	plaintext *egress.PlaintextHosts
	// egressClosed, when set, holds egressClient's calls to the default deny
	// whatever egressAllow says, its denials giving this reason.
	egressClosed string
	maxTimeout   time.Duration
	changePoll   time.Duration
	changeDetect string // store.ChangeTriggers or store.ChangePoll
	changeAudit  int64  // polls between two audits of the counters
	logLevel     string
	llmBaseURL   string
	llmAPIKey    string
	llmModel     string
	// llmMaxResponse and llmMaxToolCalls bound what the model answers.
	llmMaxResponse  int64
	llmMaxToolCalls int
	noMigrate       bool
	publicURL       string
	browserURL      string
	mcpOrigins      []string
	mcpAllowStdio   bool
	mcpUser         int64
	openapiBaseURL  string
	openapiSpec     string
	openapiCacheTTL time.Duration
	// importMaxBytes bounds what one OpenAPI import makes
	// (BLINDEXEC_IMPORT_MAX_MB).
	importMaxBytes int
	// toolSearch is BLINDEXEC_TOOL_SEARCH*: tool search over large
	// catalogs, in the LLM loop and the MCP server.
	toolSearch toolset.Config
	// embeddings is BLINDEXEC_EMBEDDINGS_*: tool search's optional
	// semantic ranking.
	embeddings embeddingsSettings
	// confirm and confirmTTL are BLINDEXEC_CONFIRM and _TTL_MS: which
	// calls of a run wait for a person, and for how long (issue 33).
	confirm    confirm.Policy
	confirmTTL time.Duration
	confirmVia string // BLINDEXEC_CONFIRM_VIA: api or console
	// pendingMax and pendingRetention bound the calls waiting for a
	// person (issue 44): BLINDEXEC_PENDING_MAX_PER_USER, _RETENTION_MS.
	pendingMax       int
	pendingRetention time.Duration
	// limits are serve's protections against its callers.
	limits *serveLimits
	// mcpSessions bound serve's /mcp sessions.
	mcpSessions mcpserver.SessionLimits
	// trustedProxies are the proxies whose X-Forwarded-For the console
	// believes.
	trustedProxies []netip.Prefix
	// settings is where the values came from, for messages that name it.
	settings *settings.Source
	// dbSetting is BLINDEXEC_DB's value (or its default): db differs
	// from it when --db was given.
	dbSetting string
	// searchExpansion: the LLM writes requests for tool search
	// (BLINDEXEC_SEARCH_EXPANSION=model).
	searchExpansion bool
	// llmHTTP, when set, is the LLM client's HTTP client (tests).
	llmHTTP *http.Client
	// dial, when set, is what the egress dialer dials with after its
	// policy check (tests put a loopback-only guard here).
	dial egress.DialFunc
	// spool is set by serve (to serveSpool): execution records go through
	// a local spool; the one-shot commands write them straight.
	spool, serveSpool spoolSettings
	// outageGrace and shutdownGrace are serve's: how long it answers from
	// what it read during a database outage, how long calls may finish
	// after SIGTERM.
	outageGrace, shutdownGrace time.Duration
	// shutdownDrain is how long serve, on SIGTERM, answers /readyz 503
	// while still serving, before the shutdown grace.
	shutdownDrain time.Duration
	// tracing is serve's OpenTelemetry tracing (OTEL_*): off without an
	// endpoint.
	tracing tracing.Config
	// quotaTZ is the time zone quota windows are aligned in.
	quotaTZ *time.Location
	// access is who may use which tool (issue 46): checked here, for the
	// executor's decision point to apply (access.New).
	access access.Settings
}

// bind reads every setting from src and declares the global flags; a bad
// value is left in src.Err().
func (c *config) bind(root *cobra.Command, src *settings.Source) {
	c.settings = src
	f := root.PersistentFlags()
	c.dbSetting = setDB.Get(src)
	f.StringVar(&c.db, "db", c.dbSetting, "database: sqlite:PATH or mysql:DSN (BLINDEXEC_DB)")
	f.StringVar(&c.egressAllow, "egress-allow", setEgressAllow.Get(src), "CIDRs and host names outbound calls may reach despite the default deny of loopback, private, link-local and other special-purpose addresses (BLINDEXEC_EGRESS_ALLOW)")
	f.DurationVar(&c.maxTimeout, "max-timeout", setMaxTimeout.Get(src), "ceiling on any call's timeout, e.g. 90s (BLINDEXEC_MAX_TIMEOUT_MS, in milliseconds)")
	f.DurationVar(&c.changePoll, "change-poll", setChangePoll.Get(src), "how often a long-running process reads the change counters, after which changes made elsewhere (other replicas, RuoYi's SQL) take effect, e.g. 1s (BLINDEXEC_CHANGE_POLL_MS, in milliseconds)")
	f.StringVar(&c.logLevel, "log-level", setLogLevel.Get(src), "debug, info, warn or error (BLINDEXEC_LOG_LEVEL)")
	// Secrets come from the environment or the env file only: a flag
	// would show in ps.
	c.masterKey = setMasterKey.Get(src)
	c.oldKeys = setOldKeys.Get(src)
	c.adminToken = setAdminToken.Get(src)
	c.serviceToken = setServiceToken.Get(src)
	c.metricsToken = setMetricsToken.Get(src)
	c.addr = setAddr.Get(src)
	c.llmBaseURL = setLLMBaseURL.Get(src)
	c.llmAPIKey = setLLMAPIKey.Get(src)
	c.llmModel = setLLMModel.Get(src)
	c.llmMaxResponse = setLLMMaxResponse.Get(src)
	c.llmMaxToolCalls = int(setLLMMaxToolCalls.Get(src))
	c.noMigrate = setNoMigrate.Get(src)
	c.publicURL = setPublicURL.Get(src)
	c.browserURL = setBrowserURL.Get(src)
	c.mcpOrigins, _ = mcpOrigins(c.browserURL, setAllowedOrigins.Get(src))
	c.mcpAllowStdio = setMCPAllowStdio.Get(src)
	c.mcpUser = setMCPUser.Get(src)
	c.openapiBaseURL = setOpenAPIBaseURL.Get(src)
	c.openapiSpec = setOpenAPISpec.Get(src)
	c.openapiCacheTTL = setOpenAPICacheTTL.Get(src)
	c.importMaxBytes = int(min(setImportMaxMB.Get(src), 1<<30) << 20)
	c.limits = loadServeLimits(src)
	c.trustedProxies, _ = console.ParseProxies(setTrustedProxies.Get(src))
	c.plaintext, _ = egress.ParsePlaintextHosts(setPlaintextCredentialHosts.Get(src))
	c.mcpSessions = mcpserver.SessionLimits{
		PerUser: int(setMCPSessionsPerUser.Get(src)),
		Total:   int(setMCPSessions.Get(src)),
		Idle:    setMCPSessionIdle.Get(src),
	}
	c.toolSearch = toolSearchSettings(src)
	c.embeddings = embeddingsSettings{url: setEmbeddingsURL.Get(src), apiKey: setEmbeddingsAPIKey.Get(src), model: setEmbeddingsModel.Get(src)}
	c.searchExpansion = setSearchExpansion.Get(src) == "model"
	if c.searchExpansion && (c.llmBaseURL == "" || c.llmModel == "") {
		src.Invalid("BLINDEXEC_SEARCH_EXPANSION", "model only with BLINDEXEC_LLM_BASE_URL and BLINDEXEC_LLM_MODEL set")
	}
	c.confirm = confirm.Policy(setConfirm.Get(src))
	c.confirmTTL = setConfirmTTL.Get(src)
	c.confirmVia = setConfirmVia.Get(src)
	c.pendingMax = int(setPendingMax.Get(src))
	c.pendingRetention = setPendingRetention.Get(src)
	c.serveSpool = loadSpoolSettings(src)
	c.changeAudit = setChangeAudit.Get(src)
	c.changeDetect = setChangeDetection.Get(src)
	c.outageGrace = setOutageGrace.Get(src)
	c.shutdownGrace = setShutdownGrace.Get(src)
	c.shutdownDrain = setShutdownDrain.Get(src)
	c.quotaTZ, _ = time.LoadLocation(setQuotaTZ.Get(src))
	c.access = access.Settings{Mode: access.Mode(setToolAccess.Get(src)), Source: setPermissions.Get(src),
		Query: setPermissionsQuery.Get(src), DigestQuery: setPermissionsDigestQuery.Get(src), TTL: setPermissionsTTL.Get(src)}
	if (c.access.Source == access.SourceQuery) != (c.access.Query != "") {
		src.Invalid(access.EnvPermissionsQuery, "a SELECT when, and only when, "+access.EnvPermissions+"="+access.SourceQuery)
	}
	if c.access.Source != access.SourceQuery && c.access.DigestQuery != "" {
		src.Invalid(access.EnvPermissionsDigestQuery, "a SELECT only when "+access.EnvPermissions+"="+access.SourceQuery)
	}
	c.tracing = loadTracing(src)
	registry.CheckFile(src)
}

// loadTracing reads the OTEL_* variables of serve's tracing; bad values
// are left in src.Err() like the others.
func loadTracing(src *settings.Source) tracing.Config {
	c, err := tracing.Load(registry.Lookup(src))
	for _, e := range unjoin(err) {
		if ce, ok := e.(*tracing.ConfigError); ok {
			src.Invalid(ce.Name, ce.Want)
		}
	}
	return c
}

// unjoin lists the errors errors.Join joined (err itself when it is not
// a join, none for nil).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

func (c *config) logger() *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	h := slog.Handler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	if c.tracing.On() {
		h = tracing.LogHandler(h) // lines of a traced request name its trace and span
	}
	return slog.New(h)
}

// schema says what opening the database does about its schema.
type schema int

const (
	// schemaRequire refuses a database that lacks migrations: every
	// command but migrate and serve (which never migrate behind the
	// operator's back).
	schemaRequire schema = iota
	// schemaMigrate applies the pending migrations and logs them: serve
	// unless told not to (migrate prints them).
	schemaMigrate
	// schemaAsIs opens the database whatever its schema: migrate, which
	// then migrates it.
	schemaAsIs
	// schemaAwait refuses a database that lacks migrations, as
	// schemaRequire does, for serve --no-migrate: its start gate answers
	// 503 and tries again until a migration job has run, and only then is
	// its master key checked and recorded (served before, it never was: a
	// replica with another key wrote credentials under it).
	schemaAwait
)

// errRunMigrate is the advice of a command refused an unmigrated database.
const errRunMigrate = "run `blindexec migrate` first (or start `blindexec serve`, which migrates)"

// dbNamed names the database setting, its value redacted, and where it
// came from: a database not reached at start (a MariaDB not running, a
// DSN with the wrong port) then says which setting to look at.
func (c *config) dbNamed() string {
	origin := "--db"
	if c.db == c.dbSetting {
		origin = cmp.Or(c.settings.Origin(setDB.Name), "the default")
	}
	return fmt.Sprintf("%s=%q from %s", setDB.Name, redact.Value(c.db), origin)
}

// openStore opens the database and handles its schema as told.
func (c *config) openStore(ctx context.Context, sch schema) (*store.Store, error) {
	if path, ok := strings.CutPrefix(c.db, store.DialectSQLite+":"); ok && sch != schemaMigrate && sch != schemaAsIs {
		// Opening would create an empty file, in whatever directory the
		// command ran: say where the database was looked for instead.
		path, _, _ = strings.Cut(path, "?")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: there is no database at %s: %s", store.ErrNotMigrated, path, errRunMigrate)
		}
	}
	st, err := store.Open(ctx, c.db)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, c.dbNamed())
	}
	st.SetPendingMax(c.pendingMax)
	if err := st.SetChangeDetection(c.changeDetect); err != nil {
		st.Close()
		return nil, fmt.Errorf("BLINDEXEC_CHANGE_DETECTION: %w", err)
	}
	switch sch {
	case schemaMigrate:
		var applied []int64
		if applied, err = st.MigrateApplied(ctx); err == nil && len(applied) > 0 {
			// An upgrade's one trace of what it changed in the schema.
			c.logger().Info("database migrated", "db", st.Dialect(), "applied", versionList(applied))
		}
	case schemaRequire, schemaAwait:
		if err = st.CheckMigrated(ctx); errors.Is(err, store.ErrNotMigrated) {
			err = fmt.Errorf("%w: %s", err, errRunMigrate)
		}
	}
	if err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// keyCheck says what opening the credential service checks of the keys.
type keyCheck int

const (
	// keysVerify refuses keys that cannot decrypt what the database holds
	// (auth.CheckKeys).
	keysVerify keyCheck = iota
	// keysRecord verifies, and keeps a key check for a master key the
	// database has not seen: serve and the commands that write credentials.
	keysRecord
)

// credentials is the credential service over st, its keys checked as told.
func (c *config) credentials(ctx context.Context, st *store.Store, check keyCheck) (*auth.CredentialService, error) {
	kr, err := auth.ParseKeyring(c.masterKey, c.oldKeys)
	if err != nil {
		return nil, err
	}
	if err := auth.CheckKeys(ctx, st, kr, check == keysRecord); err != nil {
		if origin := c.settings.Origin(setMasterKey.Name); origin != "" {
			err = fmt.Errorf("%w (BLINDEXEC_MASTER_KEY from %s)", err, origin)
		}
		return nil, err
	}
	return c.credentialService(st, kr), nil
}

func (c *config) credentialService(st *store.Store, kr *auth.Keyring) *auth.CredentialService {
	return auth.NewCredentialService(st, kr)
}

// engineParts are the runtime pieces shared by serve and exec.
type engineParts struct {
	store    *store.Store
	creds    *auth.CredentialService
	executor *engine.Executor
	recorder *engine.Recorder
	spool    *recordspool.Spool // nil: records go straight to the database
	client   *http.Client       // egress-guarded
	mcp      *enginemcp.Manager
	// changes follows the change counters; catalog and the credential and
	// MCP server caches are fresh while it stands still. Long-running
	// commands run its poll loop.
	changes *store.Watcher
	catalog *catalog.Catalog
	rules   *auth.Catalog // the credential rules' view of the catalog
	quotas  *quota.Keeper
	// access is who may use which tool; serve and mcp serve hand it to
	// the executor and the lists, the operator's own CLI does not.
	access *access.Checker
	// agents are the stored agents, following changes (access resolves
	// them).
	agents *catalog.Agents
	// conns keeps OAuth providers and users' connections.
	conns *connections.Service
}

func (c *config) engine(ctx context.Context, sch schema, log *slog.Logger) (*engineParts, error) {
	client, err := c.egressClient()
	if err != nil {
		return nil, err
	}
	st, err := c.openStore(ctx, sch)
	if err != nil {
		return nil, err
	}
	// serve records its key; the other commands only check.
	check := keysVerify
	if sch != schemaRequire {
		check = keysRecord
	}
	creds, err := c.credentials(ctx, st, check)
	if err != nil {
		st.Close()
		return nil, err
	}
	changes := store.NewWatcher(st, c.changePoll, log)
	changes.AuditEvery = int(c.changeAudit)
	// Unreadable counters (the database gone since it was opened) are
	// logged; the poll loop reads them once they are.
	changes.Poll(ctx)
	creds.Changes = changes
	rec, sp, err := c.recorder(st, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	acc, err := access.New(st.DB(), c.access)
	if err != nil {
		st.Close()
		return nil, err
	}
	acc.ProbeEvery = c.changePoll // /readyz reads the source once a poll at most
	// RuoYi's tables carry no trigger: their digest, read at each poll,
	// tells every replica's permissions and MCP sessions of a grant
	// changed within one poll.
	if digest, ok := acc.FollowGrants(func() int64 { return changes.Current().Grants }); ok {
		changes.Grants = digest
	}
	cat := catalog.New(st, changes, log)
	rules := auth.NewCatalog(st, cat, changes) // binds to the rows the catalog serves
	creds.Identifiers = rules
	ex := engine.NewExecutor(client)
	// A per-user token's own inline plugin: the default egress policy,
	// BLINDEXEC_EGRESS_ALLOW being the operator's opening for the catalog.
	ex.Register(plugins.TypeHTTP, engine.NewHTTPInvoker(client, egress.NewClient(&egress.Dialer{Dial: c.dial,
		Policy: egress.Closed("a per-user token's own inline plugin stays under the default deny, whatever " + egress.EnvAllow + " opens to the catalog's plugins")})))
	ex.Credentials, ex.Recorder, ex.MaxTimeout, ex.Logger, ex.Catalog = creds, rec, c.maxTimeout, log, rules
	ex.Answers = &questions.Inbox{Store: st} // the answers to upstream questions, in the audit log
	ex.BrowserURL = c.browserURL             // an upstream's link to the engine's own pages is refused
	// Past the outage grace no call is made, whichever entry point (stdio
	// too) and however long ago its request began.
	ex.Fresh = func() error { return changes.Stale(c.outageGrace) }
	m := enginemcp.NewManager(st, client)
	m.Logger, m.Changes, m.Identifiers = log, changes, rules.Identifiers
	m.MaxToolsBytes = c.importMaxBytes // a tools/list is held and imported whole
	enginemcp.Invoker{Manager: m}.RegisterOn(ex)
	agents := catalog.NewAgents(st, changes, cat)
	acc.Agents = agents // the rule resolves the agents a call or a list names
	quotas := quota.New(st, changes, cat, c.quotaTZ, log)
	ex.Quota = quotas
	conns, err := c.connections(st, client)
	if err != nil {
		st.Close()
		return nil, err
	}
	conns.Catalog, conns.Logger = rules, log
	ex.Connections = conns
	return &engineParts{store: st, creds: creds, executor: ex, recorder: rec, spool: sp, client: client, mcp: m,
		changes: changes, catalog: cat, rules: rules, quotas: quotas, access: acc, agents: agents, conns: conns}, nil
}

// replicas records and compares serve's operator settings with those of
// the other replicas on its database, a round per audit of the change
// counters, under the keys of its credentials.
func (c *config) replicas(parts *engineParts, log *slog.Logger) *auth.Replicas {
	host, _ := os.Hostname()
	return &auth.Replicas{Store: parts.store, Keyring: parts.creds.Keyring(), Logger: log, Version: versionLine(), Host: host + " " + c.addr,
		Every: c.changePoll * time.Duration(cmp.Or(max(c.changeAudit, 0), store.DefaultAuditEvery)+1), // audits off: as often as by default
		Settings: []auth.Setting{
			{Name: setAdminToken.Name, Value: c.adminToken},
			{Name: setServiceToken.Name, Value: c.serviceToken},
			{Name: setMetricsToken.Name, Value: c.metricsToken},
		}}
}

// connections is the connections service over st: its tokens under the
// vault's keys, its token requests through client (egress-guarded).
func (c *config) connections(st *store.Store, client *http.Client) (*connections.Service, error) {
	kr, err := auth.ParseKeyring(c.masterKey, c.oldKeys)
	if err != nil {
		return nil, err
	}
	return connections.New(st, kr, client, c.browserURL), nil
}

// close ends the MCP sessions, flushes the execution records and closes
// the database.
func (p *engineParts) close() {
	p.mcp.Close()
	// Unspent leases go back, for other replicas (or the next start).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	p.quotas.Tidy(ctx, true)
	cancel()
	closeRecords(p.recorder, p.spool)
	p.store.Close()
}

// expansion is tool search's expansion by the operator's LLM, nil unless
// BLINDEXEC_SEARCH_EXPANSION=model.
func (c *config) expansion(st *store.Store, log *slog.Logger) *toolsearch.Expansion {
	if !c.searchExpansion {
		return nil
	}
	return &toolsearch.Expansion{Client: loop.NewClient(c.llmConfig()), Model: c.llmModel, Store: st, Logger: log}
}

// llmConfig is the client configuration of the operator's LLM endpoint.
func (c *config) llmConfig() openai.ClientConfig {
	oc := openai.DefaultConfig(c.llmAPIKey)
	oc.BaseURL = c.llmBaseURL
	if c.llmHTTP != nil {
		oc.HTTPClient = c.llmHTTP
	}
	return oc
}

// runner is the LLM loop on the operator's endpoint, or nil when none is
// configured. The endpoint is operator configuration: it is not subject to
// the egress policy, and no payload can change it.
func (c *config) runner(ex *engine.Executor, log *slog.Logger) *loop.Runner {
	if c.llmBaseURL == "" {
		return nil
	}
	return &loop.Runner{Client: loop.NewClient(c.llmConfig()), Executor: ex, DefaultModel: c.llmModel, ToolSearch: c.toolSearch, Logger: log,
		MaxResponseBytes: c.llmMaxResponse, MaxToolCalls: c.llmMaxToolCalls,
		Confirm: c.confirm, ConfirmTTL: c.confirmTTL}
}

// toolSearchSettings reads BLINDEXEC_TOOL_SEARCH, _THRESHOLD and _PINNED,
// and BLINDEXEC_MAX_QUERY_CHARS.
func toolSearchSettings(src *settings.Source) toolset.Config {
	n, _ := strconv.Atoi(setToolSearchThreshold.Get(src))
	return toolset.Config{Mode: toolset.Mode(setToolSearch.Get(src)), Threshold: n, Pinned: toolset.Names(setToolSearchPinned.Get(src)),
		MaxQueryChars: int(setMaxQueryChars.Get(src))}
}
