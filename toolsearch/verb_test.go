package toolsearch

import (
	"slices"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

// TestLeadingVerb: the verb a request starts with asks for what a tool
// does, so a tool whose title has it as a noun (*Get Show*: a podcast's
// show) is not lifted by it, while a title's verbs, the first word and
// those joined to it by "or" or "and", still count.
func TestLeadingVerb(t *testing.T) {
	ps := []*plugins.Plugin{
		tool("get_show", "Get Show", "Get a show by its code."),
		tool("save_shows", "Save Shows", "Save shows for the current user."),
		tool("get_accounts", "Get accounts", "The chart of accounts, each with its code."),
		tool("delete_account", "Delete an account", "Deletes an account."),
		tool("put_environment", "Create or update an environment", "Creates or updates a deployment environment."),
		tool("get_environment", "Get an environment", "Gets a deployment environment."),
	}
	ix, _ := New(ps)
	if got := first(t, ix, "show me our account codes"); got != "get_accounts" {
		t.Errorf("show me our account codes: %s first, want get_accounts", got)
	}
	if got := first(t, ix, "update the staging environment"); got != "put_environment" {
		t.Errorf("update the staging environment: %s first, want put_environment", got)
	}
	if got := first(t, ix, "which show is it"); got != "get_show" {
		t.Errorf("which show is it: %s first, want get_show: a noun past the first word is asked as one", got)
	}
	for _, tc := range []struct {
		title string
		verbs []string
	}{
		{"Create or update an environment", []string{"create", "update"}},
		{"Get and set a topic", []string{"get", "set"}},
		{"Get Show", []string{"get"}},
		{"获取服务器信息", nil},
	} {
		if got := titleVerbs(tc.title); !slices.Equal(got, tc.verbs) {
			t.Errorf("titleVerbs(%q) = %q, want %q", tc.title, got, tc.verbs)
		}
	}
}
