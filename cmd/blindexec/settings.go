package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/console"
	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/internal/settings"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/toolsearch"
)

// registry is every setting blindexec reads: its name, type, default and
// meaning, declared once below and read only through the variable its
// declaration returns (Get). docs/configuration.md's table is rendered
// from it (TestConfigurationPage; -update rewrites it). A new setting is
// one declaration here, then a Get where it is used.
var registry settings.Registry

// Where the settings are: the database, the keys and the tokens.
var (
	// BLINDEXEC_ENV_FILE is read from the process environment alone, by
	// settings.Load, before any other: declared for its documentation.
	_ = settings.Foreign(&registry, settings.EnvFileVar, "path", "",
		"the env file to read (else `./"+settings.DefaultEnvFile+"` when there is one); must exist, except for `init`, which creates it; set in the environment only")
	setDB = settings.Check(&registry, "BLINDEXEC_DB", store.DefaultDSN, "`sqlite:PATH` or `mysql:DSN`", "sqlite:PATH or mysql:DSN", func(v string) bool {
		return strings.HasPrefix(v, store.DialectSQLite+":") || strings.HasPrefix(v, store.DialectMySQL+":")
	}, "the database: `sqlite:PATH`, or `mysql:` and a go-sql-driver DSN, e.g. `mysql:root@tcp(127.0.0.1:3306)/test?parseTime=true`").WithFlag("--db")
	setMasterKey = settings.Secret(&registry, "BLINDEXEC_MASTER_KEY",
		"base64 of 32 bytes: the credential vault's key (`blindexec init` writes one to the env file; or `openssl rand -base64 32`)")
	setOldKeys = settings.Secret(&registry, "BLINDEXEC_MASTER_KEYS_OLD",
		"comma-separated older keys (same encoding), still accepted for reading; `cred rotate` re-encrypts under the current key")
	setAdminToken = settings.Secret(&registry, "BLINDEXEC_ADMIN_TOKEN",
		"bearer token of the administrator: every route (`blindexec init` writes one)")
	setServiceToken = settings.Secret(&registry, "BLINDEXEC_SERVICE_TOKEN",
		"bearer token of the trusted backend (RuoYi): runtime routes, acting for any `user_id` it names (`blindexec init` writes one; RuoYi keeps the same value)")
	setMetricsToken = settings.Secret(&registry, "BLINDEXEC_METRICS_TOKEN",
		"bearer token that reads `GET /metrics` and nothing else (a Prometheus scraper's); unset: only the administrator's token reads it ([Operations](operations.md#health-metrics-and-logs))")
)

