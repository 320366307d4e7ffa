package openapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/schema"
)

// Options select and shape a conversion.
type Options struct {
	// Prefix is put before every plugin name (joined with "_") and, in
	// upper snake case, before every credential key; the credential
	// prefix defaults to the document's title.
	Prefix string
	// BaseURL overrides the document's servers. It is required when the
	// document has no usable server URL.
	BaseURL string
	// Selection: an operation is converted when it matches every kind of
	// selector given, and for each kind any one of its values. Tags and
	// OperationIDs match exactly, Methods case-insensitively, Paths as
	// path.Match globs ("/v1/customers*").
	Tags, Methods, Paths, OperationIDs []string
	// Strict marks every plugin strict: the LLM sees OpenAI strict-mode
	// schemas (plugins.Plugin.Strict).
	Strict bool
	// SourceURL is where the document came from: relative server and
	// token URLs are resolved against it (without its userinfo).
	SourceURL string

	// Sync only (see Sync). Source names the import source explicitly
	// (--source): its identity, instead of the location. Force re-imports
	// a document that is unchanged. Rename gives plugins of operations
	// already imported the names this conversion derives (new imports
	// name machine-made operationIds by method and path); without it they
	// keep theirs.
	Source string `json:"-"`
	Force  bool   `json:"-"`
	Rename bool   `json:"-"`
	// Progress, if set, is told how far the conversion and the writes
	// have come (see Reporter for how often).
	Progress func(Progress) `json:"-"`
	// MaxBytes bounds what the plugins of one conversion may hold in all
	// (DefaultMaxBytes when 0; see TooLargeError).
	MaxBytes int `json:"-"`
	// PluginLimits bound each plugin's parameter schema
	// (plugins.DefaultSchemaLimits when zero: the catalog then holds no
	// plugin that POST /v1/plugins would refuse). Only a measurement
	// lifts them: toolsearch/searcheval keeps the crowd its figures were
	// taken on.
	PluginLimits plugins.SchemaLimits `json:"-"`
}

// Operation is one converted operation.
type Operation struct {
	// Key identifies the operation across versions of the document:
	// "METHOD /path" (the path as written, templates included).
	Key      string          `json:"key"`
	Plugin   *plugins.Plugin `json:"plugin"`
	Warnings []string        `json:"warnings,omitempty"`
	// Provider is the OAuth provider the plugin's authorization-code
	// auth config names (nil for any other auth).
	Provider *Provider `json:"provider,omitempty"`
}

// Provider is an OAuth provider as an authorizationCode flow of the
// document describes it. The importer matches it, by its URLs, to a
// provider the administrator registered, or registers it disabled under
// Name (no client yet), and names the provider it chose in the plugins.
type Provider struct {
	// Name is proposed: the credential prefix and the scheme's name, as
	// a provider name (plugins.ProviderNamePattern).
	Name             string `json:"name"`
	AuthorizationURL string `json:"authorization_url"`
	TokenURL         string `json:"token_url"`
	RefreshURL       string `json:"refresh_url,omitempty"`
	// Scopes are those the flow declares, sorted.
	Scopes []string `json:"scopes,omitempty"`
}

// Failure is an operation that could not be converted.
type Failure struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// ErrNoServer is returned by Convert when operations need a server URL that
// the document does not give and Options.BaseURL is empty.
var ErrNoServer = errors.New("no usable server URL in the document: give --base-url")

// methods are the operation keys of a path item, in the order operations
// are converted.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Convert turns the selected operations of doc into plugins, in path then
// method order. An operation that cannot be converted, or whose parameter
// schema is over an inline plugin's limits (a *PluginLimitError), is a
// Failure and the others still convert; the error is reserved for
// document-level problems (ErrNoServer, an invalid Options.BaseURL, a
// *TooLargeError).
func Convert(doc *Document, opts Options) ([]Operation, []Failure, error) {
	c, err := newConverter(doc, opts)
	if err != nil {
		return nil, nil, err
	}
	return c.run()
}

// built is a converted operation whose parameter schema is not encoded
// yet: every operation is measured before any is encoded.
type built struct {
	op   Operation
	root map[string]any
	id   string // the operationId, for the names
}

