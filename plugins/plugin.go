// Package plugins defines the blindexec plugin protocol (v1): the JSON
// document that describes one tool, how it is parsed (comments allowed, as
// administrators paste it), validated against the published JSON Schema
// (protocol.schema.json) and shown to an LLM.
package plugins

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/blindexec/blindexec/internal/invisible"
	"github.com/blindexec/blindexec/internal/jsontext"
)

// Status values follow RuoYi's convention for sys_ tables.
const (
	StatusEnabled  = "0"
	StatusDisabled = "1"
)

// Plugin is one tool: what the LLM sees (Name, Description, Parameters) and
// what only the engine sees (Execution, AuthConfig, FixedParams).
type Plugin struct {
	SchemaVersion       string          `json:"schema_version,omitempty"`
	Name                string          `json:"name"`
	Title               string          `json:"title,omitempty"`
	Description         string          `json:"description"`
	IconURL             string          `json:"icon_url,omitempty"`
	Parameters          json.RawMessage `json:"parameters"`
	Execution           Execution       `json:"execution"`
	AuthConfig          AuthConfig      `json:"auth_config"`
	RequiredCredentials []string        `json:"required_credentials,omitempty"`
	// FixedParams are argument values bound by the platform, not the LLM:
	// hidden from the LLM's schema and merged into the arguments at execution.
	FixedParams map[string]any `json:"fixed_params,omitempty"`
	// Strict shows the LLM the OpenAI strict-mode form of Parameters
	// (every property required, optional ones nullable, no extra
	// properties); the engine then drops the nulls that stand for omitted
	// arguments before validating against Parameters.
	Strict bool `json:"strict,omitempty"`
	// Tags group tools (an OpenAPI operation's tags); Keywords are an
	// administrator's words for the tool (x-keywords on import, or edited).
	// Both feed tool search; the LLM does not see them.
	Tags     []string `json:"tags,omitempty"`
	Keywords []string `json:"keywords,omitempty"`
	// ResponseWords are the property names of what the tool answers (an
	// OpenAPI operation's success response, an MCP tool's outputSchema),
	// outer levels first: people ask for what they want back ("how
	// danceable is this track": danceability). Search reads them as a
	// weak field; never shown to a model nor part of the document; the
	// import records them, and a sync refreshes them (issue 49).
	ResponseWords []string `json:"-"`
	Status        string   `json:"status,omitempty"`
	Remark        string   `json:"remark,omitempty"`
	// Consequential is the administrator's classification of the tool:
	// true, a call waits for a person's confirmation (BLINDEXEC_CONFIRM);
	// false, it does not; nil, see IsConsequential. Imports never set it,
	// and a sync keeps it.
	Consequential *bool `json:"consequential,omitempty"`
	// ConsequentialHint is what an import read from the source
	// (x-openai-isConsequential, MCP's readOnlyHint): a suggestion used
	// while Consequential is nil.
	ConsequentialHint *bool `json:"consequential_hint,omitempty"`
	// Perms are the RuoYi permission strings (system:user:list) of which a
	// user must hold one to use the tool; none, BLINDEXEC_TOOL_ACCESS
	// decides (package access). Imports never set them, and a sync keeps
	// them.
	Perms []string `json:"perms,omitempty"`
	// ID is the row's plugin_id for a plugin loaded from the catalog,
	// 0 for a definition a request carried inline: quotas, tags and
	// classification find a plugin by it, never by a name a route
	// rebuilt (issue 44).
	ID int64 `json:"-"`
	// InvisibleRemoved reports the invisible characters the engine took
	// out of the texts a model reads (name, title, description,
	// parameters' texts; see RemoveInvisible): where the plugin entered,
	// kept with its row, and when a row was loaded. Ignored on input: it
	// is the engine's report, not the administrator's to write.
	InvisibleRemoved []invisible.Removal `json:"invisible_removed,omitempty"`
	// Catalog is set on plugins loaded from the catalog (sys_ai_plugin),
	// as opposed to definitions a request carried inline: only catalog
	// names, which an administrator chose, become metric labels.
	Catalog bool `json:"-"`
	// SourceID is the import source that wrote a catalog plugin
	// (sys_ai_plugin.source_id), 0 for none: agents select by it.
	SourceID int64 `json:"-"`
	// Source is what tool search knows of that source (issue 49): set
	// when the catalog is loaded, shared by the source's plugins, never
	// stored with a plugin nor shown to a model; nil for none.
	Source *Source `json:"-"`
}