// The server.
var (
	setAddr = settings.HostPort(&registry, "BLINDEXEC_ADDR", "127.0.0.1:8080",
		"listen address of `serve` (the container image sets `0.0.0.0:8080`)")
	setNoMigrate = settings.Bool(&registry, "BLINDEXEC_NO_MIGRATE", false,
		"`true`: do not migrate the database when `serve` starts: until it is (`blindexec migrate`), `serve` answers 503 on every route but `/healthz` and tries again, with a pause growing to 30 s; then it checks and records its master key as any start does").WithFlag("serve --no-migrate")
	setLogLevel = settings.OneOf(&registry, "BLINDEXEC_LOG_LEVEL", "info", []string{"debug", "info", "warn", "error"},
		"the least level logged; JSON logs on stderr").WithFlag("--log-level")
	setEgressAllow = settings.String(&registry, egress.EnvAllow, "",
		"comma-separated CIDRs, IPs and host names (`*.corp.example` allowed) that outbound calls may reach despite the default deny of loopback, private, link-local, CGNAT, metadata and every other special-purpose address that is not globally reachable ([Egress](egress.md)); for the catalog's plugins and the service's and administrator's inline plugins only: a per-user token's own inline plugin (not a copy of a catalog row) stays under the default deny ([Security](security.md))").WithFlag("--egress-allow")
	setPlaintextCredentialHosts = settings.Check(&registry, egress.EnvPlaintextCredentialHosts, "", "hosts and origins", "comma-separated host names, IPs and http origins, e.g. ruoyi.corp,http://10.0.0.5:8080", func(v string) bool {
		_, err := egress.ParsePlaintextHosts(v)
		return err == nil
	}, "comma-separated host names, IPs and `http://host:port` origins to which credentials (a user's key, a connection's token, an OAuth client secret, an MCP server's keys, a sealed import URL's secret) may be sent over plain `http://`: any other `http://` URL but loopback's is refused before anything is dialled (`egress_denied`, expected `https://`); a call without credentials is unaffected. For an internal service on a network of its own ([Security](security.md#tls81-credentials-never-in-plain-text))")
	setMaxTimeout = settings.Millis(&registry, "BLINDEXEC_MAX_TIMEOUT_MS", 60*time.Second,
		"ceiling on any call's timeout (the flag takes a Go duration, `90s`)").WithFlag("--max-timeout")
	setChangePoll = settings.Millis(&registry, "BLINDEXEC_CHANGE_POLL_MS", time.Second,
		"how often `serve` (and `mcp serve --stdio`) reads the change counters. What a replica keeps in memory — the parsed catalog, token lookups, credentials (encrypted), MCP server configurations — is reloaded when they move: writes through this replica at once, writes elsewhere (other replicas, the CLI, RuoYi's SQL) after one poll. See [Deployment](deployment.md#deployment-several-replicas)").WithFlag("--change-poll")
	setChangeAudit = settings.Int(&registry, "BLINDEXEC_CHANGE_AUDIT_POLLS", store.DefaultAuditEvery, 0,
		"every how many polls a replica audits the change counters (0: never): checks that their triggers exist (not ready in `/readyz` while one is missing) and compares a fingerprint of each followed table with the one taken when its counter last moved, catching writes no trigger saw (`TRUNCATE TABLE`). See [Deployment](deployment.md#deployment-several-replicas)")
	setChangeDetection = settings.OneOf(&registry, "BLINDEXEC_CHANGE_DETECTION", store.ChangeTriggers, store.ChangeModes,
		"how the change counters move on a MySQL-compatible database: `triggers` (triggers on the followed tables count every write, whoever makes it) or `poll` (for databases without triggers: TiDB, OceanBase; `migrate` creates none, the engine's own writes move the counters, and each replica's audit, every `BLINDEXEC_CHANGE_AUDIT_POLLS` polls, finds writes made by plain SQL from a checksum of the tables' contents: seen within 10 s by default). SQLite always has its triggers. See [Deployment](deployment.md#databases-and-change-detection)")
	setPublicURL = settings.URL(&registry, "BLINDEXEC_PUBLIC_URL",
		"base of the `api_url`s of `GET /v1/tools?format=dynamic` (e.g. `http://blindexec:8080`); unset: the scheme and host the request came to")
	setBrowserURL = settings.URL(&registry, "BLINDEXEC_BROWSER_URL",
		"the address people's browsers reach the engine at (e.g. `https://ai.example.com`, or `https://ai.example.com/engine` behind a reverse proxy serving it under a path: the flow's cookie, form and links stay under that path), required for [connections](connections.md#connections): the OAuth callback is `<BLINDEXEC_BROWSER_URL>/oauth/callback`, registered at each provider as an exact match, and start URLs are `<BLINDEXEC_BROWSER_URL>/oauth/start/<handle>`. Never derived from a request's `Host`; while unset, `POST /v1/connections/{provider}/authorize` answers 503 `connections_not_configured`. With `https://` the flow cookie and the console's session cookie are `Secure` (the console then signs in over HTTPS, or at a loopback address, only)")
	setAllowedOrigins = settings.Check(&registry, "BLINDEXEC_ALLOWED_ORIGINS", "", "origins", "comma-separated http(s) origins, e.g. https://chat.example.com,http://localhost:6274", func(v string) bool {
		_, ok := mcpOrigins("", v)
		return ok
	}, "comma-separated browser origins (`scheme://host[:port]`) whose pages may call the MCP endpoints (`/mcp`, `/mcp/openapi`, `/mcp/agents/{name}`) besides `BLINDEXEC_BROWSER_URL`'s own: a request with any other `Origin` header, `null` included, is refused 403 `origin_not_allowed`; one without (a non-browser client) is served. See [Upgrade notes](upgrading.md#mcp-browser-origins-issue-48)")
	setTrustedProxies = settings.Check(&registry, console.EnvTrustedProxies, "", "IPs and CIDRs", "comma-separated IP addresses and CIDRs, e.g. 10.0.0.5,192.168.0.0/16", func(v string) bool {
		_, err := console.ParseProxies(v)
		return err == nil
	}, "`serve`: comma-separated IPs and CIDRs of the reverse proxies whose `X-Forwarded-For` names the client of a console sign-in (unset: the connection's address) and whose `X-Forwarded-Proto: https` makes the console's session cookie `Secure`")
)

