// Package api serves blindexec over HTTP: the catalog for administrators,
// the runtime routes for the RuoYi backend and per-user callers.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/engine/questions"
	"github.com/blindexec/blindexec/quota"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/toolsearch"
)

// Server holds what the routes need. Build it, then serve Handler().
type Server struct {
	Store    *store.Store
	Creds    *auth.CredentialService
	Executor *engine.Executor
	// AdminToken and ServiceToken are the operator's bearer tokens; empty
	// disables that role.
	AdminToken   string
	ServiceToken string
	// MetricsToken reads GET /metrics and nothing else (a Prometheus
	// scraper's); empty: only the administrator's token reads it.
	MetricsToken string
	Registry     *prometheus.Registry
	Logger       *slog.Logger
	// HTTPClient fetches documents for imports: the egress-guarded client.
	HTTPClient *http.Client
	// MCP enables the MCP routes (servers, proxy, /mcp); nil: none.
	MCP *MCPConfig
	// Runner runs the LLM loop of POST /v1/runs; nil: no LLM configured.
	Runner *loop.Runner
	// OpenAPITools is the MCP server of the OpenAPI query tools, served at
	// /mcp/openapi to any token holder; nil: not served.
	OpenAPITools http.Handler
	// MCPOrigins are the browser origins (scheme://host[:port]) whose pages
	// may call the MCP endpoints: BLINDEXEC_BROWSER_URL's and
	// BLINDEXEC_ALLOWED_ORIGINS. A request with another Origin is refused
	// (403); one without (a non-browser client) is served.
	MCPOrigins []string
	// Changes follows the change counters; the caches below are fresh while
	// it stays where it was when they were filled. nil: a watcher that moves
	// only on this server's own writes (tests, single-process tools). serve
	// runs its poll loop.
	Changes *store.Watcher
	// Catalog is the parsed catalog the runtime routes read; nil: one over
	// Store following Changes.
	Catalog *catalog.Catalog
	// Access leaves out of every list a per-user caller gets the tools its
	// user may not use (issue 46); nil lists them all, and refuses what
	// names an agent.
	Access ToolAccess
	// Agents are the agents, following Changes; nil: one over Store and
	// Catalog. An *access.Checker given as Access without agents of its
	// own resolves these.
	Agents *catalog.Agents
	// Semantic, when set, fuses embedding similarity into tool search
	// (BLINDEXEC_EMBEDDINGS_*); nil: keyword search alone.
	Semantic *toolsearch.Semantic
	// Expansion, when set, has the LLM write requests for each tool that
	// search reads (BLINDEXEC_SEARCH_EXPANSION=model); nil: none.
	Expansion *toolsearch.Expansion
	// Deadlines bound reading bodies and writing answers, per route.
	Deadlines Deadlines
	// MaxQueryChars bounds the q of GET /v1/tools/search and GET
	// /v1/tools (toolsearch.DefaultMaxQueryChars when 0;
	// BLINDEXEC_MAX_QUERY_CHARS).
	MaxQueryChars int
	// ImportMaxBytes bounds what one OpenAPI import may make
	// (openapi.DefaultMaxBytes when 0; BLINDEXEC_IMPORT_MAX_MB).
	ImportMaxBytes int
	// Version is the engine's version, shown by /healthz so that a caller
	// knows which payload fields it accepts.
	Version string

	// OutageGrace is how long the runtime serves what it read last while
	// the change counters cannot be read (the database is unreachable);
	// past it, the routes answer 503. 0: without limit (tests,
	// single-process tools).
	OutageGrace time.Duration

	// Quota keeps the quota rules and serves their routes; nil: one over
	// Store following Changes, windows in UTC (set the Executor's Quota to
	// it for calls to count).
	Quota *quota.Keeper
	// Confirm is the confirmation policy of direct calls
	// (BLINDEXEC_CONFIRM; runs use their Runner's): a per-user token's
	// call that needs confirmation takes two steps. Empty: never.
	Confirm confirm.Policy
	// ConfirmTTL is how long a prepared call waits (confirm.DefaultTTL
	// when 0).
	ConfirmTTL time.Duration
	// ConfirmVia is BLINDEXEC_CONFIRM_VIA: "console" counts a per-user
	// principal's decisions only from console sessions opened with a
	// console-only token, so that an agent holding the user's API token
	// cannot approve its own calls; "" or "api" counts them from any of
	// the user's tokens.
	ConfirmVia string

	// Connections keeps OAuth providers and users' connections, and
	// serves their routes and the flow's browser pages; nil: none.
	Connections *connections.Service

	// Sessions, when set, accepts the console's session cookie in place
	// of the bearer token.
	Sessions Sessions

	// Tracer starts the span of each authenticated request (tracing.New);
	// nil: tracing off, and nothing of it on the request path.
	Tracer trace.Tracer

	// Replicas, when set, says where this replica's operator settings
	// disagree with its peers' (auth.Replicas): /readyz shows it to the
	// admin and metrics tokens.
	Replicas interface{ Disagreements() []string }

	tokens     tokenCache
	operators  operatorHashes
	tools      toolIndex
	mcpService *mcpserver.Service // /mcp, when MCP is on
	// questions keeps an upstream's questions for the person (inbox).
	questions *questions.Inbox
	inboxOnce sync.Once
	agentMCP  sync.Map // agent name → *agentMCP: /mcp/agents/{name}
	// confirmMetrics counts decisions about pending items (nil: none).
	confirmMetrics *confirm.Metrics
	// migrated is set once /readyz has seen the schema up to date: a
	// schema is not unmigrated behind a running engine.
	migrated atomic.Bool
	closed   atomic.Bool // failing closed (logged once each way)
	// stopping is set by Stopping: /readyz answers 503 from then on.
	stopping atomic.Bool
	// revokeDue: the token counter moved and endRevoked has not yet read
	// every check it needs (set on a move, cleared once it has);
	// revokeUnread: that failure is logged. Both are the watcher's
	// listeners' (serialized by its polls).
	revokeDue, revokeUnread bool
	// notReady is the reason /readyz last logged (nil: ready since).
	notReady atomic.Pointer[string]
}

