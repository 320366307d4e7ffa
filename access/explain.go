package access

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/plugins"
)

// Reason codes of an Explanation's steps, in the order the rule takes
// them. Each says what one part of the rule found; the console words
// them in the reader's language.
const (
	ReasonOpen        = "open"        // no perms, Mode open: every user
	ReasonPermsMode   = "perms_mode"  // no perms, Mode perms: no user
	ReasonNoUser      = "no_user"     // user 0 holds nothing
	ReasonNoSource    = "no_source"   // no source of strings at all
	ReasonNarrow      = "narrow"      // a payload's or a token's strings
	ReasonSource      = "source"      // the database source
	ReasonUnavailable = "unavailable" // the database source could not be read
	ReasonAllPerms    = "all_perms"   // the source grants *:*:* (RuoYi's user 1)
	ReasonUnchecked   = "unchecked"   // the engine applies no rule
	ReasonDisabled    = "disabled"    // the plugin is disabled
	ReasonLogin       = "login"       // the database source would not log the user in
)

// Step is one finding of the rule about a user and a plugin: Grants false
// on the step that refuses.
type Step struct {
	Reason string `json:"reason"`
	Grants bool   `json:"grants"`
	// Source names the source a narrow or source step judged
	// ("token", "ruoyi", …); Message says it in English.
	Source  string `json:"source,omitempty"`
	Message string `json:"message"`
}

// Explanation is why a user may (not) use a plugin: the decision Allowed
// takes, step by step. It names what the plugin needs and which source
// granted or refused, never the other strings the user holds.
type Explanation struct {
	Allowed bool     `json:"allowed"`
	Needs   []string `json:"needs"`
	Mode    Mode     `json:"mode"`
	Source  string   `json:"source"`
	Steps   []Step   `json:"steps"`
}

// Explain takes the decision of Allowed for sub and p and says why;
// narrowNames names sub.Narrow's sources ("token", "payload"), in order.
// It agrees with Allowed case by case (TestExplainAgrees).
func (c *Checker) Explain(ctx context.Context, sub Subject, p *plugins.Plugin, narrowNames ...string) Explanation {
	ex := Explanation{Needs: slices.Clone(p.Perms), Mode: cmpMode(c.Mode), Source: c.sourceName()}
	if ex.Needs == nil {
		ex.Needs = []string{}
	}
	step := func(reason string, grants bool, source, msg string, args ...any) bool {
		ex.Steps = append(ex.Steps, Step{Reason: reason, Grants: grants, Source: source, Message: fmt.Sprintf(msg, args...)})
		return grants
	}
	ex.Allowed = c.explain(ctx, sub, p, narrowNames, step)
	return ex
}

func (c *Checker) explain(ctx context.Context, sub Subject, p *plugins.Plugin, narrowNames []string, step func(string, bool, string, string, ...any) bool) bool {
	if len(p.Perms) == 0 {
		if c.Mode == ModePerms {
			return step(ReasonPermsMode, false, "", "plugin %q has no perms, and %s=%s makes such plugins usable by no user", p.Name, EnvToolAccess, ModePerms)
		}
		if c.asksLogin(sub) {
			held, err := c.Source.Held(ctx, sub.User)
			if err != nil {
				return step(ReasonUnavailable, false, c.Name, "%s", (&UnavailableError{Source: c.Name, Err: err}).Error())
			}
			if held.LoggedOut() {
				return c.loginStep(sub, step)
			}
		}
		return step(ReasonOpen, true, "", "plugin %q has no perms, and %s=%s makes such plugins usable by every user", p.Name, EnvToolAccess, ModeOpen)
	}
	needs := strings.Join(p.Perms, ", ")
	if sub.User <= 0 {
		return step(ReasonNoUser, false, "", "no user (user 0) holds no permission; plugin %q needs one of %s", p.Name, needs)
	}
	if c.Source == nil && sub.Narrow == nil {
		return step(ReasonNoSource, false, "", "%s=%s and no payload or token carries the user's strings: nothing is held", EnvPermissions, SourceNone)
	}
	for i, n := range sub.Narrow {
		name := "narrow"
		if i < len(narrowNames) {
			name = narrowNames[i]
		}
		if !n.Grants(p.Perms) {
			return step(ReasonNarrow, false, name, "the %s's strings hold none of %s", name, needs)
		}
		step(ReasonNarrow, true, name, "the %s's strings hold one of %s", name, needs)
	}
	if c.Source == nil {
		return true
	}
	held, err := c.Source.Held(ctx, sub.User)
	if err != nil {
		return step(ReasonUnavailable, false, c.Name, "%s", (&UnavailableError{Source: c.Name, Err: err}).Error())
	}
	if held.LoggedOut() {
		return c.loginStep(sub, step)
	}
	if _, all := held[plugins.AllPerms]; all {
		return step(ReasonAllPerms, true, c.Name, "%s=%s grants user %d %s, which holds every permission", EnvPermissions, c.Name, sub.User, plugins.AllPerms)
	}
	for _, n := range p.Perms {
		if _, ok := held[n]; ok {
			return step(ReasonSource, true, c.Name, "%s=%s grants user %d %s", EnvPermissions, c.Name, sub.User, n)
		}
	}
	return step(ReasonSource, false, c.Name, "%s=%s grants user %d none of %s", EnvPermissions, c.Name, sub.User, needs)
}