// The LLM loop and confirmation.
var (
	setLLMBaseURL = settings.URL(&registry, "BLINDEXEC_LLM_BASE_URL",
		"the OpenAI-compatible endpoint of the LLM loop (operator configuration: not subject to the egress deny); unset, runs answer 503 `llm_not_configured`")
	setLLMAPIKey = settings.Secret(&registry, "BLINDEXEC_LLM_API_KEY",
		"the API key sent to `BLINDEXEC_LLM_BASE_URL`")
	setLLMModel = settings.String(&registry, "BLINDEXEC_LLM_MODEL", "",
		"the model of a run that names none")
	setLLMMaxResponse = settings.Int(&registry, loop.EnvMaxResponseBytes, loop.DefaultMaxResponseBytes, 1,
		"the most bytes of one model answer (a stream's whole body); past it the run fails with `llm_error` naming the limit")
	setLLMMaxToolCalls = settings.Int(&registry, loop.EnvMaxToolCalls, loop.DefaultMaxToolCalls, 1,
		"the tool calls of one model turn that are executed; the rest are answered to the model as `not_executed`")
	setConfirm = settings.OneOf(&registry, "BLINDEXEC_CONFIRM", string(confirm.Consequential),
		[]string{string(confirm.Consequential), string(confirm.Never), string(confirm.Always)},
		"which calls of a run wait for a person ([Confirmation](confirmation.md#confirmation-consequential-calls-wait-for-a-person)); a run's `options.confirm` may ask for more, never less")
	setConfirmVia = settings.OneOf(&registry, "BLINDEXEC_CONFIRM_VIA", "api", []string{"api", "console"},
		"where a user's approvals count — with `console`, only from console sessions opened with a console-only token ([Confirmation](confirmation.md#confirmation-consequential-calls-wait-for-a-person))")
	setConfirmTTL = settings.Millis(&registry, "BLINDEXEC_CONFIRM_TTL_MS", confirm.DefaultTTL,
		"how long a pending call waits for a decision before its run closes as `expired`")
	setPendingMax = settings.Int(&registry, api.EnvPendingMax, store.DefaultPendingMaxPerUser, 1,
		"how many calls may wait for a person for one user at once (prepared, held by the rule, over MCP, in paused runs, and MCP servers' questions waiting for an answer, a 2026-07-28 client's parked calls included); past it 429 `too_many_pending` naming this setting, or for a question the upstream refused at once ([Bounds and paging](confirmation.md#bounds-and-paging), [MCP](mcp.md#an-upstreams-question-on-the-approval-page))")
	setPendingRetention = settings.Millis(&registry, api.EnvPendingRetention, store.DefaultPendingRetention,
		"how long a decided or expired pending item is kept before it is removed; the audit log keeps the decisions ([Bounds and paging](confirmation.md#bounds-and-paging))")
)

