package access

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/plugins"
)

// held is a Source that grants fixed strings, or fails, and counts reads:
// the rule under test is the Checker's and the Cache's, not a source's.
type held struct {
	perms Held
	err   error
	reads int
}

func (h *held) Held(context.Context, int64) (Held, error) {
	h.reads++
	return h.perms, h.err
}

// needs is a plugin that needs one of perms.
func needs(perms ...string) *plugins.Plugin { return &plugins.Plugin{Name: "list_users", Perms: perms} }

func TestAllowed(t *testing.T) {
	broken := errors.New("connection refused")
	for _, tt := range []struct {
		name   string
		mode   Mode
		source *held // nil: SourceNone
		sub    Subject
		plugin *plugins.Plugin
		want   string // "" allowed, else the error's code
		reads  int    // source reads
	}{
		{"open: no perms, any user the source would log in", ModeOpen, &held{perms: HeldOf()}, Subject{User: 7}, needs(), "", 1},
		{"open: no perms, not for a user the source would not log in", ModeOpen, &held{perms: NotUser()}, Subject{User: 7}, needs(), CodeDenied, 1},
		{"nor a plugin with perms", ModeOpen, &held{perms: NotUser()}, Subject{User: 7}, needs("system:user:list"), CodeDenied, 1},
		{"user 0 is no one to log in: not asked", ModeOpen, &held{perms: NotUser()}, Subject{}, needs(), "", 0},
		{"open: no perms, user 0", "", nil, Subject{}, needs(), "", 0},
		{"perms: no perms, no one", ModePerms, &held{perms: HeldOf(plugins.AllPerms)}, Subject{User: 1}, needs(), CodeDenied, 0},
		{"held exactly", ModePerms, &held{perms: HeldOf("system:user:list")}, Subject{User: 7}, needs("system:user:list"), "", 1},
		{"one of several suffices", ModeOpen, &held{perms: HeldOf("system:user:add")}, Subject{User: 7}, needs("system:user:list", "system:user:add"), "", 1},
		{"*:*:* holds all", ModeOpen, &held{perms: HeldOf(plugins.AllPerms)}, Subject{User: 1}, needs("system:user:list"), "", 1},
		{"no partial wildcard", ModeOpen, &held{perms: HeldOf("system:user:*", "system:*:*", "*")}, Subject{User: 7}, needs("system:user:list"), CodeDenied, 1},
		{"no prefix", ModeOpen, &held{perms: HeldOf("system:user")}, Subject{User: 7}, needs("system:user:list"), CodeDenied, 1},
		{"case counts", ModeOpen, &held{perms: HeldOf("System:User:List")}, Subject{User: 7}, needs("system:user:list"), CodeDenied, 1},
		{"user 0 holds none", ModeOpen, &held{perms: HeldOf(plugins.AllPerms)}, Subject{Narrow: []Held{HeldOf(plugins.AllPerms)}}, needs("system:user:list"), CodeDenied, 0},
		{"none: nothing is held", ModeOpen, nil, Subject{User: 7}, needs("system:user:list"), CodeDenied, 0},
		{"none: the payload decides", ModeOpen, nil, Subject{User: 7, Narrow: []Held{HeldOf("system:user:list")}}, needs("system:user:list"), "", 0},
		{"none: the payload and the token both", ModeOpen, nil, Subject{User: 7, Narrow: []Held{HeldOf("system:user:list"), HeldOf("system:user:add")}}, needs("system:user:list"), CodeDenied, 0},
		{"a payload narrows", ModeOpen, &held{perms: HeldOf("system:user:list")}, Subject{User: 7, Narrow: []Held{HeldOf()}}, needs("system:user:list"), CodeDenied, 0},
		{"a payload never widens", ModeOpen, &held{perms: HeldOf("system:role:list")}, Subject{User: 7, Narrow: []Held{HeldOf(plugins.AllPerms)}}, needs("system:user:list"), CodeDenied, 1},
		{"each judged on its own", ModeOpen, &held{perms: HeldOf("system:user:add")}, Subject{User: 7, Narrow: []Held{HeldOf("system:user:list")}}, needs("system:user:list", "system:user:add"), "", 1},
		{"database and payload agree", ModeOpen, &held{perms: HeldOf(plugins.AllPerms)}, Subject{User: 1, Narrow: []Held{HeldOf("system:user:list")}}, needs("system:user:list"), "", 1},
		{"unreadable fails closed", ModeOpen, &held{err: broken}, Subject{User: 7}, needs("system:user:list"), CodeUnavailable, 1},
		{"unreadable fails closed without perms too: it says who may log in", ModeOpen, &held{err: broken}, Subject{User: 7}, needs(), CodeUnavailable, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Checker{Mode: tt.mode, Name: SourceRuoYi}
			if tt.source != nil {
				c.Source = tt.source
			}
			err := c.Allowed(t.Context(), tt.sub, tt.plugin)
			var code string
			if e, ok := err.(interface{ Code() string }); ok {
				code = e.Code()
			} else if err != nil {
				t.Fatalf("untyped error %v", err)
			}
			if code != tt.want {
				t.Fatalf("Allowed = %v, want code %q", err, tt.want)
			}
			if tt.source != nil && tt.source.reads != tt.reads {
				t.Errorf("the source was read %d times, want %d", tt.source.reads, tt.reads)
			}
			if d, ok := errors.AsType[*DeniedError](err); ok {
				if d.Plugin != "list_users" || !slices.Equal(d.Needs, tt.plugin.Perms) {
					t.Errorf("denied %+v, want the plugin and its perms", d)
				}
				for _, other := range []string{"system:role:list", "system:user:add", plugins.AllPerms} {
					if !slices.Contains(tt.plugin.Perms, other) && strings.Contains(d.Error(), other) {
						t.Errorf("%q names %s, which the plugin does not need", d.Error(), other)
					}
				}
			}
			if u, ok := errors.AsType[*UnavailableError](err); ok && !errors.Is(u, broken) {
				t.Errorf("%v does not wrap the source's error", u)
			}
			// Every list applies the same rule: present when allowed.
			usable, uerr := c.Usable(t.Context(), tt.sub, []*plugins.Plugin{tt.plugin})
			switch {
			case tt.want == CodeUnavailable:
				if _, ok := errors.AsType[*UnavailableError](uerr); !ok {
					t.Errorf("Usable = %v, %v; want unavailable", usable, uerr)
				}
			case uerr != nil || (len(usable) == 1) != (tt.want == ""):
				t.Errorf("Usable = %v, %v; Allowed said %q", usable, uerr, tt.want)
			}
			// Explain takes the same decision, the last step the one that
			// decided (the one refusing, when refused).
			ex := c.Explain(t.Context(), tt.sub, tt.plugin, "payload", "token")
			last := ex.Steps[len(ex.Steps)-1]
			if ex.Allowed != (tt.want == "") || last.Grants != ex.Allowed || (tt.want == CodeUnavailable) != (last.Reason == ReasonUnavailable) {
				t.Errorf("Explain = %+v; Allowed said %q", ex, tt.want)
			}
			for _, st := range ex.Steps[:len(ex.Steps)-1] {
				if !st.Grants {
					t.Errorf("a step before the last refused: %+v", ex)
				}
			}
			if !slices.Equal(ex.Needs, tt.plugin.Perms) && len(tt.plugin.Perms) > 0 {
				t.Errorf("Explain needs %v, want %v", ex.Needs, tt.plugin.Perms)
			}
		})
	}
}