func (c *converter) run() ([]Operation, []Failure, error) {
	all, tooLarge := c.operations()
	if tooLarge != nil {
		return nil, nil, tooLarge
	}
	var (
		done     []built
		failures []Failure
		noServer int
	)
	rep := Reporter{F: c.opts.Progress}
	rep.Start(PhaseConverting, len(all))
	for i, o := range all {
		rep.Step(i)
		b, n, err := c.convert(o)
		var tooLarge *TooLargeError
		if errors.As(err, &tooLarge) {
			tooLarge.Operations = len(done) + len(failures) + 1
			return nil, nil, err
		}
		if err != nil {
			if errors.Is(err, ErrNoServer) {
				noServer++
			}
			f := Failure{Key: o.key, Reason: err.Error()}
			failures = append(failures, f)
			n = len(f.Key) + len(f.Reason) + pluginOverhead // reported, so held too
		} else {
			done = append(done, b)
		}
		if err := c.count(o, n); err != nil {
			err.Operations = len(done) + len(failures)
			return nil, nil, err
		}
	}
	rep.Step(len(all))
	if len(done) == 0 && noServer > 0 && noServer == len(failures) {
		return nil, nil, ErrNoServer
	}
	ops := make([]Operation, 0, len(done))
	ids := make([]string, 0, len(done))
	for i, b := range done {
		done[i].root = nil // garbage once encoded
		var err error
		if b.op.Plugin.Parameters, err = encodeTree(b.root); err != nil {
			failures = append(failures, Failure{Key: b.op.Key, Reason: fmt.Sprintf("encode parameters: %v", err)})
			continue
		}
		b.op.Plugin.RemoveInvisible()
		ops = append(ops, b.op)
		ids = append(ids, b.id)
	}
	assignNames(ops, ids, c.opts.Prefix)
	return ops, failures, nil
}

// rawOperation is an operation as the document has it.
type rawOperation struct {
	key, method, path string
	item, op          map[string]any
}

type converter struct {
	doc        *Document
	opts       Options
	lookup     schema.Lookup
	memo       *schema.Memo // the request side's expansions, shared by the operations
	meter      *meter
	cuts       map[cutKey]cutEntry  // reduced subschemas, shared by the operations
	limits     plugins.SchemaLimits // of each plugin's parameter schema
	total      int                  // bytes of the plugins converted so far
	words      map[any][]string     // response words, by the schema they are of
	argNames   map[string]string    // argName's, for the names operations share
	maxTotal   int                  // Options.MaxBytes
	baseURL    string               // Options.BaseURL, checked
	source     *url.URL
	credPrefix string
	schemes    map[string]any
	warned     map[string]bool // warnPlaintext's, once per document
}

func newConverter(doc *Document, opts Options) (*converter, error) {
	c := &converter{doc: doc, opts: opts, lookup: schema.OpenAPILookup(doc.Raw),
		memo: schema.NewMemo(), meter: newMeter(), limits: cmp.Or(opts.PluginLimits, plugins.DefaultSchemaLimits),
		maxTotal: cmp.Or(opts.MaxBytes, DefaultMaxBytes), warned: map[string]bool{}}
	if opts.SourceURL != "" {
		if u, err := url.Parse(opts.SourceURL); err == nil && u.IsAbs() {
			u.User = nil // a relative server's URL does not take the document's credentials
			c.source = u
		}
	}
	if opts.BaseURL != "" {
		u, err := url.Parse(opts.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("base URL %q: want an absolute http or https URL", redact.URL(opts.BaseURL))
		}
		c.baseURL = strings.TrimRight(opts.BaseURL, "/")
	}
	c.credPrefix = upperSnake(opts.Prefix)
	if c.credPrefix == "" {
		c.credPrefix = upperSnake(doc.Title)
	}
	if c.credPrefix == "" {
		c.credPrefix = "API"
	}
	if comps, ok := doc.Raw["components"].(map[string]any); ok {
		c.schemes, _ = comps["securitySchemes"].(map[string]any)
	}
	return c, nil
}