// loginStep is the step refusing a user the database source would not
// log in.
func (c *Checker) loginStep(sub Subject, step func(string, bool, string, string, ...any) bool) bool {
	return step(ReasonLogin, false, c.Name, "%s=%s would not log user %d in (missing, disabled or deleted): it may use no tool", EnvPermissions, c.Name, sub.User)
}

func cmpMode(m Mode) Mode {
	if m == "" {
		return ModeOpen
	}
	return m
}

func (c *Checker) sourceName() string {
	if c.Name == "" {
		return SourceNone
	}
	return c.Name
}

// Role is a RuoYi role (sys_role) whose enabled menus grant a permission.
type Role struct {
	ID    int64  `json:"role_id"`
	Key   string `json:"role_key"`
	Name  string `json:"role_name"`
	Grant string `json:"grants"` // the permission its menus grant
}

// Directory is what a database source knows of people besides their
// strings: their names and the roles that grant a permission (RuoYi's
// tables). Checker.Directory is nil when the source knows neither.
type Directory interface {
	// UserNames returns the display names of ids that exist.
	UserNames(ctx context.Context, ids []int64) (map[int64]string, error)
	// RolesGranting returns the enabled roles whose enabled menus carry
	// one of perms.
	RolesGranting(ctx context.Context, perms []string) ([]Role, error)
}

// ruoyiRoleMenus are the enabled, undeleted roles with their enabled
// menus' perms cells, as SysPermissionService counts them (role 1, the
// administrator's, holds everything through user 1 and is skipped there).
const ruoyiRoleMenus = `SELECT r.role_id, r.role_key, r.role_name, m.perms FROM sys_role r
  JOIN sys_role_menu rm ON rm.role_id = r.role_id
  JOIN sys_menu m ON m.menu_id = rm.menu_id
 WHERE r.status = '0' AND r.del_flag = '0' AND r.role_id <> 1
   AND m.status = '0' AND m.perms IS NOT NULL AND m.perms <> ''
 ORDER BY r.role_sort, r.role_id`

// RolesGranting reads the roles whose menus grant one of perms, a cell
// split as Held splits it; each role once, with the first string found.
func (s RuoYi) RolesGranting(ctx context.Context, perms []string) ([]Role, error) {
	rows, err := s.DB.QueryContext(ctx, ruoyiRoleMenus)
	if err != nil {
		return nil, fmt.Errorf("read the roles' menus: %w", err)
	}
	defer rows.Close()
	want := HeldOf(perms...)
	var out []Role
	seen := map[int64]bool{}
	for rows.Next() {
		var r Role
		var cell string
		if err := rows.Scan(&r.ID, &r.Key, &r.Name, &cell); err != nil {
			return nil, fmt.Errorf("read the roles' menus: %w", err)
		}
		for p := range strings.SplitSeq(strings.TrimSpace(cell), ",") {
			if _, ok := want[p]; ok && !seen[r.ID] {
				seen[r.ID], r.Grant = true, p
				out = append(out, r)
			}
		}
	}
	return out, rows.Err()
}

// UserNames reads the names of ids in sys_user, as RuoYi's pages show a
// person: the nickname with the login name ("若依 (ry)"), or the login
// name alone. Deleted users are left out.
func (s RuoYi) UserNames(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	q := `SELECT user_id, COALESCE(nick_name, ''), user_name FROM sys_user WHERE del_flag = '0' AND user_id IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
	rows, err := s.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read sys_user: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var nick, login string
		if err := rows.Scan(&id, &nick, &login); err != nil {
			return nil, fmt.Errorf("read sys_user: %w", err)
		}
		out[id] = login
		if nick != "" && nick != login {
			out[id] = nick + " (" + login + ")"
		}
	}
	return out, rows.Err()
}