// Who may use which tool (issue 46): the executor applies the rule to every
// call, and every list and search shows only what the user may use.
var (
	setToolAccess = settings.OneOf(&registry, access.EnvToolAccess, string(access.ModeOpen),
		[]string{string(access.ModeOpen), string(access.ModePerms)},
		"what a plugin without `perms` is: `open`, usable by every user (as before), or `perms`, by no user until an administrator gives it perms ([Permissions and agents](permissions.md#the-rule)); applied to every call, list and search")
	setPermissions = settings.OneOf(&registry, access.EnvPermissions, access.SourceNone,
		[]string{access.SourceRuoYi, access.SourceYudao, access.SourceQuery, access.SourceNone},
		"where users' permission strings come from: RuoYi-Vue's tables in the same database, ruoyi-vue-pro's, the operator's `BLINDEXEC_PERMISSIONS_QUERY`, or none — a payload's or a token's strings alone ([Permissions and agents](permissions.md#where-a-users-permissions-come-from))")
	setPermissionsQuery = settings.Check(&registry, access.EnvPermissionsQuery, "", "SQL", "one SELECT statement with one ? (the user id)",
		func(v string) bool { return access.CheckQuery(v) == nil },
		"with `BLINDEXEC_PERMISSIONS=query`: one `SELECT` with one `?`, the user id, whose one column holds a permission string a row; run read-only, within 2 s, at most 10,000 rows")
	setPermissionsDigestQuery = settings.Check(&registry, access.EnvPermissionsDigestQuery, "", "SQL", "one SELECT statement without ?",
		func(v string) bool { return access.CheckDigestQuery(v) == nil },
		"with `BLINDEXEC_PERMISSIONS=query`, optional: one `SELECT` without parameters whose rows change whenever a grant `BLINDEXEC_PERMISSIONS_QUERY` reads changes (a version or update-time column, a count); read at each `BLINDEXEC_CHANGE_POLL_MS` as ruoyi's tables are, a move ends every replica's kept permissions and tells the MCP sessions whose tools changed; run read-only, within 2 s ([Permissions and agents](permissions.md#where-a-users-permissions-come-from))")
	setPermissionsTTL = settings.Millis(&registry, access.EnvPermissionsTTL, access.DefaultTTL,
		"how long a replica keeps a user's permission strings read from the database: the longest a role changed takes to reach a call under the query source without `BLINDEXEC_PERMISSIONS_DIGEST_QUERY`; under ruoyi and yudao a change of their tables is seen within one BLINDEXEC_CHANGE_POLL_MS")
)