// operations lists the document's selected operations. Past the number the import's limit holds at
// pluginOverhead each it stops, refusing the import: path items that
// $ref one item make operations without their bytes (200,000 paths of
// one $ref, 7 MB of document, listed 1.6 million operations in 1.3 s
// before the limit was met converting them).
func (c *converter) operations() ([]rawOperation, *TooLargeError) {
	paths, _ := c.doc.Raw["paths"].(map[string]any)
	var out []rawOperation
	for _, p := range sortedKeys(paths) {
		if !strings.HasPrefix(p, "/") {
			continue // x- extensions
		}
		v, err := c.lookup.Deref(paths[p])
		item, ok := v.(map[string]any)
		if err != nil || !ok {
			continue
		}
		for _, m := range methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			o := rawOperation{"", m, p, item, op}
			if !c.selected(o) {
				continue
			}
			o.key = strings.ToUpper(m) + " " + p
			if (len(out)+1)*pluginOverhead > c.maxTotal {
				tl := c.tooLarge(o.key)
				tl.Listed = len(out) + 1
				return nil, tl
			}
			out = append(out, o)
		}
	}
	return out, nil
}

func (c *converter) selected(o rawOperation) bool {
	sel := c.opts
	if len(sel.Methods) > 0 && !slices.ContainsFunc(sel.Methods, func(m string) bool { return strings.EqualFold(m, o.method) }) {
		return false
	}
	if len(sel.Paths) > 0 && !slices.ContainsFunc(sel.Paths, func(g string) bool { ok, _ := path.Match(g, o.path); return ok || g == o.path }) {
		return false
	}
	if len(sel.OperationIDs) > 0 {
		id, _ := o.op["operationId"].(string)
		if !slices.Contains(sel.OperationIDs, id) {
			return false
		}
	}
	if len(sel.Tags) > 0 {
		tags, _ := o.op["tags"].([]any)
		if !slices.ContainsFunc(tags, func(t any) bool { s, _ := t.(string); return slices.Contains(sel.Tags, s) }) {
			return false
		}
	}
	return true
}

// arg is one argument of the plugin being built.
type arg struct {
	name     string
	schema   map[string]any
	place    plugins.ArgPlacement
	required bool
}

// opBuilder collects the arguments of one operation.
type opBuilder struct {
	c     *converter
	key   string // the operation's
	args  []arg
	taken map[string]bool
	// next is the suffix to try next for a name already taken: a
	// thousand arguments of one name try each suffix once, not a
	// thousand times.
	next map[string]int
	// templates are the path's template names: only the path argument of
	// that wire name may be called so, since the engine sends an argument
	// named like a template to the path.
	templates []string
	warnings  []string
	body      *bodyFields // a JSON or form body spread into arguments
}

func (b *opBuilder) warn(format string, a ...any) {
	b.warnings = append(b.warnings, fmt.Sprintf(format, a...))
}

// add adds an argument under the first free variant of name.
func (b *opBuilder) add(a arg) {
	a.name = b.c.argName(a.name)
	busy := func(name string) bool {
		return b.taken[name] || slices.Contains(b.templates, name) && (a.place.In != plugins.InPath || a.place.Name != name)
	}
	if busy(a.name) {
		base := a.name
		if b.next == nil {
			b.next = map[string]int{}
		}
		i := max(b.next[base], 2)
		for busy(fmt.Sprintf("%s_%d", base, i)) {
			i++
		}
		a.name = fmt.Sprintf("%s_%d", base, i)
		b.next[base] = i + 1
	}
	b.taken[a.name] = true
	if a.place.Name == a.name {
		a.place.Name = ""
	}
	b.args = append(b.args, a)
}

