package access

import (
	"database/sql"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins"
)

// scriptDB is a fresh MariaDB database holding the engine's tables and
// what the project's own database script (testdata, unmodified) creates
// beside them. It is skipped without BLINDEXEC_TEST_MYSQL_DSN.
func scriptDB(t testing.TB, script string) *sql.DB {
	t.Helper()
	return testdb.Script(t, script).DB()
}

// sourceTest is a Checker over a project's database with its cache's
// clock under the test's hand, and oracle, what the project itself
// computes.
type sourceTest struct {
	db      *sql.DB
	c       *Checker
	now     time.Time
	ttl     time.Duration
	oracle  func(t *testing.T, db *sql.DB, user int64) Held
	subject *plugins.Plugin // the plugin the changes are about
}

func newSourceTest(t *testing.T, script string, s Settings, oracle func(*testing.T, *sql.DB, int64) Held) *sourceTest {
	t.Helper()
	db := scriptDB(t, script)
	c, err := New(db, s)
	if err != nil {
		t.Fatal(err)
	}
	st := &sourceTest{db: db, c: c, now: time.Now(), ttl: s.TTL, oracle: oracle,
		subject: &plugins.Plugin{Name: "list_users", Perms: []string{"system:user:list"}}}
	c.Source.(*Cache).now = func() time.Time { return st.now }
	return st
}

func (st *sourceTest) advance(d time.Duration) { st.now = st.now.Add(d) }

