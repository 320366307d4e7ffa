package access

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"time"

	"github.com/blindexec/blindexec/plugins"
)

// Names of the database sources (BLINDEXEC_PERMISSIONS).
const (
	SourceNone  = "none"
	SourceRuoYi = "ruoyi"
	SourceYudao = "yudao"
	SourceQuery = "query"
)

// ruoyiUser reads whether RuoYi would log the user in at all: it
// refuses a deleted user (del_flag '2') and a disabled one (status '1')
// (UserDetailsServiceImpl.loadUserByUsername). del_flag is checked '0',
// so that a value RuoYi never writes denies rather than grants.
const ruoyiUser = `SELECT user_id FROM sys_user WHERE user_id = ? AND status = '0' AND del_flag = '0'`

// ruoyiMenus is SysMenuMapper.selectMenuPermsByRoleId over the roles
// SysPermissionService.getMenuPermission counts: the user's roles that
// are enabled (status '0'), not deleted, and not the administrator's
// role 1 (SysRole.isAdmin, skipped there), then their enabled menus.
const ruoyiMenus = `SELECT m.perms FROM sys_user_role ur
  JOIN sys_role r ON r.role_id = ur.role_id
  JOIN sys_role_menu rm ON rm.role_id = r.role_id
  JOIN sys_menu m ON m.menu_id = rm.menu_id
 WHERE ur.user_id = ? AND r.status = '0' AND r.del_flag = '0' AND r.role_id <> 1
   AND m.status = '0' AND m.perms IS NOT NULL AND m.perms <> ''`

// RuoYi reads RuoYi-Vue's own tables in the engine's database as
// SysPermissionService.getMenuPermission computes a user's permissions
// at login: a user RuoYi would not log in (missing, disabled, deleted)
// holds nothing; user 1 (SysUser.isAdmin) holds AllPerms; any other user
// holds the perms of the enabled menus of its enabled, undeleted roles
// other than role 1, reached through sys_user_role and sys_role_menu, a
// cell holding several strings separated by commas (RuoYi's
// perm.trim().split(","), whose parts it does not trim: neither does this).
type RuoYi struct{ DB *sql.DB }

// Held reads user's strings: two queries.
func (s RuoYi) Held(ctx context.Context, user int64) (Held, error) {
	var id int64
	switch err := s.DB.QueryRowContext(ctx, ruoyiUser, user).Scan(&id); {
	case errors.Is(err, sql.ErrNoRows):
		return NotUser(), nil
	case err != nil:
		return nil, fmt.Errorf("read sys_user: %w", err)
	case id == 1:
		return HeldOf(plugins.AllPerms), nil
	}
	held := Held{}
	err := scanStrings(ctx, s.DB, ruoyiMenus, 0, func(cell string) {
		for p := range strings.SplitSeq(strings.TrimSpace(cell), ",") {
			held[p] = struct{}{}
		}
	}, user)
	if err != nil {
		return nil, fmt.Errorf("read the menus of sys_user %d: %w", user, err)
	}
	return held, nil
}

// yudaoRoles lists the codes and menu permissions of a ruoyi-vue-pro
// user's roles, by its rules (PermissionServiceImpl.hasAnyPermissions,
// RoleServiceImpl.hasAnySuperAdmin, TenantServiceImpl.validTenant):
//   - the user exists, is enabled (status 0) and not deleted (deleted
//     0: MyBatis-Plus's logical delete, which every yudao query applies);
//   - its tenant exists, is enabled, not deleted and not expired (yudao
//     checks the tenant of every request, TenantSecurityWebFilter): a
//     deployment with yudao.tenant.enable=false has no tenant rows and
//     so grants nothing here;
//   - its roles (system_user_role rows not deleted) that are enabled
//     (getEnableUserRoleListByUserIdFromCache), not deleted and of its
//     tenant;
//   - their menus through system_role_menu rows not deleted and of the
//     tenant, the menu not deleted: yudao does not consult a menu's
//     status when it checks a permission (getMenuIdListByPermission), so
//     neither does this. A role without menus still counts (LEFT JOIN),
//     for its code; a user without roles still has a row (LEFT JOIN):
//     no row at all is a user yudao would not log in (NotUser).
const yudaoRoles = `SELECT r.code, m.permission FROM system_users u
  JOIN system_tenant t ON t.id = u.tenant_id AND t.status = 0 AND t.deleted = 0 AND t.expire_time > CURRENT_TIMESTAMP
  LEFT JOIN system_user_role ur ON ur.user_id = u.id AND ur.deleted = 0 AND ur.tenant_id = u.tenant_id
  LEFT JOIN system_role r ON r.id = ur.role_id AND r.status = 0 AND r.deleted = 0 AND r.tenant_id = u.tenant_id
  LEFT JOIN system_role_menu rm ON rm.role_id = r.id AND rm.deleted = 0 AND rm.tenant_id = u.tenant_id
  LEFT JOIN system_menu m ON m.id = rm.menu_id AND m.deleted = 0
 WHERE u.id = ? AND u.status = 0 AND u.deleted = 0`