// convert builds one operation's plugin, all but its Name (set later)
// and its Parameters (the tree root, encoded once the import's total is
// known to be within its limit), and counts the bytes the plugin will
// hold.
func (c *converter) convert(o rawOperation) (built, int, error) {
	method := strings.ToUpper(o.method)
	if method == "TRACE" {
		return built{}, 0, errors.New("method TRACE is not supported by the engine")
	}
	base, err := c.server(o)
	if err != nil {
		return built{}, 0, err
	}
	b := &opBuilder{c: c, key: o.key, taken: map[string]bool{}, templates: plugins.TemplateNames(o.path)}
	params, err := c.parameters(o)
	if err != nil {
		return built{}, 0, err
	}
	b.addParameters(params, o.path)
	ct, err := b.addBody(o.op["requestBody"])
	if err != nil {
		return built{}, 0, err
	}

	p := &plugins.Plugin{
		SchemaVersion: "v1",
		Title:         title(plugins.PlainText(str(o.op["summary"]))),
		Description:   plugins.Cut(plugins.PlainText(description(o.op)), plugins.MaxDescriptionChars-100), // room for the deprecation note
		Execution: plugins.Execution{
			Method:      method,
			BaseURL:     base + o.path,
			ContentType: ct,
		},
		Strict:   c.opts.Strict,
		Status:   plugins.StatusEnabled,
		Tags:     stringItems(o.op["tags"]),
		Keywords: keywords(o.op["x-keywords"]),
		// what the operation answers, for search only
		ResponseWords: c.responseWords(o.op),
		// GPT Actions' flag, a suggestion: an administrator's
		// consequential setting overrides it and survives syncs.
		ConsequentialHint: boolPtr(o.op["x-openai-isConsequential"]),
	}
	if p.Description == "" {
		p.Description = o.key
	}
	titled(p, o.key)
	if o.op["deprecated"] == true {
		p.Description = "Deprecated: the API may remove this operation; prefer another if one fits.\n\n" + p.Description
	}
	root, sz, err := b.fit()
	if err != nil {
		return built{}, 0, err
	}
	place := make(map[string]plugins.ArgPlacement, len(b.args))
	for _, a := range b.args {
		if v, ok := fixedValue(a.schema); ok {
			if p.FixedParams == nil {
				p.FixedParams = map[string]any{}
			}
			p.FixedParams[a.name] = v
		}
		place[a.name] = a.place
	}
	if len(place) > 0 {
		p.Execution.ParamPlacement.Args = place
	}
	provider := c.auth(o, p, b)
	n := max(sz.bytes, len(b.args)*argOverhead) + len(p.Title) + len(p.Description) + pluginOverhead
	for _, list := range [][]string{p.Tags, p.Keywords, p.ResponseWords} {
		for _, w := range list {
			n += len(w) + 3
		}
	}
	return built{Operation{Key: o.key, Plugin: p, Warnings: b.warnings, Provider: provider}, root, str(o.op["operationId"])}, n, nil
}

// parameters merges the path item's parameters with the operation's (the
// operation's win, by name and location), in that order.
func (c *converter) parameters(o rawOperation) ([]map[string]any, error) {
	item, _ := o.item["parameters"].([]any)
	own, _ := o.op["parameters"].([]any)
	if n := len(item) + len(own); n > c.limits.Properties {
		return nil, &PluginLimitError{Field: fmt.Sprintf("parameters (%d)", n), Cost: &plugins.CostError{Limit: plugins.LimitProperties, Max: c.limits.Properties}}
	}
	var out []map[string]any
	type nameIn struct{ name, in string }
	at := map[nameIn]int{} // not a search of out per parameter: thousands are quadratic
	for _, items := range [][]any{item, own} {
		for _, v := range items {
			v, err := c.lookup.Deref(v)
			if err != nil {
				return nil, fmt.Errorf("parameter: %w", err)
			}
			p, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("parameter: %s is not a parameter object", kind(v))
			}
			name, okName := p["name"].(string)
			in, okIn := p["in"].(string)
			if !okName || !okIn {
				out = append(out, p) // ignored with a warning later
				continue
			}
			k := nameIn{name, in}
			if i, ok := at[k]; ok {
				out[i] = p
				continue
			}
			at[k] = len(out)
			out = append(out, p)
		}
	}
	return out, nil
}

// ignoredHeaders are header parameters OpenAPI says to ignore: the engine
// sets them itself.
var ignoredHeaders = map[string]bool{"accept": true, "content-type": true, "authorization": true}