// Tool search and MCP.
var (
	setToolSearch = settings.OneOf(&registry, toolset.EnvMode, string(toolset.ModeAuto),
		[]string{string(toolset.ModeAuto), string(toolset.ModeAlways), string(toolset.ModeOff)},
		"whether a run's LLM, and `/mcp` and `mcp serve --stdio` clients, get `search_tools` and the tools it finds instead of every tool ([Tool search in runs and over MCP](tool-search.md#tool-search-in-runs-and-over-mcp)); a run's `options.tool_search` overrides it")
	setToolSearchThreshold = settings.Check(&registry, toolset.EnvThreshold, strconv.Itoa(toolset.DefaultThreshold),
		"integer 1 to "+strconv.Itoa(toolset.MaxThreshold), "a number of tools from 1 to "+strconv.Itoa(toolset.MaxThreshold), func(v string) bool {
			n, err := strconv.Atoi(v)
			return err == nil && n >= 1 && n <= toolset.MaxThreshold
		}, "the number of tools past which `auto` searches, and the most tools shown at once besides the meta-tools")
	setToolSearchPinned = settings.String(&registry, toolset.EnvPinned, "",
		"comma-separated tools `/mcp` and `mcp serve --stdio` list beside the meta-tools when searching")
	setMaxQueryChars = settings.Int(&registry, toolsearch.EnvMaxQueryChars, toolsearch.DefaultMaxQueryChars, 1,
		"the most characters of a search query, wherever it enters (`search_tools` over `/mcp`, `mcp serve --stdio` and in runs, `GET /v1/tools/search`, `q` of `GET /v1/tools`, the console, the OpenAPI query tools' searches); a longer one is refused before any search")
	setEmbeddingsURL = settings.URL(&registry, "BLINDEXEC_EMBEDDINGS_URL",
		"optional semantic ranking of tool search: an OpenAI-compatible embeddings endpoint (e.g. `https://api.openai.com/v1`); off when unset; operator configuration like the LLM's ([Large catalogs](tool-search.md#large-catalogs-tool-search))")
	setEmbeddingsAPIKey = settings.Secret(&registry, "BLINDEXEC_EMBEDDINGS_API_KEY",
		"the API key sent to `BLINDEXEC_EMBEDDINGS_URL`")
	setEmbeddingsModel = settings.String(&registry, "BLINDEXEC_EMBEDDINGS_MODEL", "text-embedding-3-small",
		"the embeddings model")
	setSearchExpansion = settings.OneOf(&registry, "BLINDEXEC_SEARCH_EXPANSION", "off", []string{"off", "model"},
		"`model`: the LLM (`BLINDEXEC_LLM_BASE_URL`, `BLINDEXEC_LLM_MODEL`) writes, once per tool's content, a few requests a person might make of it, which tool search reads as a weak field of capped weight ([Large catalogs](tool-search.md#issue-49-the-apis-names-peoples-words-the-other-language))")
	setMCPUser = settings.Int(&registry, mcpserver.EnvUser, 0, 0,
		"the user id `blindexec mcp serve --stdio` acts for (whose credentials apply)")
	setMCPAllowStdio = settings.Bool(&registry, "BLINDEXEC_MCP_ALLOW_STDIO", false,
		"`true`: let `POST /v1/mcp/servers` register stdio servers (commands run on the engine's host); the CLI always may")
	setMCPSessionsPerUser = settings.Int(&registry, mcpserver.EnvSessionsPerUser, mcpserver.DefaultSessionsPerUser, 1,
		"`serve`: live `/mcp` sessions acting for one user; past it, `initialize` ends the user's least recently used idle session ([Sessions](mcp.md#mcp-sessions-and-the-wire))")
	setMCPSessions = settings.Int(&registry, mcpserver.EnvSessions, mcpserver.DefaultSessions, 1,
		"`serve`: live `/mcp` sessions of the replica")
	setMCPSessionIdle = settings.Millis(&registry, mcpserver.EnvSessionIdle, mcpserver.DefaultSessionIdle,
		"`serve`: a `/mcp` session without a request this long is closed (0: the default)")
	setOpenAPIBaseURL = settings.URL(&registry, "BLINDEXEC_OPENAPI_BASE_URL",
		"the default document of `/mcp/openapi` under `serve`: a service whose `{base}/openapi.json` to read; with one, the tools' `spec_path` is optional. The egress guard trusts that URL (operator configuration, like the LLM endpoint) and redirects from it within its origin; a caller's `spec_path` (another port or path of its host included) is held to the default deny, `BLINDEXEC_EGRESS_ALLOW` being the catalog's")
	setOpenAPISpec = settings.String(&registry, "BLINDEXEC_OPENAPI_SPEC", "",
		"the default document of `/mcp/openapi` under `serve`, instead of `BLINDEXEC_OPENAPI_BASE_URL`: a document's URL or file")
	setOpenAPICacheTTL = settings.Millis(&registry, "BLINDEXEC_OPENAPI_CACHE_TTL_MS", 0,
		"skip fetching a document again within this time (0: every fetch is hashed, and an unchanged sha256 reuses the parsed index)").WithFlag("openapi --cache-ttl")
)