// yudaoSuperAdmin is RoleCodeEnum.SUPER_ADMIN: an enabled role of that
// code holds every permission (hasAnySuperAdmin).
const yudaoSuperAdmin = "super_admin"

// Yudao reads ruoyi-vue-pro's (yudao's) system_* tables in the engine's
// database, by that project's rules (see yudaoRoles): a user holding an
// enabled role coded super_admin holds AllPerms; any other user holds the
// permission column of the menus of its enabled roles, each cell one
// whole string (yudao compares the column to the string checked, without
// splitting).
type Yudao struct{ DB *sql.DB }

// Held reads user's strings: one query.
func (s Yudao) Held(ctx context.Context, user int64) (Held, error) {
	held, none := Held{}, true
	rows, err := s.DB.QueryContext(ctx, yudaoRoles, user)
	if err != nil {
		return nil, fmt.Errorf("read the roles of system_users %d: %w", user, err)
	}
	defer rows.Close()
	for rows.Next() {
		none = false
		var code, perm sql.NullString
		if err := rows.Scan(&code, &perm); err != nil {
			return nil, fmt.Errorf("read the roles of system_users %d: %w", user, err)
		}
		if code.String == yudaoSuperAdmin {
			return HeldOf(plugins.AllPerms), nil
		}
		if perm.String != "" {
			held[perm.String] = struct{}{}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the roles of system_users %d: %w", user, err)
	}
	if none {
		return NotUser(), nil
	}
	return held, nil
}

// Fingerprinter is a Source whose tables can be summed: a digest that
// moves whenever a string it grants anyone may have (store.Watcher.Grants
// reads it at each poll), on MySQL-compatible databases and SQLite.
type Fingerprinter interface {
	Fingerprint(ctx context.Context) (int64, error)
}

// grantTable is a table a source reads and the columns of it that
// decide what it grants.
type grantTable struct{ name, cols string }

// ruoyiTables are what RuoYi's queries (ruoyiUser, ruoyiMenus) read.
var ruoyiTables = []grantTable{
	{"sys_user", "user_id, status, del_flag"}, {"sys_user_role", "user_id, role_id"},
	{"sys_role", "role_id, status, del_flag"}, {"sys_role_menu", "role_id, menu_id"},
	{"sys_menu", "menu_id, perms, status"},
}

// yudaoTables are what yudaoRoles reads (a tenant's expiry, which time
// alone passes, is seen at the TTL's end).
var yudaoTables = []grantTable{
	{"system_users", "id, tenant_id, status, deleted"}, {"system_tenant", "id, status, deleted, expire_time"},
	{"system_user_role", "user_id, role_id, tenant_id, deleted"}, {"system_role", "id, code, status, deleted, tenant_id"},
	{"system_role_menu", "role_id, menu_id, tenant_id, deleted"}, {"system_menu", "id, permission, deleted"},
}

// fingerprint sums tables in one statement: each one's row count and
// two sums of its rows' CRC32s, of the row's columns and of them with a
// mark after (the sum of a second checksum: SQLite has no BIT_XOR),
// hashed to one number. CRC32 is MySQL's; the store registers it on
// SQLite. CHAR(31) parts the columns and CHAR(30) is NULL, on both.
func fingerprint(ctx context.Context, db *sql.DB, tables []grantTable) (int64, error) {
	parts := make([]string, len(tables))
	for i, t := range tables {
		var cols []string
		for c := range strings.SplitSeq(t.cols, ",") {
			cols = append(cols, "IFNULL("+strings.TrimSpace(c)+", CHAR(30))")
		}
		row := "CONCAT_WS(CHAR(31), " + strings.Join(cols, ", ")
		parts[i] = "(SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(CRC32(" + row + "))), 0), ':', COALESCE(SUM(CRC32(" + row + ", CHAR(29)))), 0)) FROM " + t.name + ")"
	}
	var sum string
	if err := db.QueryRowContext(ctx, "SELECT CONCAT_WS('/', "+strings.Join(parts, ", ")+")").Scan(&sum); err != nil {
		return 0, fmt.Errorf("fingerprint the grants' tables: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte(sum))
	return int64(h.Sum64()), nil
}

// Fingerprint implements Fingerprinter.
func (s RuoYi) Fingerprint(ctx context.Context) (int64, error) {
	return fingerprint(ctx, s.DB, ruoyiTables)
}

// Fingerprint implements Fingerprinter.
func (s Yudao) Fingerprint(ctx context.Context) (int64, error) {
	return fingerprint(ctx, s.DB, yudaoTables)
}

// Default limits of the operator's query.
const (
	// DefaultQueryTimeout bounds one run of the query.
	DefaultQueryTimeout = 2 * time.Second
	// DefaultMaxQueryRows is the most strings the query may return: more
	// is an error (the call is refused), not a part taken.
	DefaultMaxQueryRows = 10_000
)

// queryShape is what CheckQuery accepts: one SELECT (or WITH ... SELECT)
// statement, a trailing semicolon at most.
var queryShape = regexp.MustCompile(`(?is)^\s*(select|with)\s[^;]*;?\s*$`)

// CheckQuery says why q is not a query the Query source runs: one SELECT
// statement with exactly one parameter (?), the user id.
func CheckQuery(q string) error {
	return checkSelect(q, EnvPermissionsQuery, "SELECT perm FROM my_user_perms WHERE user_id = ?", 1, "exactly one ? (the user id)")
}

// checkSelect says why q, the setting env, is not one SELECT statement
// with params parameters (want says how many, for the error).
func checkSelect(q, env, example string, params int, want string) error {
	if !queryShape.MatchString(q) {
		return fmt.Errorf("%s: expected one SELECT statement (no ;-separated statements), such as %s", env, example)
	}
	if n := strings.Count(q, "?"); n != params {
		return fmt.Errorf("%s: expected %s, found %d", env, want, n)
	}
	return nil
}

// Query runs the operator's SELECT (BLINDEXEC_PERMISSIONS_QUERY, checked
// by CheckQuery) with the user id, reading one column of strings, one a
// row (spaces around it trimmed, NULL and blank rows skipped): in a
// read-only transaction, within Timeout, at most MaxRows rows.
type Query struct {
	DB  *sql.DB
	SQL string
	// Timeout and MaxRows bound a run; zero is DefaultQueryTimeout and
	// DefaultMaxQueryRows.
	Timeout time.Duration
	MaxRows int
}

// Held runs the query for user.
func (s Query) Held(ctx context.Context, user int64) (Held, error) {
	held := Held{}
	err := s.run(ctx, s.SQL, func(v string) {
		if v = strings.TrimSpace(v); v != "" && !strings.ContainsRune(v, 0) { // no string of RuoYi's form holds one: never NotUser's
			held[v] = struct{}{}
		}
	}, user)
	if err != nil {
		return nil, fmt.Errorf("%s for user %d: %w", EnvPermissionsQuery, user, err)
	}
	return held, nil
}

// run runs q with args in a read-only transaction, within Timeout, at
// most MaxRows rows, giving fn each row's one string.
func (s Query) run(ctx context.Context, q string, fn func(string), args ...any) error {
	timeout, limit := cmp.Or(s.Timeout, DefaultQueryTimeout), cmp.Or(s.MaxRows, DefaultMaxQueryRows)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tx, err := s.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin a read-only transaction: %w", err)
	}
	defer tx.Rollback()
	return scanStrings(ctx, tx, q, limit, fn, args...)
}

// DigestedQuery is a Query with the operator's digest query
// (BLINDEXEC_PERMISSIONS_DIGEST_QUERY, checked by CheckDigestQuery): the
// Fingerprinter of tables only the operator knows. A grant changed where
// the digest does not move is seen at the TTL's end, as without it.
type DigestedQuery struct {
	Query
	Digest string
}

// Fingerprint implements Fingerprinter: a hash of the digest query's
// rows, in the order it returns them.
func (s DigestedQuery) Fingerprint(ctx context.Context) (int64, error) {
	h := fnv.New64a()
	err := s.run(ctx, s.Digest, func(v string) {
		h.Write([]byte(v))
		h.Write([]byte{0})
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", EnvPermissionsDigestQuery, err)
	}
	return int64(h.Sum64()), nil
}

// CheckDigestQuery says why q is not a digest query DigestedQuery runs:
// one SELECT statement without parameters.
func CheckDigestQuery(q string) error {
	return checkSelect(q, EnvPermissionsDigestQuery, "SELECT MAX(updated_at) FROM my_user_perms", 0, "no ? (it is run for no user)")
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// scanStrings runs q with arg and hands each row's one column, NULL
// skipped, to fn; more than limit rows (when limit > 0) is an error.
func scanStrings(ctx context.Context, db querier, q string, limit int, fn func(string), args ...any) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if n++; limit > 0 && n > limit {
			return fmt.Errorf("more than %d rows", limit)
		}
		var v sql.NullString
		if err := rows.Scan(&v); err != nil {
			return err
		}
		if v.Valid {
			fn(v.String)
		}
	}
	return rows.Err()
}
