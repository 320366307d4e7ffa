package engine_test

import (
	"fmt"
	"testing"

	"github.com/blindexec/blindexec/engine"
)

func TestNeededConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		te   *engine.ToolError
		want string // provider scopes missing, "" when not ok
	}{
		{"nil", nil, ""},
		{"another code", &engine.ToolError{Code: engine.CodeAuthError, Details: map[string]any{"provider": "acme"}}, ""},
		{"no details", &engine.ToolError{Code: engine.CodeConnectionRequired}, ""},
		{"no provider", &engine.ToolError{Code: engine.CodeConnectionRequired, Details: map[string]any{"scopes": []string{"read"}}}, ""},
		{"connection required", &engine.ToolError{Code: engine.CodeConnectionRequired, Details: map[string]any{
			"provider": "acme", "scopes": []string{"read", "write"}, "missing_scopes": []string{"write"}}}, "acme [read write] [write]"},
	} {
		provider, scopes, missing, ok := engine.NeededConnection(tc.te)
		got := ""
		if ok {
			got = fmt.Sprint(provider, " ", scopes, " ", missing)
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