// TestUsableReadsOnce: a list of many plugins with perms reads the user's
// strings once, keeps the order and leaves out what is not granted.
func TestUsableReadsOnce(t *testing.T) {
	src := &held{perms: HeldOf("system:user:list", "system:role:list")}
	c := &Checker{Mode: ModePerms, Source: src, Name: SourceRuoYi}
	var ps []*plugins.Plugin
	var want []string
	for i, perm := range []string{"system:user:list", "system:menu:list", "", "system:role:list", "system:user:list"} {
		p := &plugins.Plugin{Name: "p" + string(rune('a'+i))}
		if perm != "" {
			p.Perms = []string{perm}
		}
		if perm == "system:user:list" || perm == "system:role:list" {
			want = append(want, p.Name)
		}
		ps = append(ps, p)
	}
	got, err := c.Usable(t.Context(), Subject{User: 7}, ps)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, want) || src.reads != 1 {
		t.Fatalf("usable %v (read %d times), want %v read once", names, src.reads, want)
	}
}

// TestAgentAllowed: an agent with perms follows the plugins' rule; one
// without is for every user, whatever the Mode.
func TestAgentAllowed(t *testing.T) {
	src := &held{perms: HeldOf("hr:leave:list")}
	c := &Checker{Mode: ModePerms, Source: src, Name: SourceRuoYi}
	for _, tt := range []struct {
		sub   Subject
		perms []string
		want  bool
	}{
		{Subject{User: 7}, nil, true},
		{Subject{}, nil, true},
		{Subject{User: 7}, []string{"hr:leave:list", "hr:leave:approve"}, true},
		{Subject{User: 7}, []string{"hr:leave:approve"}, false},
		{Subject{User: 7, Narrow: []Held{HeldOf()}}, []string{"hr:leave:list"}, false},
		{Subject{}, []string{"hr:leave:list"}, false},
	} {
		err := c.AgentAllowed(t.Context(), tt.sub, "hr", tt.perms)
		if (err == nil) != tt.want {
			t.Errorf("%+v, perms %v: %v, want allowed %v", tt.sub, tt.perms, err, tt.want)
		}
		if d, ok := errors.AsType[*DeniedError](err); ok && (d.Agent != "hr" || d.Plugin != "" || !strings.Contains(d.Error(), `agent "hr" needs one of the permissions hr:leave`)) {
			t.Errorf("denied %+v: %v", d, d)
		}
	}
}

