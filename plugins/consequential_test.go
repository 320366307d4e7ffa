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