// Handler returns the routes.
func (s *Server) Handler() http.Handler {
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if s.Changes == nil && s.Store != nil {
		s.Changes = store.NewWatcher(s.Store, time.Second, s.Logger)
		s.Changes.Poll(context.Background())
	}
	if s.Catalog == nil && s.Store != nil {
		s.Catalog = catalog.New(s.Store, s.Changes, s.Logger)
	}
	if s.Catalog != nil {
		s.followCatalog()
	}
	if s.Agents == nil && s.Store != nil && s.Catalog != nil {
		s.Agents = catalog.NewAgents(s.Store, s.Changes, s.Catalog)
	}
	if c, ok := s.Access.(*access.Checker); ok && c.Agents == nil && s.Agents != nil {
		c.Agents = s.Agents // the agents served are the agents applied
	}
	if s.Quota == nil && s.Store != nil {
		s.Quota = s.newQuota()
	}
	if s.Quota != nil && s.Executor != nil && s.Executor.Quota == nil {
		s.Executor.Quota = s.Quota // the rules served are the rules applied
	}
	if s.Executor != nil && s.Executor.Tokens == nil && s.Store != nil {
		s.Executor.Tokens = tokenPerms{s} // the tokens served are the tokens decided with
	}
	if s.Quota != nil && s.Runner != nil && s.Runner.Budget == nil {
		s.Runner.Budget = s.Quota
	}
	if s.Connections != nil && s.Runner != nil && s.Runner.Connector == nil {
		s.Runner.Connector = StartURLs{s.Connections} // a run pauses for the user to connect (issue 34)
	}
	if s.Runner != nil && s.Runner.NewIndex == nil {
		s.Runner.NewIndex = s.runIndex
	}
	if s.Runner != nil && s.Runner.Offer == nil && s.Executor != nil {
		s.Runner.Offer = s.Executor // each model call offers what the run's token allows then
	}
	if s.Registry != nil && s.tools.live.Metrics == nil {
		if m, err := toolsearch.NewMetrics(s.Registry); err == nil {
			s.tools.live.Metrics = m
		}
	}
	if s.Registry != nil && (s.Runner != nil || s.Confirm != "") && s.confirmMetrics == nil { // decisions are about runs and direct calls
		if m, err := confirm.NewMetrics(s.Registry); err == nil {
			s.confirmMetrics = m
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.Version})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /v1/openapi.json", serveOpenAPI)
	if s.Registry != nil {
		mux.Handle("GET /metrics", s.metrics(promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{}).ServeHTTP))
	}

	mux.HandleFunc("GET /v1/plugins", s.with(roleService, s.listPlugins))
	mux.HandleFunc("POST /v1/plugins", s.with(roleAdmin, s.createPlugin))
	mux.HandleFunc("GET /v1/plugins/{name}", s.with(roleService, s.getPlugin))
	mux.HandleFunc("PUT /v1/plugins/{name}", s.with(roleAdmin, s.putPlugin))
	mux.HandleFunc("PATCH /v1/plugins/{name}", s.with(roleAdmin, s.patchPlugin))
	mux.HandleFunc("DELETE /v1/plugins/{name}", s.with(roleAdmin, s.deletePlugin))
	mux.HandleFunc("POST /v1/plugins/import/openapi", s.with(roleAdmin, s.importOpenAPI))
	mux.HandleFunc("POST /v1/plugins/consequential", s.with(roleAdmin, s.setConsequential))
	mux.HandleFunc("POST /v1/plugins/perms", s.with(roleAdmin, s.setPerms))
	mux.HandleFunc("GET /v1/sources", s.with(roleService, s.listSources))

	mux.HandleFunc("GET /v1/tools", s.with(roleUser, s.listTools))
	mux.HandleFunc("GET /v1/tools/search", s.with(roleUser, s.searchTools))
	mux.HandleFunc("POST /v1/execute", s.with(roleUser, s.execute))
	mux.HandleFunc("GET /v1/executions", s.with(roleUser, s.listExecutions))
	mux.HandleFunc("POST /v1/runs", s.with(roleUser, s.createRun))
	mux.HandleFunc("GET /v1/runs/{run_id}", s.with(roleUser, s.getRun))
	mux.HandleFunc("GET /v1/runs", s.with(roleUser, s.listRuns))
	mux.HandleFunc("POST /v1/runs/{run_id}/resume", s.with(roleUser, s.resumeRun))

	mux.HandleFunc("GET /v1/credentials/{user_id}", s.with(roleUser, s.listCredentials))
	mux.HandleFunc("PUT /v1/credentials/{user_id}/{key}", s.with(roleUser, s.putCredential))
	mux.HandleFunc("DELETE /v1/credentials/{user_id}/{key}", s.with(roleUser, s.deleteCredential))
	mux.HandleFunc("POST /v1/credentials/rotate", s.with(roleAdmin, s.rotateCredentials))

	mux.HandleFunc("GET /v1/tokens", s.with(roleAdmin, s.listTokens))
	mux.HandleFunc("POST /v1/tokens", s.with(roleAdmin, s.createToken))
	mux.HandleFunc("DELETE /v1/tokens/{id}", s.with(roleAdmin, s.revokeToken))
	mux.HandleFunc("GET /v1/audit", s.with(roleAdmin, s.listAudit))
	s.agentRoutes(mux)
	s.accessRoutes(mux)

	if s.Quota != nil {
		s.quotaRoutes(mux)
	}
	if s.Connections != nil {
		s.connectionRoutes(mux)
	}

	if s.MCP != nil {
		s.mcpRoutes(mux, s.MCP)
	}
	if s.OpenAPITools != nil {
		mux.Handle("/mcp/openapi", s.sameOrigin(s.with(roleUser, scanJSON(s.OpenAPITools))))
	}

	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		msg := fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)
		if allowed := methodsOf(mux, r); len(allowed) > 0 {
			msg += " (the path takes " + strings.Join(allowed, ", ") + ")"
		}
		writeError(w, http.StatusNotFound, "not_found", msg, nil)
	})
	return notStored(s.withDeadlines(mux))
}

