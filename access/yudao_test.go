package access

import (
	"database/sql"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/blindexec/blindexec/plugins"
)

// yudaoOracle computes user's permissions as ruoyi-vue-pro does, step by
// step over its tables read whole: the request's tenant must be valid
// (TenantServiceImpl.validTenant: exists, enabled, not expired) and the
// user enabled; PermissionServiceImpl.hasAnyPermissions then grants a
// permission p when one of the user's enabled roles
// (getEnableUserRoleListByUserIdFromCache) is linked to a menu whose
// permission is p (getMenuIdListByPermissionFromCache,
// getMenuRoleIdListByMenuIdFromCache), or when one of them is super_admin
// (RoleServiceImpl.hasAnySuperAdmin). Every query leaves out rows marked
// deleted (MyBatis-Plus's logical delete) and rows of other tenants.
func yudaoOracle(t *testing.T, db *sql.DB, user int64) Held {
	t.Helper()
	ctx := t.Context()
	var status, tenant int64
	var deleted bool
	err := db.QueryRowContext(ctx, "SELECT status, deleted = 1, tenant_id FROM system_users WHERE id = ?", user).Scan(&status, &deleted, &tenant)
	if errors.Is(err, sql.ErrNoRows) || err == nil && (deleted || status != 0) {
		return NotUser() // not logged in at all
	}
	if err != nil {
		t.Fatal(err)
	}
	var tstatus int64
	var tdeleted, expired bool
	err = db.QueryRowContext(ctx, "SELECT status, deleted = 1, expire_time <= NOW() FROM system_tenant WHERE id = ?", tenant).Scan(&tstatus, &tdeleted, &expired)
	if errors.Is(err, sql.ErrNoRows) || err == nil && (tdeleted || tstatus != 0 || expired) {
		return NotUser() // not logged in at all
	}
	if err != nil {
		t.Fatal(err)
	}
	ids := func(q string, args ...any) []int64 {
		t.Helper()
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		return out
	}
	var enabled []int64
	super := false
	for _, r := range ids("SELECT role_id FROM system_user_role WHERE user_id = ? AND deleted = 0 AND tenant_id = ?", user, tenant) {
		var code string
		var rstatus int64
		err := db.QueryRowContext(ctx, "SELECT code, status FROM system_role WHERE id = ? AND deleted = 0 AND tenant_id = ?", r, tenant).Scan(&code, &rstatus)
		if errors.Is(err, sql.ErrNoRows) || rstatus != 0 {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		enabled = append(enabled, r)
		super = super || code == "super_admin"
	}
	if super {
		return HeldOf(plugins.AllPerms)
	}
	// getMenuIdListByPermissionFromCache and
	// getMenuRoleIdListByMenuIdFromCache, over the tables read once.
	menusOf := map[string][]int64{}
	rows, err := db.QueryContext(ctx, "SELECT id, permission FROM system_menu WHERE deleted = 0")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var p string
		if err := rows.Scan(&id, &p); err != nil {
			t.Fatal(err)
		}
		menusOf[p] = append(menusOf[p], id)
	}
	rows.Close()
	rolesOf := map[int64][]int64{}
	rows, err = db.QueryContext(ctx, "SELECT menu_id, role_id FROM system_role_menu WHERE deleted = 0 AND tenant_id = ?", tenant)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var m, r int64
		if err := rows.Scan(&m, &r); err != nil {
			t.Fatal(err)
		}
		rolesOf[m] = append(rolesOf[m], r)
	}
	rows.Close()
	held := Held{}
	for p, menus := range menusOf {
		for _, m := range menus {
			for _, r := range rolesOf[m] {
				if p != "" && slices.Contains(enabled, r) {
					held[p] = struct{}{}
				}
			}
		}
	}
	return held
}

// TestYudao loads ruoyi-vue-pro's own script (it loads on MariaDB as it
// is) beside the engine's tables: its super_admin holds every permission,
// a user of the common role only (104, "test") exactly what yudao
// computes, and changes to roles, links, menus, users and tenants are
// seen after the TTL.
func TestYudao(t *testing.T) {
	st := newSourceTest(t, "testdata/ruoyi-vue-pro/ruoyi-vue-pro.sql.gz", Settings{Source: SourceYudao, TTL: time.Minute}, yudaoOracle)
	if got := sorted(st.held(t, 1)); !slices.Equal(got, []string{plugins.AllPerms}) {
		t.Errorf("user 1 (super_admin) holds %v, want *:*:*", got)
	}
	if test := st.holdsAsComputed(t, 104, 50); len(test) == 0 {
		t.Fatal("user 104 holds nothing")
	}
	const menu = "(SELECT id FROM (SELECT id FROM system_menu WHERE permission = 'system:user:list') m)"
	for _, tt := range []struct {
		name     string
		user     int64
		do, undo []string
	}{
		{"disable the role", 104, []string{"UPDATE system_role SET status = 1 WHERE id = 2"}, []string{"UPDATE system_role SET status = 0 WHERE id = 2"}},
		{"delete the role", 104, []string{"UPDATE system_role SET deleted = 1 WHERE id = 2"}, []string{"UPDATE system_role SET deleted = 0 WHERE id = 2"}},
		{"delete the user's role link", 104, []string{"UPDATE system_user_role SET deleted = 1 WHERE user_id = 104"}, []string{"UPDATE system_user_role SET deleted = 0 WHERE user_id = 104"}},
		{"delete the role's menu link", 104, []string{"UPDATE system_role_menu SET deleted = 1 WHERE role_id = 2 AND menu_id IN " + menu}, []string{"UPDATE system_role_menu SET deleted = 0 WHERE role_id = 2 AND menu_id IN " + menu}},
		{"delete the menu", 104, []string{"UPDATE system_menu SET deleted = 1 WHERE permission = 'system:user:list'"}, []string{"UPDATE system_menu SET deleted = 0 WHERE permission = 'system:user:list'"}},
		{"disable the user", 104, []string{"UPDATE system_users SET status = 1 WHERE id = 104"}, []string{"UPDATE system_users SET status = 0 WHERE id = 104"}},
		{"disable the tenant", 104, []string{"UPDATE system_tenant SET status = 1 WHERE id = 1"}, []string{"UPDATE system_tenant SET status = 0 WHERE id = 1"}},
		{"the tenant expires", 104, []string{"UPDATE system_tenant SET expire_time = '2020-01-01 00:00:00' WHERE id = 1"}, []string{"UPDATE system_tenant SET expire_time = '2099-02-19 17:14:16' WHERE id = 1"}},
		// User 1 holds super_admin and common: without super_admin, it
		// holds common's strings only.
		{"disable super_admin", 1, []string{"UPDATE system_role SET status = 1 WHERE id = 1", "UPDATE system_role_menu SET deleted = 1 WHERE role_id = 2 AND menu_id IN " + menu},
			[]string{"UPDATE system_role SET status = 0 WHERE id = 1", "UPDATE system_role_menu SET deleted = 0 WHERE role_id = 2 AND menu_id IN " + menu}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st.change(t, tt.user, tt.do, tt.undo, false)
		})
	}
	// A disabled menu still grants: yudao does not consult a menu's
	// status when it checks a permission.
	exec(t, st.db, "UPDATE system_menu SET status = 1 WHERE permission = 'system:user:list'")
	st.advance(st.ttl)
	if !st.allowed(t, 104, st.subject) {
		t.Error("a disabled menu stopped granting, which yudao does not do")
	}
}
