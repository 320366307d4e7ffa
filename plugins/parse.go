package plugins

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/blindexec/blindexec/internal/redact"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tailscale/hujson"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/internal/invisible"
)

// ProtocolSchema is the published JSON Schema of protocol v1.
//
//go:embed protocol.schema.json
var ProtocolSchema []byte

// FieldError is one invalid field of a document, named by its dotted path.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Under names f within the field that held the document (plugins[0]): its
// root error is that field's own.
func (f FieldError) Under(field string) FieldError {
	if f.Field == "" {
		f.Field = field
	} else {
		f.Field = field + "." + f.Field
	}
	return f
}

// Sentence reads an argument error as a person says it:
// "quantity must be greater than 0".
func (e FieldError) Sentence() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + " " + e.Message
}

// Error writes the field and its message as text a terminal or a page
// shows as written: a key is the document's own (a fixed param's, a
// param_placement's), and one holding escapes or bidi controls reached
// the administrator's terminal raw (plugin get's load_error, review 75).
func (e FieldError) Error() string {
	if e.Field == "" {
		return escapeHidden(e.Message)
	}
	return escapeHidden(e.Field) + ": " + escapeHidden(e.Message)
}

// escapeHidden writes each character of s that is not printable
// (strconv.IsPrint: controls, bidi controls, zero-width and other format
// characters) as its Go escape, \x1b, \u202e.
func escapeHidden(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strconv.IsPrint(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// ValidationError lists every invalid field of a plugin document.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		msgs[i] = f.Error()
	}
	return "invalid plugin: " + strings.Join(msgs, "; ")
}

// Parse decodes a plugin document (JSON with // and /* */ comments and
// trailing commas, as administrators paste it) and validates it.
func Parse(data []byte) (*Plugin, error) {
	std, err := Standardize(data)
	if err != nil {
		return nil, err
	}
	return parseStandard(std)
}

// Standardize turns JSON with comments into plain JSON.
func Standardize(data []byte) ([]byte, error) {
	std, err := hujson.Standardize(bytes.Clone(data))
	if err != nil {
		return nil, fmt.Errorf("parse plugin: %w", err)
	}
	return std, nil
}

func parseStandard(std []byte) (*Plugin, error) {
	// The schema's size, before decoding the document: the cheapest
	// refusal of the costliest definitions. CheckSchemaCost below covers
	// the rest.
	if params := gjson.GetBytes(std, "parameters"); len(params.Raw) > DefaultSchemaLimits.Bytes {
		return nil, &ValidationError{Fields: []FieldError{{Field: "parameters", Message: (&CostError{Limit: LimitBytes, Max: DefaultSchemaLimits.Bytes}).Error()}}}
	}
	// The texts a model reads, cleaned before anything reads them (a
	// name's pattern is checked on the name without them).
	std, removed := invisible.Object(std, modelTexts, []string{"parameters"})
	var doc any
	if err := json.Unmarshal(std, &doc); err != nil {
		return nil, fmt.Errorf("parse plugin: %w", err)
	}
	var p Plugin
	perr := json.Unmarshal(std, &p)
	p.InvisibleRemoved = removed
	p.removeInvisibleWritten()
	if err := decide(doc, &p, perr, nil); err != nil {
		return nil, err
	}
	return &p, nil
}

// decide is the one decision on a plugin, however it entered: doc is
// its document decoded as any, p the same decoded as a Plugin (perr when
// that failed). Its schema's cost, protocol.schema.json, then Validate's
// rules, with pr's proofs.
func decide(doc any, p *Plugin, perr error, pr *proof) error {
	// Before anything compiles or walks the schema. A document that does
	// not decode is left to validateDocument, whose messages are clearer
	// (its walk of parameters is shallow).
	if perr == nil {
		if err := CheckSchemaCost(p.Parameters); err != nil {
			return &ValidationError{Fields: []FieldError{{Field: "parameters", Message: err.Error()}}}
		}
	}
	if errs := validateDocument(doc); len(errs) > 0 {
		return &ValidationError{Fields: errs}
	}
	if perr != nil {
		return fmt.Errorf("parse plugin: %w", perr)
	}
	return p.validate(pr)
}