// notStored marks every answer Cache-Control: no-store before its handler
// writes it: what the API answers (the requests waiting for approval,
// records, tokens, a call's output, an event stream) stays out of the
// browser's disk cache once the console signs out, and out of any cache
// between — whichever way a handler writes its answer (review 75: a
// call's result and the audit's NDJSON went without it).
func notStored(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Cache-Control"] = noStore // shared, never changed: no allocation a request
		next.ServeHTTP(w, r)
	})
}

var noStore = []string{"no-store"}

// methodsOf lists the methods mux routes r's path with: a POST where the
// route is a PUT lands on the catch-all, whose 404 alone reads as a wrong path.
func methodsOf(mux *http.ServeMux, r *http.Request) []string {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		if _, pattern := mux.Handler(&http.Request{Method: m, Host: r.Host, URL: r.URL}); pattern != "/" && pattern != "" {
			allowed = append(allowed, m)
		}
	}
	return allowed
}

// changed makes this server's own write visible to it at once, rather than
// after the next poll: the triggers moved the counters in the write's
// transaction. Handlers defer it, so it runs before the answer is sent.
func (s *Server) changed(ctx context.Context) {
	// Bounded: the poll holds the watcher's lock, which the background
	// poll and every other write's wait on.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.QueryTimeout)
	defer cancel()
	if _, err := s.Changes.Poll(ctx); err != nil {
		s.Logger.WarnContext(ctx, "change counters not read after a write; it takes effect at the next poll", "err", err)
	}
}