// Limits of serve.
var (
	setBodyTimeout = settings.Millis(&registry, "BLINDEXEC_BODY_TIMEOUT_MS", api.DefaultBodyTimeout,
		"`serve`: time to receive a request body, from the handler's start; a slower body is cut with 408. Imports use `BLINDEXEC_IMPORT_TIMEOUT_MS`")
	setWriteTimeout = settings.Millis(&registry, "BLINDEXEC_WRITE_TIMEOUT_MS", api.DefaultWriteTimeout,
		"`serve`: time to answer, from the handler's start; the request's work is cancelled with it. Streaming routes (`POST /v1/runs`, `/mcp`, `/mcp/openapi`) have none (a run is bounded by its 10-minute limit)")
	setImportTimeout = settings.Millis(&registry, "BLINDEXEC_IMPORT_TIMEOUT_MS", api.DefaultImportTimeout,
		"`serve`: body and answer time of `POST /v1/plugins/import/*`")
	setImportMaxMB = settings.Int(&registry, openapi.EnvMaxMB, openapi.DefaultMaxBytes>>20, 1,
		"what one OpenAPI import (`POST /v1/plugins/import/openapi`, the console's, `blindexec import openapi`) may make, in MiB: its plugins' parameter schemas (each at least 136 bytes an argument, what it holds until encoded), titles, descriptions, tags, keywords and response words, 256 bytes a plugin (and a failed operation) for the rest, counted before any schema is encoded; past it the import is refused whole, nothing written ([OpenAPI import](openapi-import.md#limits-on-what-a-document-makes)). Microsoft Graph's description (11,422 operations) counts 55.5 MiB, GitHub's 2.2 MiB. An MCP server's import too (`POST /v1/plugins/import/mcp`, `blindexec import mcp`): its `tools/list` answer, all pages, as its tools encode, and the plugins they make; and the tool lists `serve` caches per server and credential set, together, the oldest dropped past it ([MCP](mcp.md))")
	setHeaderTimeout = settings.Millis(&registry, "BLINDEXEC_HEADER_TIMEOUT_MS", 10*time.Second,
		"`serve`: time to receive a request's headers")
	setIdleTimeout = settings.Millis(&registry, "BLINDEXEC_IDLE_TIMEOUT_MS", 120*time.Second,
		"`serve`: how long an idle keep-alive connection stays open")
	setMaxHeaderBytes = settings.Int(&registry, "BLINDEXEC_MAX_HEADER_BYTES", 64<<10, 1,
		"`serve`: cap on a request's header bytes; past it, 431")
	setMaxCallsPerUser = settings.Int(&registry, "BLINDEXEC_MAX_CONCURRENT_PER_USER", 16, 0,
		"`serve`: tool calls one acting user may have in flight (0: no limit); past it, 429 with `Retry-After`")
	setMaxRunsPerUser = settings.Int(&registry, "BLINDEXEC_MAX_RUNS_PER_USER", 4, 0,
		"`serve`: LLM runs one acting user may have in flight (0: no limit); past it, 429 with `Retry-After`")
	setQuotaTZ = settings.Check(&registry, "BLINDEXEC_QUOTA_TZ", "UTC", "IANA time zone", "an IANA time zone such as Asia/Shanghai", func(v string) bool {
		_, err := time.LoadLocation(v)
		return err == nil
	}, "the time zone quota windows are aligned in and resets are told in, e.g. `Asia/Shanghai` ([Quotas and budgets](quotas.md#quotas-and-budgets))")
)

