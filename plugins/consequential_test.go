package plugins

import "testing"

func TestIsConsequential(t *testing.T) {
	yes, no := true, false
	httpP := func(method string, setting, hint *bool) *Plugin {
		return &Plugin{Execution: Execution{Method: method}, Consequential: setting, ConsequentialHint: hint}
	}
	mcpP := func(hint *bool) *Plugin {
		return &Plugin{Execution: Execution{Type: TypeMCP}, ConsequentialHint: hint}
	}
	for _, tc := range []struct {
		name string
		p    *Plugin
		want bool
	}{
		{"GET derived", httpP("GET", nil, nil), false},
		{"head lower case derived", httpP("head", nil, nil), false},
		{"OPTIONS derived", httpP("OPTIONS", nil, nil), false},
		{"POST derived", httpP("POST", nil, nil), true},
		{"DELETE derived", httpP("DELETE", nil, nil), true},
		{"PUT derived", httpP("PUT", nil, nil), true},
		{"PATCH derived", httpP("PATCH", nil, nil), true},
		{"hint false on POST", httpP("POST", nil, &no), false},
		{"hint true on GET", httpP("GET", nil, &yes), true},
		{"setting wins over hint", httpP("POST", &yes, &no), true},
		{"setting false on DELETE", httpP("DELETE", &no, nil), false},
		{"MCP tool without annotations", mcpP(nil), true},
		{"MCP tool read-only", mcpP(&no), false},
	} {
		if got := tc.p.IsConsequential(); got != tc.want {
			t.Errorf("%s: IsConsequential = %v, want %v", tc.name, got, tc.want)
		}
	}
	if (&Plugin{Execution: Execution{Method: "DELETE"}, Consequential: &no}).DerivedConsequential() != true {
		t.Error("DerivedConsequential of a DELETE reads the setting; it must not")
	}
}