// TestCacheTTL: a user's strings are read once per TTL; a failed read is
// not kept.
func TestCacheTTL(t *testing.T) {
	src := &held{perms: HeldOf("a:b")}
	c := NewCache(src, time.Minute)
	now := time.Unix(1_700_000_000, 0)
	c.now = func() time.Time { return now }
	read := func(user int64, wantReads int) {
		t.Helper()
		if _, err := c.Held(t.Context(), user); err != nil && src.err == nil {
			t.Fatal(err)
		}
		if src.reads != wantReads {
			t.Fatalf("reads %d, want %d", src.reads, wantReads)
		}
	}
	read(7, 1)
	read(7, 1)
	read(8, 2) // per user
	now = now.Add(59 * time.Second)
	read(7, 2)
	now = now.Add(time.Second)
	read(7, 3) // expired
	src.err = errors.New("down")
	now = now.Add(time.Minute)
	read(7, 4)
	read(7, 5) // the failure was not kept
}

func TestNewSettings(t *testing.T) {
	for _, tt := range []struct {
		s    Settings
		want string // "" valid, else part of the error
	}{
		{Settings{}, ""},
		{Settings{Mode: ModePerms, Source: SourceRuoYi, TTL: time.Minute}, ""},
		{Settings{Source: SourceYudao}, ""},
		{Settings{Source: SourceQuery, Query: "SELECT perms FROM my_perms WHERE user_id = ?"}, ""},
		{Settings{Mode: "closed"}, EnvToolAccess},
		{Settings{Source: "ldap"}, EnvPermissions},
		{Settings{Source: SourceQuery}, EnvPermissionsQuery},
		{Settings{Source: SourceRuoYi, Query: "SELECT 1 WHERE ? = 1"}, EnvPermissionsQuery},
		{Settings{Source: SourceRuoYi, TTL: -time.Second}, EnvPermissionsTTL},
	} {
		_, err := New(nil, tt.s)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want %q", tt.s, err, tt.want)
		}
	}
}

func TestCheckQuery(t *testing.T) {
	for _, tt := range []struct {
		q  string
		ok bool
	}{
		{"SELECT perm FROM my_perms WHERE user_id = ?", true},
		{"  select perm from my_perms where user_id = ?;\n", true},
		{"WITH p AS (SELECT perm, uid FROM t) SELECT perm FROM p WHERE uid = ?", true},
		{"SELECT perm FROM my_perms", false},                               // no parameter
		{"SELECT perm FROM my_perms WHERE user_id = ? OR dept = ?", false}, // two
		{"SELECT 1; DELETE FROM sys_user WHERE user_id = ?", false},        // two statements
		{"DELETE FROM sys_user WHERE user_id = ?", false},                  // not a SELECT
		{"UPDATE sys_user SET status = '1' WHERE user_id = ?", false},      // not a SELECT
		{"SELECTperm FROM t WHERE u = ?", false},                           // not a SELECT
	} {
		if err := CheckQuery(tt.q); (err == nil) != tt.ok {
			t.Errorf("CheckQuery(%q) = %v, want ok %v", tt.q, err, tt.ok)
		}
	}
}
