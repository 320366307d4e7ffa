package toolsearch

import (
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

// TestCompounds: two adjacent words of a request match the tool that
// writes them as one ("user group": a usergroup, "web hook": a webhook),
// which scores more than it would without the lexicon's part; apart,
// the words do not.
func TestCompounds(t *testing.T) {
	ps := []*plugins.Plugin{
		tool("usergroups_users_list", "usergroups.users.list", "Lists the users of a usergroup."),
		tool("users_list", "List users", "Lists the users."),
		tool("groups_list", "List groups", "Lists the groups."),
		tool("hooks_create", "Create a webhook", "Creates a webhook for the repository."),
		tool("pages_create", "Create a web page", "Creates a page of the site."),
	}
	ix, _ := New(ps)
	off, _ := NewWith(ps, Parts{Sources: true, Bilingual: true, Responses: true})
	score := func(ix *Index, q, name string) float64 {
		for _, r := range ix.Search(q, 5) {
			if r.Name == name {
				return r.Score
			}
		}
		return 0
	}
	for _, tc := range []struct {
		q, tool string
		joined  bool
	}{
		{"who is in the designers user group", "usergroups_users_list", true},
		{"create a web hook", "hooks_create", true},
		{"which group is the user in", "usergroups_users_list", false},
		{"create a hook for the web", "hooks_create", false},
	} {
		with, without := score(ix, tc.q, tc.tool), score(off, tc.q, tc.tool)
		if tc.joined && with <= without {
			t.Errorf("%q: %s scores %.3f, %.3f without the compound", tc.q, tc.tool, with, without)
		}
		if !tc.joined && with != without {
			t.Errorf("%q: %s scores %.3f, %.3f without the lexicon: the words are apart", tc.q, tc.tool, with, without)
		}
	}
	if got := first(t, ix, "create a web hook"); got != "hooks_create" {
		t.Errorf("create a web hook: %s first, want hooks_create", got)
	}
}
