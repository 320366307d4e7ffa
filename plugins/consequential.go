package plugins

import (
	"cmp"
	"net/url"
	"strings"
)

// IsConsequential reports whether a call of the plugin changes the world
// on someone's behalf and so waits for a person under the default
// confirmation policy: the plugin's own setting (an administrator's
// choice) when given, else the suggestion an import read from the source
// (x-openai-isConsequential, MCP's readOnlyHint), else derived — an HTTP
// GET, HEAD or OPTIONS is not, every other method is, and an MCP tool is
// (MCP's default annotations say a tool may change things). A method
// override the plugin sends itself (MethodOverride) counts as its method,
// over the import's suggestion.
func (p *Plugin) IsConsequential() bool { return p.ConsequentialWith(p.FixedParams) }

// ConsequentialWith is IsConsequential for a call whose arguments, fixed
// params merged, are args: a server reads the method a request asks for
// in an override header or a _method parameter (MethodOverride), so an
// argument landing there makes a GET the DELETE it asks for. The
// strongest of the declared method and every override is the call's;
// only the administrator's own setting stands above it.
func (p *Plugin) ConsequentialWith(args map[string]any) bool {
	if p.Consequential != nil {
		return *p.Consequential
	}
	base := p.DerivedConsequential()
	if p.ConsequentialHint != nil {
		base = *p.ConsequentialHint
	}
	return base || p.ExecType() == TypeHTTP && p.overridesUnsafe(args)
}

// DerivedConsequential is the classification from the call's kind alone:
// what an inline plugin not sent by the service token gets whatever it
// claims.
func (p *Plugin) DerivedConsequential() bool {
	if p.ExecType() == TypeMCP {
		return true
	}
	return !SafeMethod(p.Execution.Method)
}

// SafeMethod reports whether HTTP method is read-only as confirmation
// reads it: GET, HEAD, OPTIONS.
func SafeMethod(method string) bool {
	return safeMethods[strings.ToUpper(strings.TrimSpace(method))]
}

var safeMethods = map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true}

// MethodOverride reports whether a request parameter named name, sent in
// (InHeader, InQuery, InBody), is one a server reads as the request's
// method in place of the one on the wire: the headers
// X-HTTP-Method-Override (Google, Microsoft), X-HTTP-Method (OData),
// X-Method-Override, and the _method parameter Rails and Laravel read
// from the query or a form.
func MethodOverride(in, name string) bool {
	switch in {
	case InHeader:
		return strings.EqualFold(name, "X-HTTP-Method-Override") || strings.EqualFold(name, "X-HTTP-Method") ||
			strings.EqualFold(name, "X-Method-Override")
	case InQuery, InBody:
		return name == "_method"
	}
	return false
}

// overridesUnsafe reports whether the request of a call with args asks,
// through a method override (MethodOverride), for a method that is not
// safe: in execution.headers, execution.query, base_url's query (a name
// a path argument fills included), an argument placed there, or a
// credential auth_config.mapping places there. A value that is no method (a number, a list of
// several) is taken as unsafe: the server's reading of it is unknown.
func (p *Plugin) overridesUnsafe(args map[string]any) bool {
	e := &p.Execution
	for k, v := range e.Headers {
		if MethodOverride(InHeader, k) && unsafeOverride(v) {
			return true
		}
	}
	for k, v := range e.Query {
		if MethodOverride(InQuery, k) && unsafeOverride(v) {
			return true
		}
	}
	if _, q, ok := strings.Cut(e.BaseURL, "?"); ok {
		// Every value of the parameter, whatever the decoding errors
		// around it: ParseQuery keeps what it could read. A name holding
		// a template is filled by a path argument ("?{k}=DELETE" with k
		// "_method"): it may be the override, whatever its value.
		vals, _ := url.ParseQuery(q)
		for k, vs := range vals {
			if k != "_method" && !strings.Contains(k, "{") {
				continue
			}
			for _, v := range vs {
				if unsafeOverride(v) {
					return true
				}
			}
		}
	}
	for _, m := range p.AuthConfig.Mapping {
		// A credential is sent where the server reads the method: its
		// value is the caller's and unknown here (a payload's "DELETE").
		if MethodOverride(cmp.Or(m.Location, InHeader), m.Target) {
			return true
		}
	}
	for name, v := range args {
		place := e.PlacementOf(name)
		wire := name
		if place.Name != "" {
			wire = place.Name
		}
		if MethodOverride(place.In, wire) && unsafeOverride(v) {
			return true
		}
		// An object spread into parameters of its own keys: the whole
		// body's fields, an object in the query (style form exploded,
		// OpenAPI's default) or in a form encoded so: its own _method
		// is one ({"filter": {"_method": "DELETE"}} sends ?_method=DELETE).
		spread := place.In == InQuery || place.In == InBody && (wire == "$" || place.Style != "" || place.Explode != nil)
		if m, ok := v.(map[string]any); ok && spread && unsafeOverride(m["_method"]) {
			return true
		}
	}
	return false
}

// unsafeOverride reports whether an override's value asks for a method
// that is not safe; nil and "" ask for none.
func unsafeOverride(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case string:
		return strings.TrimSpace(v) != "" && !SafeMethod(v)
	case []any:
		for _, x := range v {
			if unsafeOverride(x) {
				return true
			}
		}
		return false
	}
	return true
}

// IdempotentMethod reports whether HTTP calls method idempotent: a
// repeat has the effect of one call (RFC 9110, 9.2.2).
func IdempotentMethod(method string) bool { return idempotentMethods[strings.ToUpper(method)] }

var idempotentMethods = map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true, "PUT": true, "DELETE": true}