func (b *opBuilder) addParameters(params []map[string]any, p string) {
	var kept []map[string]any
	locations := map[string]int{}
	for _, prm := range params {
		name, _ := prm["name"].(string)
		in, _ := prm["in"].(string)
		switch {
		case name == "":
			b.warn("a parameter without a name ignored")
			continue
		case in == plugins.InHeader && ignoredHeaders[strings.ToLower(name)]:
			continue
		case in == plugins.InPath && !slices.Contains(b.templates, name):
			b.warn("path parameter %s is not in the path %s; ignored", name, p)
			continue
		case in != plugins.InPath && in != plugins.InQuery && in != plugins.InHeader && in != plugins.InCookie:
			b.warn("parameter %s in %q ignored (not path, query, header or cookie)", name, in)
			continue
		}
		locations[name]++
		kept = append(kept, prm)
	}
	// Path arguments first: their names are the templates'.
	slices.SortStableFunc(kept, func(x, y map[string]any) int {
		return boolInt(y["in"] == plugins.InPath) - boolInt(x["in"] == plugins.InPath)
	})
	declared := map[string]bool{}
	for _, prm := range kept {
		name, in := prm["name"].(string), prm["in"].(string)
		if in == plugins.InPath {
			declared[name] = true
		}
		a := arg{name: name, required: in == plugins.InPath || prm["required"] == true,
			place: plugins.ArgPlacement{In: in, Name: name}}
		if locations[name] > 1 {
			a.name = in + "_" + name
		}
		a.place.Style, _ = prm["style"].(string)
		if ex, ok := prm["explode"].(bool); ok {
			a.place.Explode = &ex
		}
		if content, ok := prm["content"].(map[string]any); ok && prm["schema"] == nil {
			// Serialized as that media type (JSON text), not by style.
			a.place.ContentType = PickMediaType(content)
		}
		a.schema = b.paramSchema(prm)
		b.add(a)
	}
	for _, t := range b.templates {
		if !declared[t] {
			b.warn("path template {%s} has no parameter; added as a required string", t)
			b.add(arg{name: t, required: true, schema: map[string]any{"type": "string"},
				place: plugins.ArgPlacement{In: plugins.InPath, Name: t}})
		}
	}
}

// paramSchema resolves a parameter's schema (or that of its content) and
// gives it the parameter's description.
func (b *opBuilder) paramSchema(prm map[string]any) map[string]any {
	raw, ok := prm["schema"]
	if !ok {
		if content, ok := prm["content"].(map[string]any); ok {
			if mt := PickMediaType(content); mt != "" {
				m, _ := content[mt].(map[string]any)
				raw = m["schema"]
			}
		}
	}
	s := maps.Clone(b.resolve(raw, "parameter "+str(prm["name"])))
	d := strings.TrimSpace(str(prm["description"]))
	if prm["deprecated"] == true {
		d = strings.TrimSpace("Deprecated. " + d)
	}
	if d != "" {
		s["description"] = d
	}
	if ex := parameterExamples(prm); len(ex) > 0 {
		s["examples"] = ex
	}
	return s
}