// ParseJSON validates a plugin given as plain JSON (e.g. inside a runtime
// payload). Runtime payloads carry the same documents again and again, so
// valid ones are remembered by their bytes: the *Plugin returned is shared
// and must not be modified.
func ParseJSON(raw json.RawMessage) (*Plugin, error) {
	parsed.RLock()
	p := parsed.m[string(raw)]
	parsed.RUnlock()
	if p != nil {
		return p, nil
	}
	p, err := parseStandard(raw)
	if err != nil {
		return nil, err
	}
	parsed.Lock()
	if parsed.m == nil || len(parsed.m) >= parsedCacheMax {
		parsed.m = make(map[string]*Plugin)
	}
	parsed.m[string(raw)] = p
	parsed.Unlock()
	return p, nil
}

var parsed struct {
	sync.RWMutex
	m map[string]*Plugin
}

const parsedCacheMax = 1024

var protocolSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ProtocolSchema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("protocol.schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("protocol.schema.json")
})

// validateDocument checks the decoded document against protocol.schema.json
// and the rules JSON Schema cannot express, with messages that name the
// field. The semantic checks run first: their messages are the clearer ones.
func validateDocument(doc any) []FieldError {
	sch, err := protocolSchema()
	if err != nil {
		panic(fmt.Sprintf("plugins: protocol.schema.json does not compile: %v", err))
	}
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return schemaErrors(ve)
		}
		return []FieldError{{Message: err.Error()}}
	}
	return nil
}