// Source is an import source as tool search reads it: a request that
// names the API ("…in Zoom", "用钉钉…") finds its tools, and a tag's
// description explains the API's own words.
type Source struct {
	// Name is the source's short name: an MCP server's name, an import's
	// prefix.
	Name string
	// Title is an OpenAPI document's info.title, an MCP server's title.
	Title string
	// Aliases are the other names an administrator gives the source.
	Aliases []string
	// TagDescriptions are the descriptions of the source's tags, by tag.
	TagDescriptions map[string]string
}

// Execution types.
const (
	TypeHTTP = "http"
	TypeMCP  = "mcp"
)

// Execution says how the engine performs the call.
type Execution struct {
	Type           string            `json:"type,omitempty"` // http (default) | mcp
	Method         string            `json:"method,omitempty"`
	BaseURL        string            `json:"base_url,omitempty"`
	ContentType    string            `json:"content_type,omitempty"`
	ParamPlacement Placement         `json:"param_placement,omitzero"`
	Headers        map[string]string `json:"headers,omitempty"`
	Query          map[string]string `json:"query,omitempty"`
	TimeoutMS      int               `json:"timeout_ms,omitempty"`
	Retry          *Retry            `json:"retry,omitempty"`
	Response       *Response         `json:"response,omitempty"`
	// PropagateTrace false keeps the W3C traceparent header (the
	// caller's trace, when the engine traces) off this plugin's
	// requests, for APIs that reject headers they do not know. nil:
	// true.
	PropagateTrace *bool `json:"propagate_trace,omitempty"`
	// MCP execution (type mcp): the registered server and the tool's
	// original name on it.
	MCPID    string `json:"mcp_id,omitempty"`
	ToolName string `json:"tool_name,omitempty"`
	// InputSchema is an MCP tool's inputSchema as its server wrote it,
	// $schema, $defs and $ref kept (issue 48 point 5): arguments are
	// validated against it, and MCP clients' tools/list carries it
	// (WrittenParameters), while the model reads Parameters, the subset
	// OpenAI accepts. Dialects: AcceptedDialects.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// OutputSchema is an MCP tool's outputSchema, which MCP clients'
	// tools/list carries: the tool's structured content, relayed whole,
	// meets it (issue 48 point 1).
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// PropagatesTrace reports whether the plugin's requests carry the
// traceparent header onward (execution.propagate_trace, true when absent).
func (e *Execution) PropagatesTrace() bool { return e.PropagateTrace == nil || *e.PropagateTrace }

// Retry bounds the retries of idempotent calls.
type Retry struct {
	MaxAttempts  int `json:"max_attempts,omitempty"`   // total attempts, including the first
	BackoffMS    int `json:"backoff_ms,omitempty"`     // first backoff; doubles each time
	MaxBackoffMS int `json:"max_backoff_ms,omitempty"` // cap on one wait, Retry-After included
}

// Response shapes what the LLM sees of a result.
type Response struct {
	Select   string `json:"select,omitempty"`    // gjson path
	MaxBytes int    `json:"max_bytes,omitempty"` // byte budget of the output
}

// Locations of an argument in the request.
const (
	InQuery  = "query"
	InBody   = "body"
	InPath   = "path"
	InHeader = "header"
	InCookie = "cookie"
)

// Placement is execution.param_placement: either one location for every
// argument ("query") or an object mapping argument names to a location or
// to an ArgPlacement.
type Placement struct {
	Default string                  // the single location, when given as a string
	Args    map[string]ArgPlacement // per argument
}

// ArgPlacement places one argument: its location, its name on the wire when
// that differs from the argument name, and OpenAPI serialization.
type ArgPlacement struct {
	In      string `json:"in"`
	Name    string `json:"name,omitempty"`
	Style   string `json:"style,omitempty"`
	Explode *bool  `json:"explode,omitempty"`
	// ContentType of a multipart part (a file's, or a field's), or of a
	// parameter given as content (sent as that media type's text: JSON
	// for a JSON type); Filename of a file part.
	ContentType string `json:"content_type,omitempty"`
	Filename    string `json:"filename,omitempty"`
}

// IsZero reports whether no placement was given.
func (p Placement) IsZero() bool { return p.Default == "" && len(p.Args) == 0 }

// UnmarshalJSON accepts a string or an object whose values are a location
// string or an ArgPlacement object.
func (p *Placement) UnmarshalJSON(b []byte) error {
	*p = Placement{}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		p.Default = s
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("param_placement: expected a location string or an object, got %s", jsonKind(b))
	}
	p.Args = make(map[string]ArgPlacement, len(m))
	for name, raw := range m {
		var a ArgPlacement
		if err := json.Unmarshal(raw, &a.In); err != nil {
			if err := json.Unmarshal(raw, &a); err != nil {
				return fmt.Errorf("param_placement.%s: expected a location string or an object with \"in\"", name)
			}
		}
		p.Args[name] = a
	}
	return nil
}