// parameterExamples are the example values a parameter object gives
// (OpenAPI's example, or the values of its examples map), which the
// schema's examples would otherwise lack.
func parameterExamples(prm map[string]any) []any {
	if v, ok := prm["example"]; ok {
		return []any{v}
	}
	m, _ := prm["examples"].(map[string]any)
	var out []any
	for _, k := range sortedKeys(m) {
		if ex, ok := m[k].(map[string]any); ok {
			if v, ok := ex["value"]; ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// resolve expands a schema for the request side, degrading (with a
// warning) what cannot be resolved.
func (b *opBuilder) resolve(raw any, what string) map[string]any {
	if raw == nil {
		return map[string]any{}
	}
	res, err := schema.Resolve(raw, b.c.lookup, schema.Options{Direction: schema.Request, Memo: b.c.memo})
	if err != nil {
		b.warn("%s: %v; any value accepted", what, err)
		return map[string]any{"description": "Any value (the source's schema could not be read)."}
	}
	for _, w := range res.Warnings {
		b.warn("%s: %s", what, w)
	}
	return res.Schema
}

// addBody adds the request body's arguments and returns the content type.
func (b *opBuilder) addBody(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	v, err := b.c.lookup.Deref(v)
	if err != nil {
		return "", fmt.Errorf("request body: %w", err)
	}
	rb, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Errorf("request body: %s is not a request body object", kind(v))
	}
	content, _ := rb["content"].(map[string]any)
	ct := PickMediaType(content)
	if ct == "" {
		b.warn("request body without content ignored")
		return "", nil
	}
	media, _ := content[ct].(map[string]any)
	if ct == "*/*" {
		ct = "application/json" // anything goes: send what the engine encodes best
	}
	required := rb["required"] == true
	s := b.resolve(media["schema"], "body")
	props, _ := s["properties"].(map[string]any)
	structured := mediaKind(ct) != "" // JSON, form or multipart: fields by name
	if structured && len(props) == 0 && s["additionalProperties"] == false {
		return "", nil // an object that admits nothing (Stripe's GETs): no body
	}
	spread := structured && len(props) > 0 && hasType(s, "object")
	whole, err := b.checkBody(s, props, spread, mediaKind(ct) == "multipart")
	if err != nil {
		return "", err
	}
	if spread && mediaKind(ct) != "multipart" {
		b.body = &bodyFields{schema: s, required: required, fields: len(props)}
	}
	if whole {
		b.wholeBody(&plugins.CostError{Limit: plugins.LimitProperties, Max: b.c.limits.Properties})
		return ct, nil
	}
	if !spread {
		if d := strings.TrimSpace(str(rb["description"])); d != "" && s["description"] == nil {
			s = maps.Clone(s)
			s["description"] = d
		}
		b.add(arg{name: "body", schema: s, required: required,
			place: plugins.ArgPlacement{In: plugins.InBody, Name: "$"}})
		return ct, nil
	}
	// Room for the fields at once: a body of 2,000 fields grew these
	// a dozen times in each operation.
	b.args = slices.Grow(b.args, len(props))
	taken := make(map[string]bool, len(b.taken)+len(props))
	maps.Copy(taken, b.taken)
	b.taken = taken
	encoding, _ := media["encoding"].(map[string]any)
	req := map[any]bool{}
	if list, ok := s["required"].([]any); ok && required {
		for _, v := range list {
			if _, ok := v.(string); ok {
				req[v] = true
			}
		}
	}
	for _, name := range sortedKeys(props) {
		ps, _ := props[name].(map[string]any)
		a := arg{name: name, schema: ps, required: req[name],
			place: plugins.ArgPlacement{In: plugins.InBody, Name: name}}
		if n := b.c.argName(name); b.taken[n] || slices.Contains(b.templates, n) {
			a.name = "body_" + name
		}
		if mediaKind(ct) == "multipart" {
			a.schema = fileArgument(ps)
			// OpenAPI 3.1 says a file's type in the schema.
			items, _ := ps["items"].(map[string]any)
			a.place.ContentType = cmp.Or(str(ps["contentMediaType"]), str(items["contentMediaType"]))
		}
		if enc, ok := encoding[name].(map[string]any); ok && mediaKind(ct) != "json" {
			// OpenAPI 3.1 applies style and explode to multipart/form-data
			// too, and then ignores contentType (Encoding Object): Stripe's
			// POST /v1/files file_link_data is deepObject.
			a.place.Style, _ = enc["style"].(string)
			if ex, ok := enc["explode"].(bool); ok {
				a.place.Explode = &ex
			}
			if t, ok := enc["contentType"].(string); ok && mediaKind(ct) == "multipart" && a.place.Style == "" && a.place.Explode == nil {
				a.place.ContentType = t
			}
		} else if mediaKind(ct) == "form" && isScalarArray(ps) {
			// OpenAPI's default for a form field is style form, explode
			// true: tags=a&tags=b. Nested objects keep the executor's
			// bracket form (Stripe's), which is what such APIs read.
			a.place.Style = "form"
		}
		b.add(a)
	}
	return ct, nil
}

// fileArgument rewrites the schema of a multipart field that is a file
// (format: binary, or OpenAPI 3.1's contentMediaType; base64 content:
// format byte or contentEncoding base64), a list of files, or either made
// nullable (pydantic 2's Optional[UploadFile]), so that the LLM learns how
// to give one: its content as a string (text, or base64 where the
// document says so), or an object with the content and a filename. The
// engine sends each as a file part. Other fields are returned as they are.
func fileArgument(s map[string]any) map[string]any {
	f, _ := asFile(s)
	return f
}

// asFile is fileArgument's work; ok reports a file (or a list of them).
func asFile(s map[string]any) (_ map[string]any, ok bool) {
	if alts, isAlts := s["anyOf"].([]any); isAlts {
		var file map[string]any
		for _, a := range alts {
			am, _ := a.(map[string]any)
			switch {
			case hasType(am, "null"):
			case file == nil:
				file = am
			default:
				return s, false // a real choice, not a nullable file
			}
		}
		f, ok := asFile(file)
		if !ok {
			return s, false
		}
		// Null is what omitting the argument sends anyway.
		f = maps.Clone(f)
		for _, k := range []string{"title", "description"} {
			if v, has := s[k]; has {
				f[k] = v
			}
		}
		return f, true
	}
	if items, isList := s["items"].(map[string]any); isList && hasType(s, "array") {
		f, ok := fileSchema(items)
		if !ok {
			return s, false
		}
		out := maps.Clone(s)
		out["items"] = f
		return out, true
	}
	if f, ok := fileSchema(s); ok {
		return f, true
	}
	return s, false
}

// fileSchema is the argument schema of one file, if s describes one. The
// format keeps telling the engine that it is a file and whether its
// content is base64.
func fileSchema(s map[string]any) (map[string]any, bool) {
	format := str(s["format"])
	base64 := format == "byte" || s["contentEncoding"] == "base64"
	if format != "binary" && !base64 && s["contentMediaType"] == nil {
		return nil, false
	}
	content := "The file's content as text."
	format = "binary"
	if base64 {
		content = "The file's content, base64-encoded."
		format = "byte"
	}
	desc := "A file: " + strings.ToLower(content[:1]) + content[1:len(content)-1] +
		", or an object with its content and a filename (which also gives the file's type)."
	if d := strings.TrimSpace(str(s["description"])); d != "" {
		desc = d + "\n\n" + desc
	}
	out := map[string]any{
		"description": desc,
		"format":      format,
		"anyOf": []any{
			map[string]any{"type": "string", "description": content},
			map[string]any{"type": "object", "required": []any{"content"}, "properties": map[string]any{
				"content":      map[string]any{"type": "string", "description": content},
				"filename":     map[string]any{"type": "string", "description": "The file's name, e.g. report.csv."},
				"content_type": map[string]any{"type": "string", "description": "The file's media type, when its name does not tell it."},
			}},
		},
	}
	if t, ok := s["title"]; ok {
		out["title"] = t
	}
	return out, true
}

// PickMediaType chooses among a content map as seed 000 §4.1.3 says:
// application/json when offered, else the first usable type. JSON object
// order is not kept by the decoder, so "first" is the first in this
// ranking: other JSON types, form, multipart, text, then the rest by name.
// The importer and the query tools (plugins/openapiquery) share it.
func PickMediaType(content map[string]any) string {
	if len(content) == 0 {
		return ""
	}
	if _, ok := content["application/json"]; ok {
		return "application/json"
	}
	best, bestRank := "", 99
	for _, ct := range sortedKeys(content) {
		r := 5
		switch mediaKind(ct) {
		case "json":
			r = 1
		case "form":
			r = 2
		case "multipart":
			r = 3
		default:
			if strings.HasPrefix(ct, "text/") {
				r = 4
			}
		}
		if r < bestRank {
			best, bestRank = ct, r
		}
	}
	return best
}

// mediaKind classifies a media type by how the engine encodes named fields.
func mediaKind(ct string) string {
	mt, _, _ := strings.Cut(strings.ToLower(ct), ";")
	mt = strings.TrimSpace(mt)
	switch {
	case mt == "application/x-www-form-urlencoded":
		return "form"
	case mt == "multipart/form-data":
		return "multipart"
	case strings.HasSuffix(mt, "/json") || strings.HasSuffix(mt, "+json") || mt == "*/*":
		return "json"
	}
	return ""
}

func hasType(s map[string]any, t string) bool {
	switch v := s["type"].(type) {
	case string:
		return v == t
	case []any:
		return slices.Contains(v, any(t))
	}
	return false
}

// fixedValue is the one value a single-value enum or a const allows.
func fixedValue(s map[string]any) (any, bool) {
	if v, ok := s["const"]; ok {
		return v, true
	}
	if e, ok := s["enum"].([]any); ok && len(e) == 1 {
		return e[0], true
	}
	return nil, false
}

// server is the base URL of an operation: Options.BaseURL, else the first
// usable server of the operation, its path item or the document.
func (c *converter) server(o rawOperation) (string, error) {
	if c.baseURL != "" {
		return c.baseURL, nil
	}
	for _, servers := range []any{o.op["servers"], o.item["servers"], c.doc.Raw["servers"]} {
		list, _ := servers.([]any)
		for _, s := range list {
			if u := c.serverURL(s); u != "" {
				return u, nil
			}
		}
	}
	return "", ErrNoServer
}

// serverURL is a server object's URL with its variables' defaults (or
// first enum values) filled in and resolved against the source URL; ""
// when that gives no absolute http(s) URL.
func (c *converter) serverURL(v any) string {
	s, _ := v.(map[string]any)
	raw := str(s["url"])
	vars, _ := s["variables"].(map[string]any)
	for _, name := range plugins.TemplateNames(raw) {
		sv, _ := vars[name].(map[string]any)
		val, ok := sv["default"].(string)
		if !ok {
			enum, _ := sv["enum"].([]any)
			if len(enum) == 0 {
				return ""
			}
			val = str(enum[0])
		}
		raw = strings.Replace(raw, "{"+name+"}", val, 1)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if !u.IsAbs() {
		if c.source == nil || (c.source.Scheme != "http" && c.source.Scheme != "https") {
			return ""
		}
		u = c.source.ResolveReference(u)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return ""
	}
	u.RawQuery, u.Fragment = "", ""
	return strings.TrimRight(u.String(), "/")
}

// title is the first line of the summary, within the title column.
func title(summary string) string {
	s, _, _ := strings.Cut(strings.TrimSpace(summary), "\n")
	return plugins.Cut(strings.TrimSpace(s), 120)
}

func description(op map[string]any) string {
	sum := strings.TrimSpace(str(op["summary"]))
	desc := strings.TrimSpace(str(op["description"]))
	switch {
	case sum == "" || strings.HasPrefix(desc, sum):
		return desc
	case desc == "":
		return sum
	}
	return sum + "\n\n" + desc
}

// marshal encodes v as compact JSON with sorted keys and without HTML
// escaping, so that equal plugins have equal bytes.
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// stringItems are the string items of a JSON array.
func stringItems(v any) []string {
	items, _ := v.([]any)
	var out []string
	for _, it := range items {
		if s, ok := it.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// keywords reads x-keywords, an array of strings or one comma-separated
// string: the words people use for an operation that its text lacks.
func keywords(v any) []string {
	if s, ok := v.(string); ok {
		var out []string
		for _, k := range strings.Split(s, ",") {
			if k = strings.TrimSpace(k); k != "" {
				out = append(out, k)
			}
		}
		return out
	}
	return stringItems(v)
}

// boolPtr is v when it is a JSON boolean, else nil.
func boolPtr(v any) *bool {
	if b, ok := v.(bool); ok {
		return &b
	}
	return nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	}
	return fmt.Sprintf("a %T", v)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// isScalarArray reports whether a schema is an array of non-objects.
func isScalarArray(s map[string]any) bool {
	if s["type"] != "array" {
		return false
	}
	items, _ := s["items"].(map[string]any)
	return items["type"] != "object" && items["type"] != "array" && items["properties"] == nil
}