// Error is the body of every answer that is not a result.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, msg string, details any) {
	writeJSON(w, status, map[string]Error{"error": {Code: code, Message: msg, Details: details}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// decodeBody reads a JSON body into v; a malformed body answers 400 with
// where it went wrong.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := readJSON(w, r)
	if !ok {
		return false
	}
	if fd, ok := v.(fastDecoder); ok && fd.decodeFast(body) {
		return true
	}
	return decodeJSON(w, r, body, v)
}

// decodeStrict is decodeBody for the runtime payloads, whose fields are
// versioned (see docs/upgrading.md, "Payload versions"): a field the engine does not
// know answers 400 unknown_field naming it, rather than being ignored.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := readJSON(w, r)
	if !ok {
		return false
	}
	if fd, ok := v.(fastDecoder); ok && fd.decodeFast(body) {
		return true // it takes known fields only
	}
	if field, accepted := unknownField(body, reflect.TypeOf(v).Elem(), ""); field != "" {
		writeError(w, http.StatusBadRequest, "unknown_field",
			fmt.Sprintf("%s: unknown field (this engine accepts %s)", field, strings.Join(accepted, ", ")),
			map[string]any{"field": field, "accepted": accepted})
		return false
	}
	return decodeJSON(w, r, body, v)
}

// decodeJSON decodes body into v with encoding/json; an error answers 400
// naming the field.
func decodeJSON(w http.ResponseWriter, r *http.Request, body []byte, v any) bool {
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "malformed_request", describeJSONError(err, body, r.Header.Get("Content-Type")), nil)
		return false
	}
	return true
}

// describeJSONError names the field of a decoding error. A body that is not
// JSON at all says so, with the content type it came as when that is not
// JSON's: a form or multipart body (a Java client's default, curl's
// -F) is the likely mistake, and "invalid character" alone does not name it.
func describeJSONError(err error, body []byte, contentType string) string {
	if len(bytes.TrimSpace(body)) == 0 {
		return "body: empty; expected a JSON object"
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		// encoding/json names a struct field, not the map key or list
		// index within it (credentials, not credentials.QCC_SECRET).
		if at := pathAt(body, te.Offset); strings.HasPrefix(at, field) {
			field = at
		}
		if field == "" {
			field = "(body)"
		}
		expected := jsonKind(te.Type)
		if te.Type == userIDType {
			expected = "a user id (a positive integer, or a string of digits)"
		}
		return fmt.Sprintf("%s: expected %s, got %s", field, expected, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		msg := fmt.Sprintf("body is not valid JSON at byte %d: %v", se.Offset, err)
		if mt, _, _ := mime.ParseMediaType(contentType); mt != "" && mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			msg += fmt.Sprintf(" (sent as %s: the body is read as JSON whatever its Content-Type)", mt)
		}
		return msg
	}
	return "body: " + err.Error()
}

// pathAt is the path ("credentials.QCC_SECRET", "user.permissions[1]")
// of the value of body that encoding/json's type error at offset is
// about: the first value read up to offset, which is where the decoder
// stands after a scalar, or after the opening of an object or array.
// "" when body does not read that far.
func pathAt(body []byte, offset int64) string {
	type level struct {
		array   bool
		key     string // an object's: the key read last
		index   int    // an array's: the index of the value read last
		wantKey bool   // an object's: a key comes next
	}
	var stack []level
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if n := len(stack); n > 0 && !stack[n-1].array {
				stack[n-1].wantKey = true
			}
			continue
		}
		if n := len(stack); n > 0 {
			switch top := &stack[n-1]; {
			case top.wantKey:
				top.key, top.wantKey = tok.(string), false
				continue
			case top.array:
				top.index++
			}
		}
		if dec.InputOffset() >= offset {
			var b strings.Builder
			for _, l := range stack {
				if l.array {
					fmt.Fprintf(&b, "[%d]", l.index)
				} else {
					b.WriteString("." + l.key)
				}
			}
			return strings.TrimPrefix(b.String(), ".")
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, level{wantKey: true})
		case json.Delim('['):
			stack = append(stack, level{array: true, index: -1})
		default:
			if n := len(stack); n > 0 && !stack[n-1].array {
				stack[n-1].wantKey = true
			}
		}
	}
}

// jsonKind names what JSON value decodes into t, in JSON's words rather
// than Go's (map[string]interface {} means nothing to a Java caller).
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t != reflect.TypeFor[json.RawMessage]() {
			return "a string (base64)"
		}
		return "an array"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return t.Kind().String()
}

// UserID is RuoYi's numeric user id, accepted as a number or a string of
// digits.
type UserID int64

// UnmarshalJSON accepts 42 and "42".
func (u *UserID) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*u = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return &json.UnmarshalTypeError{Value: string(b), Type: userIDType}
	}
	*u = UserID(n)
	return nil
}

var userIDType = reflect.TypeFor[UserID]()

func pathUserID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	n, err := strconv.ParseInt(r.PathValue("user_id"), 10, 64)
	if err != nil || n <= 0 {
		writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("user_id: %q is not a positive integer", r.PathValue("user_id")), nil)
		return 0, false
	}
	return n, true
}