// MarshalJSON writes the string form when only a default is set. It
// writes json.Marshal's bytes for a map of the locations (an argument
// with no more than one) and ArgPlacements, without making the map: an
// import encodes every plugin's placement twice (its row and its content
// hash), and a plugin may have 2,000 arguments.
func (p Placement) MarshalJSON() ([]byte, error) {
	if len(p.Args) == 0 {
		return json.Marshal(p.Default)
	}
	names := make([]string, 0, len(p.Args))
	for name := range p.Args {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]byte, 0, 24*len(names))
	out = append(out, '{')
	for i, name := range names {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendHTMLString(out, name)
		out = append(out, ':')
		a := p.Args[name]
		if a.Name == "" && a.Style == "" && a.Explode == nil && a.ContentType == "" && a.Filename == "" {
			out = appendHTMLString(out, a.In)
			continue
		}
		out = a.appendJSON(out)
	}
	return append(out, '}'), nil
}

// appendJSON appends a as json.Marshal writes it (its fields in order,
// the empty ones omitted).
func (a ArgPlacement) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"in":`...)
	dst = appendHTMLString(dst, a.In)
	for _, f := range []struct{ key, value string }{{"name", a.Name}, {"style", a.Style}} {
		if f.value != "" {
			dst = append(dst, `,"`+f.key+`":`...)
			dst = appendHTMLString(dst, f.value)
		}
	}
	if a.Explode != nil {
		dst = append(dst, `,"explode":`...)
		dst = strconv.AppendBool(dst, *a.Explode)
	}
	for _, f := range []struct{ key, value string }{{"content_type", a.ContentType}, {"filename", a.Filename}} {
		if f.value != "" {
			dst = append(dst, `,"`+f.key+`":`...)
			dst = appendHTMLString(dst, f.value)
		}
	}
	return append(dst, '}')
}

// appendHTMLString appends s as json.Marshal writes it.
func appendHTMLString(dst []byte, s string) []byte {
	if jsontext.PlainHTML(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s) // a string always encodes
	return append(dst, b...)
}

// Auth types.
const (
	AuthNone   = "none"
	AuthAPIKey = "api_key"
	AuthBearer = "bearer"
	AuthBasic  = "basic"
	AuthOAuth2 = "oauth2"
)

// AuthConfig maps credentials into the request. Mapping entries apply for
// every type (api_key consists of them alone); the other types add their
// own fields, each naming a credential key.
type AuthConfig struct {
	Type    string        `json:"type,omitempty"`
	Mapping []AuthMapping `json:"mapping,omitempty"`
	// Token is the credential key of the bearer token (type bearer).
	Token string `json:"token,omitempty"`
	// Username and Password are credential keys (type basic).
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// OAuth2 configures type oauth2.
	OAuth2 *OAuth2 `json:"oauth2,omitempty"`
}

// AuthMapping copies the credential Source into the request as Target at
// Location (header, query or cookie), with an optional value Prefix.
type AuthMapping struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	Location string `json:"location,omitempty"` // default header
	Prefix   string `json:"prefix,omitempty"`
	// Secret false marks the value an identifier (a tenant id, an account
	// name): masked only inside encodings that carry a secret with it.
	// Absent or true: a secret, masked wherever it appears.
	Secret *bool `json:"secret,omitempty"`
}

// IsSecret reports whether the entry's value is a secret (the default).
func (m AuthMapping) IsSecret() bool { return m.Secret == nil || *m.Secret }

// OAuth2 grants.
const (
	GrantClientCredentials = "client_credentials"
	GrantAccessToken       = "access_token"
	// GrantAuthorizationCode sends the access token of the calling user's
	// connection to Provider (package connections): the user signed in at
	// the provider once, and the engine refreshes the token blind.
	GrantAuthorizationCode = "authorization_code"
)

// OAuth2 is the client-credentials grant (the engine fetches, caches and
// refreshes the token), a supplied access token, or a user's connection
// to a registered provider (authorization_code).
type OAuth2 struct {
	Grant        string   `json:"grant,omitempty"` // client_credentials (default when token_url is set) | access_token | authorization_code
	TokenURL     string   `json:"token_url,omitempty"`
	ClientID     string   `json:"client_id,omitempty"`     // credential key
	ClientSecret string   `json:"client_secret,omitempty"` // credential key
	Scopes       []string `json:"scopes,omitempty"`
	Audience     string   `json:"audience,omitempty"`
	AuthStyle    string   `json:"auth_style,omitempty"`   // header (default) | params: how client credentials reach the token endpoint
	AccessToken  string   `json:"access_token,omitempty"` // credential key (grant access_token)
	// Provider names the registered OAuth provider whose connection the
	// call uses (grant authorization_code); Scopes are then those the
	// tool needs of the connection.
	Provider string `json:"provider,omitempty"`
}

// ConnectionProvider is the provider whose per-user connection a call
// reading the auth config uses, "" when it uses none.
func (a AuthConfig) ConnectionProvider() string {
	if a.Type == AuthOAuth2 && a.OAuth2 != nil && a.OAuth2.EffectiveGrant() == GrantAuthorizationCode {
		return a.OAuth2.Provider
	}
	return ""
}

// EffectiveGrant is the grant in force.
func (o *OAuth2) EffectiveGrant() string {
	if o.Grant != "" {
		return o.Grant
	}
	if o.AccessToken != "" && o.TokenURL == "" {
		return GrantAccessToken
	}
	return GrantClientCredentials
}

// MayBeEmpty reports whether key may hold an empty value: a basic-auth
// password (Stripe's secret key is the user name, its password empty).
// Every other credential key is missing when empty. When the password a
// call sends is empty, its user name is the call's secret.
func (a AuthConfig) MayBeEmpty(key string) bool {
	return a.Type == AuthBasic && key != "" && key == a.Password && key != a.Username
}

// BearerKey is the credential key of a bearer token: Token, or the single
// mapping entry's source when Token is absent.
func (a AuthConfig) BearerKey() string {
	if a.Token != "" {
		return a.Token
	}
	if len(a.Mapping) == 1 {
		return a.Mapping[0].Source
	}
	return ""
}

// ExtraMapping is the mapping entries applied beside what the type sets
// itself: none for a bearer whose single entry names its token (that
// entry is the Authorization header, not a header of its own).
func (a AuthConfig) ExtraMapping() []AuthMapping {
	if a.Type == AuthBearer && a.Token == "" {
		return nil
	}
	return a.Mapping
}

// CredentialKeys lists every credential key the auth config reads, sorted
// and without duplicates.
func (a AuthConfig) CredentialKeys() []string {
	return a.CredentialKeysIn(make([]string, 0, len(a.Mapping)+2))
}

// CredentialKeysIn is CredentialKeys in buf's array while it has room
// (what buf holds is overwritten): a caller that keeps the keys no longer
// than itself gives an array on its stack, and every call's path asks
// twice.
func (a AuthConfig) CredentialKeysIn(buf []string) []string {
	// Gathered in a slice, not a set: a config reads a handful of keys,
	// and every call asks (a map and its sorted copy were two allocations
	// of each).
	keys := buf[:0]
	a.reads(func(k string, _ bool) { keys = append(keys, k) })
	slices.Sort(keys)
	return slices.Compact(keys)
}

// IdentifierKeys lists, sorted, the credential keys the auth config reads
// only as identifiers: a basic-auth username, an oauth2 client id, a
// mapping entry marked "secret": false. Every other key it reads is a
// secret; a key read both ways is a secret.
func (a AuthConfig) IdentifierKeys() []string {
	if a.Type != AuthBasic && a.Type != AuthOAuth2 && !slices.ContainsFunc(a.Mapping, func(m AuthMapping) bool { return !m.IsSecret() }) {
		return nil // every key a secret: the common case, on every call's path
	}
	secret := map[string]bool{}
	a.reads(func(k string, s bool) { secret[k] = secret[k] || s })
	ids := map[string]bool{}
	for k, s := range secret {
		if !s {
			ids[k] = true
		}
	}
	return sortedKeys(ids)
}

// reads calls f with each credential key the auth config reads and
// whether it reads it as a secret.
func (a AuthConfig) reads(f func(key string, secret bool)) {
	add := func(k string, secret bool) {
		if k != "" {
			f(k, secret)
		}
	}
	for _, m := range a.ExtraMapping() {
		add(m.Source, m.IsSecret())
	}
	switch a.Type {
	case AuthBearer:
		add(a.BearerKey(), true)
	case AuthBasic:
		add(a.Username, false)
		add(a.Password, true)
	case AuthOAuth2:
		if o := a.OAuth2; o != nil {
			switch o.EffectiveGrant() {
			case GrantAccessToken:
				add(o.AccessToken, true)
			case GrantAuthorizationCode:
				// The connection's tokens are no credential keys: the
				// engine takes them from the user's connection.
			default:
				add(o.ClientID, false)
				add(o.ClientSecret, true)
			}
		}
	}
}

func sortedKeys(set map[string]bool) []string {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Credentials returns the credential keys the plugin needs: the declared
// required_credentials, or those derived from auth_config.
func (p *Plugin) Credentials() []string {
	if p.RequiredCredentials != nil {
		return p.RequiredCredentials
	}
	return p.AuthConfig.CredentialKeys()
}

// ExecType is execution.type with its default.
func (p *Plugin) ExecType() string {
	if p.Execution.Type == "" {
		return TypeHTTP
	}
	return p.Execution.Type
}

// Enabled reports whether the plugin's status allows calls.
func (p *Plugin) Enabled() bool { return p.Status == "" || p.Status == StatusEnabled }

// PlacementOf returns where argument name goes. Arguments named in a
// base_url template always go to the path; then the per-argument map, then
// the single default; otherwise body for methods with a body, query for
// the others.
func (e *Execution) PlacementOf(name string) ArgPlacement {
	if a, ok := e.ParamPlacement.Args[name]; ok {
		if a.In == "" {
			a.In = e.defaultIn()
		}
		if templateHas(e.BaseURL, name) {
			a.In = InPath
		}
		return a
	}
	if templateHas(e.BaseURL, name) {
		return ArgPlacement{In: InPath}
	}
	return ArgPlacement{In: e.defaultIn()}
}

func (e *Execution) defaultIn() string {
	if e.ParamPlacement.Default != "" {
		return e.ParamPlacement.Default
	}
	switch strings.ToUpper(e.Method) {
	case "POST", "PUT", "PATCH":
		return InBody
	}
	return InQuery
}

// templateHas reports whether base_url holds the template {name}. The wire
// name of a path argument is what appears in the template, so callers
// mapping a differently named argument use ArgPlacement.Name.
func templateHas(baseURL, name string) bool {
	return strings.Contains(baseURL, "{"+name+"}")
}

// TemplateNames lists the {name} templates of a base_url in order.
func TemplateNames(baseURL string) []string {
	var names []string
	for s := baseURL; ; {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return names
		}
		names = append(names, s[i+1:i+j])
		s = s[i+j+1:]
	}
}

func jsonKind(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "nothing"
	}
	switch s[0] {
	case '[':
		return "an array"
	case '{':
		return "an object"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