// schemaErrors flattens the validator's error tree to its leaves.
func schemaErrors(ve *jsonschema.ValidationError) []FieldError {
	var out []FieldError
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			fe := FieldError{Field: dotted(e.InstanceLocation), Message: leafMessage(e)}
			if k := fe.Error(); !seen[k] {
				seen[k] = true
				out = append(out, fe)
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

func leafMessage(e *jsonschema.ValidationError) string {
	// The full error string carries the location prefix; keep the message.
	s := e.Error()
	if i := strings.Index(s, ": "); i >= 0 && strings.HasPrefix(s, "at '") {
		s = s[i+2:]
	}
	return s
}

func dotted(loc []string) string {
	var b strings.Builder
	for _, seg := range loc {
		if isIndex(seg) {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Names the engine gives its meta-tools over large catalogs (tool search):
// no plugin may take them.
const (
	SearchToolsName = "search_tools"
	CallToolName    = "call_tool"
)

// Reserved reports whether name is one of the meta-tools' names.
func Reserved(name string) bool {
	return name == SearchToolsName || name == CallToolName
}

// Limits on a plugin's free text, in characters (Unicode code points), as
// protocol.schema.json states them: those of the catalog's columns, so
// that what Parse accepts is stored whole on every database (MySQL's TEXT
// holds 65,535 bytes: 16,000 characters of up to 4 bytes).
const (
	MaxTitleChars       = 255
	MaxDescriptionChars = 16_000
	// MaxURLBytes bounds, in bytes, an import's URL and an MCP server's
	// URL (the location and url columns).
	MaxURLBytes = 1024
)

// Cut cuts s to at most n characters, marking a cut with "…": outside
// text (an imported description) is kept within a limit rather than
// refused.
func Cut(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

var (
	namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	// ProviderNamePattern is the rule for OAuth provider names: they
	// appear in paths (/v1/connections/{provider}) and in cookies' names.
	ProviderNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	httpMethods         = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true, "OPTIONS": true}
	validLocations      = map[string]bool{InQuery: true, InBody: true, InPath: true, InHeader: true, InCookie: true}
	authLocations       = map[string]bool{"header": true, "query": true, "cookie": true}
	headerNameChars     = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// ValidName reports whether name follows the plugin name rule (the
// OpenAI function-name rule), which agents' names follow too.
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Validate checks the rules of the protocol that a JSON Schema cannot say:
// the HTTP method, the URL, placements that fit the method and the URL
// template, auth fields required by each type.
func (p *Plugin) Validate() error {
	return p.validate(nil)
}

// A Validator validates the plugins of one import: each parameter schema
// is proven to compile (see proof) at the price of the parts it does not
// share with those validated before, and compiled on its plugin's first
// call, not here. What Validate refuses, it refuses with the same
// message. Not safe for concurrent use.
type Validator struct{ proof *proof }

// NewValidator returns a Validator that has proven nothing yet.
func NewValidator() *Validator { return &Validator{newProof()} }

// Validate is p.Validate, with v's proofs.
func (v *Validator) Validate(p *Plugin) error { return p.validate(v.proof) }

// Check decides on a plugin decoded elsewhere (a catalog row written
// with plain SQL) as Parse decides on its document, with v's proofs:
// what Check accepts, the API accepts.
func (v *Validator) Check(p *Plugin) error {
	raw, err := json.Marshal(p)
	if err != nil {
		// Only parameters, raw bytes, can fail to encode; validate
		// names them.
		if verr := p.validate(v.proof); verr != nil {
			return verr
		}
		return &ValidationError{Fields: []FieldError{{Field: "parameters", Message: err.Error()}}}
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("check plugin: %w", err) // what Marshal wrote: a bug
	}
	return decide(doc, p, nil, v.proof)
}

// validate checks p; its parameter schema by pr's proof where that holds,
// else compiled (and cached for its calls).
func (p *Plugin) validate(pr *proof) error {
	var errs []FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if !ValidName(p.Name) {
		add("name", "%q must match ^[a-zA-Z0-9_-]{1,64}$ (letters, digits, _ and -, at most 64)", p.Name)
	} else if Reserved(p.Name) {
		add("name", "%q is reserved: the engine offers a meta-tool of that name to LLM clients when a catalog is too large to list", p.Name)
	}
	if p.SchemaVersion != "" && p.SchemaVersion != "v1" && p.SchemaVersion != "1" && p.SchemaVersion != "1.0" {
		add("schema_version", "%q is not supported (expected \"v1\")", p.SchemaVersion)
	}
	if pr == nil || !pr.proves(p.Parameters) {
		if _, err := p.parameterSchema(); err != nil {
			add("parameters", "%v", err)
		}
	}
	e := &p.Execution
	switch p.ExecType() {
	case TypeHTTP:
		p.validateHTTP(add)
	case TypeMCP:
		if e.MCPID == "" {
			add("execution.mcp_id", "required for execution.type \"mcp\"")
		}
		if e.ToolName == "" {
			add("execution.tool_name", "required for execution.type \"mcp\"")
		}
		if len(e.InputSchema) > 0 {
			if _, err := writtenSchema(e.InputSchema); err != nil {
				add("execution.input_schema", "%v", err)
			}
		}
	default:
		add("execution.type", "%q is not an execution type (expected \"http\" or \"mcp\")", e.Type)
	}
	p.validateAuth(add)
	errs = append(errs, CheckPerms("perms", p.Perms)...)
	if len(errs) == 0 {
		p.validateMeaning(add)
	}
	if len(errs) > 0 {
		return &ValidationError{Fields: errs}
	}
	return nil
}

func (p *Plugin) validateHTTP(add func(field, format string, args ...any)) {
	e := &p.Execution
	if e.Method == "" {
		add("execution.method", "required (GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS)")
	} else if !httpMethods[strings.ToUpper(e.Method)] {
		add("execution.method", "%q is not an HTTP method", e.Method)
	}
	if e.BaseURL == "" {
		add("execution.base_url", "required")
	} else {
		// Templates are filled in later; check the URL with them blanked.
		probe := e.BaseURL
		for _, n := range TemplateNames(e.BaseURL) {
			probe = strings.Replace(probe, "{"+n+"}", "x", 1)
		}
		u, err := url.Parse(probe)
		switch {
		case err != nil:
			add("execution.base_url", "%q is not a URL", redact.URL(e.BaseURL))
		case u.Scheme != "http" && u.Scheme != "https":
			add("execution.base_url", "%q must be an absolute http or https URL", redact.URL(e.BaseURL))
		case u.Host == "":
			add("execution.base_url", "%q has no host", redact.URL(e.BaseURL))
		case strings.Contains(hostPart(e.BaseURL), "{"):
			add("execution.base_url", "%q: templates are allowed in the path only, not in the scheme, host or port", redact.URL(e.BaseURL))
		case u.User != nil:
			add("execution.base_url", "must not carry credentials; use auth_config")
		}
	}
	if d := e.ParamPlacement.Default; d != "" && !validLocations[d] {
		add("execution.param_placement", "%q is not a location (expected query, body, path, header or cookie)", d)
	}
	for name, a := range e.ParamPlacement.Args {
		if !validLocations[a.In] {
			add("execution.param_placement."+name, "%q is not a location (expected query, body, path, header or cookie)", a.In)
		}
		if a.In == InPath && !templateHas(e.BaseURL, wireName(name, a)) {
			add("execution.param_placement."+name, "placed in the path but execution.base_url has no {%s} template", wireName(name, a))
		}
	}
	for k, v := range e.Headers {
		if !headerNameChars.MatchString(k) {
			add("execution.headers", "%q is not a valid header name", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			add("execution.headers."+k, "must not contain CR, LF or NUL")
		}
	}
}

func hostPart(raw string) string {
	s := raw
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	return s
}

func wireName(name string, a ArgPlacement) string {
	if a.Name != "" {
		return a.Name
	}
	return name
}

func (p *Plugin) validateAuth(add func(field, format string, args ...any)) {
	a := &p.AuthConfig
	for i, m := range a.Mapping {
		f := fmt.Sprintf("auth_config.mapping[%d]", i)
		if m.Location != "" && !authLocations[m.Location] {
			add(f+".location", "%q is not a credential location (expected header, query or cookie)", m.Location)
		}
		if (m.Location == "" || m.Location == "header") && !headerNameChars.MatchString(m.Target) {
			add(f+".target", "%q is not a valid header name", m.Target)
		}
	}
	switch a.Type {
	case "", AuthNone:
		if len(a.Mapping) > 0 && a.Type == AuthNone {
			add("auth_config.mapping", "must be empty for type \"none\"")
		}
	case AuthAPIKey:
		if len(a.Mapping) == 0 {
			add("auth_config.mapping", "required for type \"api_key\": at least one {source, target, location}")
		}
	case AuthBearer:
		if a.BearerKey() == "" {
			add("auth_config.token", "required for type \"bearer\": the credential key of the token")
		}
	case AuthBasic:
		if a.Username == "" {
			add("auth_config.username", "required for type \"basic\": the credential key of the user name")
		}
		if a.Password == "" {
			add("auth_config.password", "required for type \"basic\": the credential key of the password")
		}
	case AuthOAuth2:
		o := a.OAuth2
		if o == nil {
			add("auth_config.oauth2", "required for type \"oauth2\"")
			return
		}
		switch o.EffectiveGrant() {
		case GrantAccessToken:
			if o.AccessToken == "" {
				add("auth_config.oauth2.access_token", "required for grant \"access_token\": the credential key of the token")
			}
		case GrantClientCredentials:
			if o.TokenURL == "" {
				add("auth_config.oauth2.token_url", "required for grant \"client_credentials\"")
			} else if u, err := url.Parse(o.TokenURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				add("auth_config.oauth2.token_url", "%q must be an absolute http or https URL", redact.URL(o.TokenURL))
			} else if u.User != nil {
				// Go's client would send it as basic auth to the token
				// endpoint, beside the client's own (leftovers80).
				add("auth_config.oauth2.token_url", "must not carry credentials (user info); the client's are the credential keys client_id and client_secret")
			}
			if o.ClientID == "" {
				add("auth_config.oauth2.client_id", "required for grant \"client_credentials\": the credential key of the client id")
			}
			if o.ClientSecret == "" {
				add("auth_config.oauth2.client_secret", "required for grant \"client_credentials\": the credential key of the client secret")
			}
		case GrantAuthorizationCode:
			if o.Provider == "" {
				add("auth_config.oauth2.provider", "required for grant \"authorization_code\": the name of a registered OAuth provider")
			} else if !ProviderNamePattern.MatchString(o.Provider) {
				add("auth_config.oauth2.provider", "%q is not a provider name (letters, digits, '_', '.' and '-', at most 64)", o.Provider)
			}
			for _, f := range []struct{ name, v string }{{"token_url", o.TokenURL}, {"client_id", o.ClientID}, {"client_secret", o.ClientSecret}, {"access_token", o.AccessToken}, {"audience", o.Audience}, {"auth_style", o.AuthStyle}} {
				if f.v != "" {
					add("auth_config.oauth2."+f.name, "must be empty for grant \"authorization_code\": the provider's registration holds the endpoints and the client")
				}
			}
			for i, sc := range o.Scopes {
				if sc == "" || strings.ContainsAny(sc, " \t\r\n\"\\") {
					add(fmt.Sprintf("auth_config.oauth2.scopes[%d]", i), "%q is not a scope (no spaces, quotes or backslashes)", sc)
				}
			}
		default:
			add("auth_config.oauth2.grant", "%q is not a grant (expected client_credentials, access_token or authorization_code)", o.Grant)
		}
	default:
		add("auth_config.type", "%q is not an auth type (expected none, api_key, bearer, basic or oauth2)", a.Type)
	}
}
