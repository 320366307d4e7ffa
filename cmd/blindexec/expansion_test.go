package main

import (
	"strings"
	"testing"
)

// TestSearchExpansionSettings: BLINDEXEC_SEARCH_EXPANSION=model needs the
// LLM it asks; without it, or with a value out of its set, the program
// stops naming the variable.
func TestSearchExpansionSettings(t *testing.T) {
	c := newCLI(t)
	for _, tt := range []struct {
		env  map[string]string
		says string // "" runs
	}{
		{map[string]string{"BLINDEXEC_SEARCH_EXPANSION": "off"}, ""},
		{map[string]string{"BLINDEXEC_SEARCH_EXPANSION": "model", "BLINDEXEC_LLM_BASE_URL": "http://127.0.0.1:9/v1", "BLINDEXEC_LLM_MODEL": "m"}, ""},
		{map[string]string{"BLINDEXEC_SEARCH_EXPANSION": "model"}, "BLINDEXEC_SEARCH_EXPANSION"},
		{map[string]string{"BLINDEXEC_SEARCH_EXPANSION": "model", "BLINDEXEC_LLM_BASE_URL": "http://127.0.0.1:9/v1"}, "BLINDEXEC_SEARCH_EXPANSION"},
		{map[string]string{"BLINDEXEC_SEARCH_EXPANSION": "wordnet"}, "BLINDEXEC_SEARCH_EXPANSION"},
	} {
		for _, name := range []string{"BLINDEXEC_SEARCH_EXPANSION", "BLINDEXEC_LLM_BASE_URL", "BLINDEXEC_LLM_MODEL"} {
			t.Setenv(name, tt.env[name])
		}
		code, _, errs := c.run("", "plugin", "list")
		if tt.says == "" && code != 0 || tt.says != "" && (code == 0 || !strings.Contains(errs, tt.says)) {
			t.Errorf("%v: exit %d %q, want it to say %q", tt.env, code, errs, tt.says)
		}
	}
}