func (st *sourceTest) held(t *testing.T, user int64) Held {
	t.Helper()
	h, err := st.c.Source.Held(t.Context(), user)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// holdsAsComputed checks that user holds what the project computes, and
// at least least strings.
func (st *sourceTest) holdsAsComputed(t *testing.T, user int64, least int) Held {
	t.Helper()
	got, want := st.held(t, user), st.oracle(t, st.db, user)
	if !maps.Equal(got, want) || len(got) < least {
		t.Fatalf("user %d holds %d strings, the project computes %d:\n got %v\nwant %v", user, len(got), len(want), sorted(got), sorted(want))
	}
	return got
}

// allowed reports whether user may use p; an error other than a denial
// fails the test.
func (st *sourceTest) allowed(t *testing.T, user int64, p *plugins.Plugin) bool {
	t.Helper()
	err := st.c.Allowed(t.Context(), Subject{User: user}, p)
	if _, denied := errors.AsType[*DeniedError](err); err != nil && !denied {
		t.Fatalf("user %d, %s: %v", user, p.Name, err)
	}
	return err == nil
}

// change makes a change in the project's tables as its console would:
// user may use the subject plugin before; the change is not seen before
// the TTL has passed, and is after it (the user may then still use the
// plugin, or not), the user then holding what the project computes;
// undone, it is seen after the TTL again.
func (st *sourceTest) change(t *testing.T, user int64, do, undo []string, still bool) {
	t.Helper()
	if !st.allowed(t, user, st.subject) {
		t.Fatalf("user %d may not use %s before the change", user, st.subject.Name)
	}
	exec(t, st.db, do...)
	st.advance(st.ttl - time.Second)
	if !st.allowed(t, user, st.subject) {
		t.Error("the change took effect before the TTL")
	}
	st.advance(time.Second)
	if got := st.allowed(t, user, st.subject); got != still {
		t.Errorf("after the TTL user %d may use %s: %v, want %v", user, st.subject.Name, got, still)
	}
	st.holdsAsComputed(t, user, 0)
	// A plugin without perms, open to every user: not to one the project
	// would not log in (disabled, deleted; yudao: its tenant refused).
	open := &Checker{Mode: ModeOpen, Source: st.c.Source, Name: st.c.Name}
	loggedIn := !st.oracle(t, st.db, user).LoggedOut()
	if err := open.Allowed(t.Context(), Subject{User: user}, &plugins.Plugin{Name: "weather"}); (err == nil) != loggedIn {
		t.Errorf("after the TTL user %d may use an open plugin: %v, want %v", user, err, loggedIn)
	}
	exec(t, st.db, undo...)
	st.advance(st.ttl)
	if !st.allowed(t, user, st.subject) {
		t.Errorf("undone, user %d may still not use %s after the TTL", user, st.subject.Name)
	}
}

func exec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func sorted(h Held) []string { return slices.Sorted(maps.Keys(h)) }

// ruoyiOracle computes user's permissions as RuoYi-Vue does at login,
// step by step and with its own SQL: UserDetailsServiceImpl refuses a
// deleted or disabled user; SysPermissionService.getMenuPermission gives
// user 1 "*:*:*", and otherwise, for each of the user's roles (as
// SysUserMapper's selectUserVo joins them) that is enabled and not role
// 1, SysMenuMapper.selectMenuPermsByRoleId verbatim, each cell trimmed
// and split on commas (SysMenuServiceImpl.selectMenuPermsByRoleId). Roles
// marked deleted are left out too, which RuoYi's code never meets: it
// refuses to delete a role still assigned (SysRoleServiceImpl.
// deleteRoleByIds).
func ruoyiOracle(t *testing.T, db *sql.DB, user int64) Held {
	t.Helper()
	ctx := t.Context()
	var status, delFlag string
	err := db.QueryRowContext(ctx, "select u.status, u.del_flag from sys_user u where u.user_id = ?", user).Scan(&status, &delFlag)
	if errors.Is(err, sql.ErrNoRows) || err == nil && (delFlag == "2" || status == "1") {
		return NotUser() // not logged in at all
	}
	if err != nil {
		t.Fatal(err)
	}
	if user == 1 {
		return HeldOf(plugins.AllPerms)
	}
	rows, err := db.QueryContext(ctx, `select r.role_id, r.status, r.del_flag from sys_user u
		left join sys_user_role ur on u.user_id = ur.user_id
		left join sys_role r on r.role_id = ur.role_id where u.user_id = ?`, user)
	if err != nil {
		t.Fatal(err)
	}
	type role struct {
		id              sql.NullInt64
		status, delFlag sql.NullString
	}
	var roles []role
	for rows.Next() {
		var r role
		if err := rows.Scan(&r.id, &r.status, &r.delFlag); err != nil {
			t.Fatal(err)
		}
		roles = append(roles, r)
	}
	rows.Close()
	held := Held{}
	for _, r := range roles {
		if !r.id.Valid || r.status.String != "0" || r.id.Int64 == 1 || r.delFlag.String == "2" {
			continue
		}
		perms, err := db.QueryContext(ctx, `select distinct m.perms
		from sys_menu m
			 left join sys_role_menu rm on m.menu_id = rm.menu_id
		where m.status = '0' and rm.role_id = ?`, r.id.Int64)
		if err != nil {
			t.Fatal(err)
		}
		for perms.Next() {
			var cell sql.NullString
			if err := perms.Scan(&cell); err != nil {
				t.Fatal(err)
			}
			if cell.String != "" {
				for _, p := range strings.Split(strings.TrimSpace(cell.String), ",") {
					held[p] = struct{}{}
				}
			}
		}
		perms.Close()
	}
	return held
}

// TestRuoYi loads RuoYi-Vue's own script beside the engine's tables:
// user 1 holds every permission; a user of the common role holds exactly
// what RuoYi computes, through the rule as plugins need them; disabling
// or deleting the role, the menu or the user, or removing the user's role
// link, takes effect once the TTL has passed, not before; a source that
// cannot be read refuses.
func TestRuoYi(t *testing.T) {
	st := newSourceTest(t, "testdata/ruoyi-vue/ry_20260417.sql", Settings{Mode: ModePerms, Source: SourceRuoYi, TTL: time.Minute}, ruoyiOracle)
	if got := sorted(st.held(t, 1)); !slices.Equal(got, []string{plugins.AllPerms}) {
		t.Errorf("user 1 (admin) holds %v, want *:*:*", got)
	}
	ry := st.holdsAsComputed(t, 2, 50) // "ry", of the common role
	if _, all := ry[plugins.AllPerms]; all {
		t.Fatal("user 2 holds *:*:*")
	}
	if got := st.held(t, 99); !got.LoggedOut() || len(got) != 1 {
		t.Errorf("a user RuoYi does not have holds %v, want NotUser", sorted(got))
	}

	listUsers := st.subject
	unknown := &plugins.Plugin{Name: "rotate_keys", Perms: []string{"vault:key:rotate"}}
	open := &plugins.Plugin{Name: "weather"}
	for _, tt := range []struct {
		user int64
		p    *plugins.Plugin
		want bool
	}{
		{1, listUsers, true}, {1, unknown, true}, {1, open, false}, // ModePerms: no perms, no one
		{2, listUsers, true}, {2, unknown, false}, {2, open, false},
		{0, listUsers, false}, {99, listUsers, false},
	} {
		if got := st.allowed(t, tt.user, tt.p); got != tt.want {
			t.Errorf("user %d may use %s: %v, want %v", tt.user, tt.p.Name, got, tt.want)
		}
	}

	// The menu granting system:user:list is menu 100.
	for _, tt := range []struct {
		name     string
		do, undo []string
		still    bool // user 2 keeps system:user:list another way
	}{
		{"disable the role", []string{"update sys_role set status = '1' where role_id = 2"}, []string{"update sys_role set status = '0' where role_id = 2"}, false},
		{"delete the role", []string{"update sys_role set del_flag = '2' where role_id = 2"}, []string{"update sys_role set del_flag = '0' where role_id = 2"}, false},
		{"disable the menu", []string{"update sys_menu set status = '1' where menu_id = 100"}, []string{"update sys_menu set status = '0' where menu_id = 100"}, false},
		{"delete the menu", []string{"create table kept_menu as select * from sys_menu where menu_id = 100", "delete from sys_menu where menu_id = 100"},
			[]string{"insert into sys_menu select * from kept_menu", "drop table kept_menu"}, false},
		{"remove the user's role link", []string{"delete from sys_user_role where user_id = 2"}, []string{"insert into sys_user_role values (2, 2)"}, false},
		{"disable the user", []string{"update sys_user set status = '1' where user_id = 2"}, []string{"update sys_user set status = '0' where user_id = 2"}, false},
		{"delete the user", []string{"update sys_user set del_flag = '2' where user_id = 2"}, []string{"update sys_user set del_flag = '0' where user_id = 2"}, false},
		// Role 1's menus are not counted, even linked.
		{"give role 1 to user 2", []string{"delete from sys_user_role where user_id = 2", "insert into sys_user_role values (2, 1)", "insert into sys_role_menu values (1, 100)"},
			[]string{"delete from sys_user_role where user_id = 2", "insert into sys_user_role values (2, 2)", "delete from sys_role_menu where role_id = 1"}, false},
		{"a cell of two strings", []string{"update sys_menu set perms = 'system:user:query,system:user:list' where menu_id = 100"},
			[]string{"update sys_menu set perms = 'system:user:list' where menu_id = 100"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st.change(t, 2, tt.do, tt.undo, tt.still)
		})
	}

	exec(t, st.db, "drop table sys_role_menu")
	st.advance(st.ttl)
	err := st.c.Allowed(t.Context(), Subject{User: 2}, listUsers)
	if u, ok := errors.AsType[*UnavailableError](err); !ok || u.Code() != CodeUnavailable {
		t.Fatalf("RuoYi's tables unreadable: %v, want an UnavailableError", err)
	}
	if err := st.c.Allowed(t.Context(), Subject{User: 1}, listUsers); err != nil {
		t.Errorf("user 1, whose sys_user row is all RuoYi reads: %v", err)
	}
	exec(t, st.db, "drop table sys_user")
	st.advance(st.ttl)
	if err := st.c.Allowed(t.Context(), Subject{User: 1}, listUsers); !errors.As(err, new(*UnavailableError)) {
		t.Fatalf("sys_user unreadable: %v, want an UnavailableError", err)
	}
}

// TestRuoYiDirectory: over RuoYi-Vue's own script, the roles whose enabled
// menus grant a permission (the common role for system:user:list, none
// for a string no menu carries, none once the role is disabled) and the
// users' names as RuoYi shows them.
func TestRuoYiDirectory(t *testing.T) {
	db := scriptDB(t, "testdata/ruoyi-vue/ry_20260417.sql")
	c, err := New(db, Settings{Source: SourceRuoYi})
	if err != nil || c.Directory == nil {
		t.Fatalf("New: %v, directory %v", err, c.Directory)
	}
	roles, err := c.Directory.RolesGranting(t.Context(), []string{"vault:key:rotate", "system:user:list"})
	if err != nil || len(roles) != 1 || roles[0].ID != 2 || roles[0].Key != "common" || roles[0].Name != "普通角色" || roles[0].Grant != "system:user:list" {
		t.Fatalf("roles granting system:user:list: %+v %v", roles, err)
	}
	if roles, err := c.Directory.RolesGranting(t.Context(), []string{"vault:key:rotate"}); err != nil || len(roles) != 0 {
		t.Errorf("roles granting a string no menu carries: %+v %v", roles, err)
	}
	if _, err := db.Exec(`UPDATE sys_role SET status = '1' WHERE role_id = 2`); err != nil {
		t.Fatal(err)
	}
	if roles, err := c.Directory.RolesGranting(t.Context(), []string{"system:user:list"}); err != nil || len(roles) != 0 {
		t.Errorf("a disabled role still grants: %+v %v", roles, err)
	}
	names, err := c.Directory.UserNames(t.Context(), []int64{1, 2, 99})
	if err != nil || !maps.Equal(names, map[int64]string{1: "若依 (admin)", 2: "若依 (ry)"}) {
		t.Errorf("names: %v %v", names, err)
	}
	if none, err := New(db, Settings{}); err != nil || none.Directory != nil {
		t.Errorf("SourceNone has a directory: %v", err)
	}
}