// Records, outages and shutdown.
var (
	setSpoolDir = settings.String(&registry, "BLINDEXEC_SPOOL_DIR", "blindexec-spool",
		"the spool directory of `serve` (relative: to the working directory; created `0700`; one process at a time, enforced by a lock on `LOCK`, which holds the holder's pid). A directory another process holds, or a path that is a file, is a settings error: `serve` exits at once with 2, naming the variable, the path and the holder's pid, whether or not the database is reachable. The one-shot commands (`exec`, `chat`) write to the database directly ([Durable execution records](operations.md#durable-execution-records))")
	setSpoolMaxMB = settings.Int(&registry, "BLINDEXEC_SPOOL_MAX_MB", 256, 1,
		"records not yet in the database past which new calls are refused (256 MB: some 800,000 records)")
	setSpoolCommit = settings.Millis(&registry, "BLINDEXEC_SPOOL_COMMIT_MS", 20*time.Millisecond,
		"the record spool's group-commit window")
	setSpoolGather = settings.Millis(&registry, "BLINDEXEC_SPOOL_GATHER_MS", 100*time.Millisecond,
		"how long the drainer lets fewer than a batch of records gather before writing them (0: write each window's at once, for an execution log that lags the calls less, at more database work a record)")
	setShutdownGrace = settings.Millis(&registry, "BLINDEXEC_SHUTDOWN_GRACE_MS", 15*time.Second,
		"on SIGTERM, how long calls in flight may take to finish, once the drain is over")
	setShutdownDrain = settings.Millis(&registry, "BLINDEXEC_SHUTDOWN_DRAIN_MS", 5*time.Second,
		"on SIGTERM, how long `serve` answers `/readyz` 503 (`stopping`) while it goes on serving every request, for load balancers to take it out of rotation, before it closes its listener (0: at once; an interrupt, Ctrl-C, or a second signal skips it) ([Stopping a replica](deployment.md#stopping-a-replica))")
	setOutageGrace = settings.Millis(&registry, "BLINDEXEC_DB_OUTAGE_GRACE_MS", api.DefaultOutageGrace,
		"how long `serve` answers from what it read while the database is unreachable ([When the database falters](operations.md#when-the-database-falters))")
)

// Tracing: OpenTelemetry's standard names, read by package tracing
// (tracing.Load) through registry.Lookup, so declared here for their
// documentation; settings.OTELVariables, which the env file accepts, lists
// the same (TestSettingsRegistry).
func init() {
	for _, s := range []struct{ name, typ, def, meaning string }{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http(s) URL", "", "`serve`: the OTLP collector traces go to (`http://collector:4318` for http/protobuf, which appends `/v1/traces`; `http://collector:4317` for grpc). **Unset: tracing is off** (unlike the OpenTelemetry SDK's default of localhost) and costs nothing ([Tracing](operations.md#tracing))"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http(s) URL", "", "the full traces URL, used as is, instead of the one above"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "`http/protobuf`, `grpc`", "http/protobuf", "the OTLP protocol"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "`http/protobuf`, `grpc`", "", "the OTLP protocol of traces, over `OTEL_EXPORTER_OTLP_PROTOCOL`"},
		{"OTEL_SERVICE_NAME", "text", "blindexec", "the traces' `service.name`"},
		{"OTEL_TRACES_SAMPLER", "`parentbased_always_on`, `parentbased_always_off`, `parentbased_traceidratio`, `always_on`, `always_off`, `traceidratio`", "parentbased_always_on", "which traces are sampled. A caller's sampled flag counts only from the service and administrator tokens"},
		{"OTEL_TRACES_SAMPLER_ARG", "number 0 to 1", "1", "the sampler's ratio"},
		{"OTEL_SDK_DISABLED", "`true` or `false`", "false", "`true`: no tracing, whatever else is set"},
	} {
		settings.Foreign(&registry, s.name, s.typ, s.def, s.meaning)
	}
}

// mcpOrigins is the origins the MCP endpoints accept from browsers:
// browserURL's and those listed (comma-separated), or false naming none
// valid when one listed is not an http(s) origin.
func mcpOrigins(browserURL, listed string) ([]string, bool) {
	var out []string
	if o, ok := api.Origin(browserURL); ok {
		out = append(out, o)
	}
	for v := range strings.SplitSeq(listed, ",") {
		if strings.TrimSpace(v) == "" {
			continue
		}
		o, ok := api.Origin(v)
		if !ok {
			return nil, false
		}
		out = append(out, o)
	}
	return out, true
}