// TestConsequentialOverride: a server reads the method a request asks for
// in an override header or a _method parameter, so a GET carrying one
// asking for DELETE is consequential, whether the plugin sends it itself
// or an argument lands there.
func TestConsequentialOverride(t *testing.T) {
	yes, no := true, false
	get := func(mod func(*Plugin)) *Plugin {
		p := &Plugin{Execution: Execution{Method: "GET", BaseURL: "https://api.example/items"}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	inHeader := func(wire string) func(*Plugin) {
		return func(p *Plugin) {
			p.Execution.ParamPlacement = Placement{Args: map[string]ArgPlacement{"how": {In: InHeader, Name: wire}}}
		}
	}
	for _, tc := range []struct {
		name   string
		p      *Plugin
		args   map[string]any
		static bool // IsConsequential: what the plugin sends itself
		call   bool // ConsequentialWith(args)
	}{
		{"plain GET", get(nil), map[string]any{"q": "x"}, false, false},
		{"execution.headers X-HTTP-Method-Override", get(func(p *Plugin) { p.Execution.Headers = map[string]string{"X-HTTP-Method-Override": "DELETE"} }), nil, true, true},
		{"execution.headers lower case x-http-method", get(func(p *Plugin) { p.Execution.Headers = map[string]string{"x-http-method": "patch"} }), nil, true, true},
		{"execution.headers X-Method-Override GET", get(func(p *Plugin) { p.Execution.Headers = map[string]string{"X-Method-Override": "GET"} }), nil, false, false},
		{"execution.query _method", get(func(p *Plugin) { p.Execution.Query = map[string]string{"_method": "DELETE"} }), nil, true, true},
		{"base_url query _method", get(func(p *Plugin) { p.Execution.BaseURL = "https://api.example/items?a=1&_method=PUT" }), nil, true, true},
		{"base_url query escaped name", get(func(p *Plugin) { p.Execution.BaseURL = "https://api.example/items?%5Fmethod=delete" }), nil, true, true},
		{"fixed param in an override header", get(func(p *Plugin) {
			inHeader("X-HTTP-Method-Override")(p)
			p.FixedParams = map[string]any{"how": "DELETE"}
		}), map[string]any{"how": "DELETE"}, true, true},
		{"argument in an override header", get(inHeader("X-HTTP-Method-Override")), map[string]any{"how": "DELETE"}, false, true},
		{"argument in an override header asking HEAD", get(inHeader("X-HTTP-Method")), map[string]any{"how": " head "}, false, false},
		{"argument in an override header, a list", get(inHeader("X-HTTP-Method")), map[string]any{"how": []any{"GET", "DELETE"}}, false, true},
		{"argument in an override header, a number", get(inHeader("X-HTTP-Method")), map[string]any{"how": 1.0}, false, true},
		{"argument in an override header, null", get(inHeader("X-HTTP-Method")), map[string]any{"how": nil}, false, false},
		{"argument in another header", get(inHeader("X-Trace")), map[string]any{"how": "DELETE"}, false, false},
		{"argument _method in the query", get(nil), map[string]any{"_method": "DELETE"}, false, true},
		{"argument renamed _method in a form", get(func(p *Plugin) {
			p.Execution.ParamPlacement = Placement{Args: map[string]ArgPlacement{"m": {In: InBody, Name: "_method"}}}
		}), map[string]any{"m": "delete"}, false, true},
		{"whole body with _method", get(func(p *Plugin) {
			p.Execution.ParamPlacement = Placement{Args: map[string]ArgPlacement{"body": {In: InBody, Name: "$"}}}
		}), map[string]any{"body": map[string]any{"_method": "DELETE"}}, false, true},
		{"base_url query name filled by a path argument", get(func(p *Plugin) { p.Execution.BaseURL = "https://api.example/items?{k}=DELETE" }), map[string]any{"k": "_method"}, true, true},
		{"base_url query name filled, value GET", get(func(p *Plugin) { p.Execution.BaseURL = "https://api.example/items?{k}=GET" }), map[string]any{"k": "_method"}, false, false},
		{"credential mapped to an override header", get(func(p *Plugin) {
			p.AuthConfig.Mapping = []AuthMapping{{Source: "VERB", Target: "x-http-method-override"}}
		}), nil, true, true},
		{"credential mapped to _method in the query", get(func(p *Plugin) {
			p.AuthConfig.Mapping = []AuthMapping{{Source: "VERB", Target: "_method", Location: InQuery}}
		}), nil, true, true},
		{"credential mapped to another header", get(func(p *Plugin) {
			p.AuthConfig.Mapping = []AuthMapping{{Source: "KEY", Target: "X-Api-Key"}}
		}), nil, false, false},
		{"object argument in the query, exploded", get(nil), map[string]any{"filter": map[string]any{"_method": "DELETE", "q": "x"}}, false, true},
		{"object argument in the query asking GET", get(nil), map[string]any{"filter": map[string]any{"_method": "GET"}}, false, false},
		{"object field of a form, style form", get(func(p *Plugin) {
			p.Execution.ParamPlacement = Placement{Args: map[string]ArgPlacement{"f": {In: InBody, Name: "f", Style: "form"}}}
		}), map[string]any{"f": map[string]any{"_method": "PUT"}}, false, true},
		{"object field of a JSON body is nested", get(func(p *Plugin) {
			p.Execution.ParamPlacement = Placement{Args: map[string]ArgPlacement{"data": {In: InBody, Name: "data"}}}
		}), map[string]any{"data": map[string]any{"_method": "DELETE"}}, false, false},
		{"_method in the path is no override", get(func(p *Plugin) { p.Execution.BaseURL = "https://api.example/{_method}" }), map[string]any{"_method": "DELETE"}, false, false},
		{"override over an import's hint", get(func(p *Plugin) {
			p.ConsequentialHint = &no
			p.Execution.Headers = map[string]string{"X-HTTP-Method-Override": "DELETE"}
		}), nil, true, true},
		{"hint false on a POST, argument asks DELETE", &Plugin{Execution: Execution{Method: "POST", BaseURL: "https://api.example/search"}, ConsequentialHint: &no},
			map[string]any{"_method": "DELETE"}, false, true},
		{"the administrator's setting stands", get(func(p *Plugin) {
			p.Consequential = &no
			p.Execution.Headers = map[string]string{"X-HTTP-Method-Override": "DELETE"}
		}), map[string]any{"_method": "DELETE"}, false, false},
		{"setting true stands", get(func(p *Plugin) { p.Consequential = &yes }), nil, true, true},
	} {
		if got := tc.p.IsConsequential(); got != tc.static {
			t.Errorf("%s: IsConsequential = %v, want %v", tc.name, got, tc.static)
		}
		if got := tc.p.ConsequentialWith(tc.args); got != tc.call {
			t.Errorf("%s: ConsequentialWith(%v) = %v, want %v", tc.name, tc.args, got, tc.call)
		}
	}
}
