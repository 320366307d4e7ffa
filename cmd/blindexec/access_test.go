package main

import (
	"strings"
	"testing"
)

// TestAccessSettings: who may use which tool is read and checked as every
// setting is (issue 46): a value out of its set, a query that is not one
// SELECT with one parameter, or a query without BLINDEXEC_PERMISSIONS=query
// (or that source without one) stops the program naming the variable.
func TestAccessSettings(t *testing.T) {
	c := newCLI(t)
	for _, tt := range []struct {
		env  map[string]string
		says string // "" runs
	}{
		{map[string]string{"BLINDEXEC_TOOL_ACCESS": "perms", "BLINDEXEC_PERMISSIONS": "ruoyi", "BLINDEXEC_PERMISSIONS_TTL_MS": "30000"}, ""},
		{map[string]string{"BLINDEXEC_PERMISSIONS": "query", "BLINDEXEC_PERMISSIONS_QUERY": "SELECT perm FROM my_perms WHERE user_id = ?"}, ""},
		{map[string]string{"BLINDEXEC_TOOL_ACCESS": "closed"}, "BLINDEXEC_TOOL_ACCESS"},
		{map[string]string{"BLINDEXEC_PERMISSIONS": "ldap"}, "BLINDEXEC_PERMISSIONS"},
		{map[string]string{"BLINDEXEC_PERMISSIONS": "query"}, "BLINDEXEC_PERMISSIONS_QUERY"},
		{map[string]string{"BLINDEXEC_PERMISSIONS_QUERY": "SELECT perm FROM my_perms WHERE user_id = ?"}, "BLINDEXEC_PERMISSIONS_QUERY"},
		{map[string]string{"BLINDEXEC_PERMISSIONS": "query", "BLINDEXEC_PERMISSIONS_QUERY": "DELETE FROM sys_user WHERE user_id = ?"}, "BLINDEXEC_PERMISSIONS_QUERY"},
		{map[string]string{"BLINDEXEC_PERMISSIONS_TTL_MS": "1m"}, "BLINDEXEC_PERMISSIONS_TTL_MS"},
		{map[string]string{"BLINDEXEC_PERMISSIONS": "query", "BLINDEXEC_PERMISSIONS_QUERY": "SELECT perm FROM my_perms WHERE user_id = ?",
			"BLINDEXEC_PERMISSIONS_DIGEST_QUERY": "SELECT MAX(version) FROM my_perms_version"}, ""},
		{map[string]string{"BLINDEXEC_PERMISSIONS": "ruoyi", "BLINDEXEC_PERMISSIONS_DIGEST_QUERY": "SELECT MAX(version) FROM my_perms_version"}, "BLINDEXEC_PERMISSIONS_DIGEST_QUERY"},
		{map[string]string{"BLINDEXEC_PERMISSIONS": "query", "BLINDEXEC_PERMISSIONS_QUERY": "SELECT perm FROM my_perms WHERE user_id = ?",
			"BLINDEXEC_PERMISSIONS_DIGEST_QUERY": "SELECT version FROM my_perms_version WHERE user_id = ?"}, "BLINDEXEC_PERMISSIONS_DIGEST_QUERY"},
	} {
		for _, name := range []string{"BLINDEXEC_TOOL_ACCESS", "BLINDEXEC_PERMISSIONS", "BLINDEXEC_PERMISSIONS_QUERY", "BLINDEXEC_PERMISSIONS_DIGEST_QUERY", "BLINDEXEC_PERMISSIONS_TTL_MS"} {
			t.Setenv(name, tt.env[name])
		}
		code, _, errs := c.run("", "plugin", "list")
		if tt.says == "" && code != 0 || tt.says != "" && (code == 0 || !strings.Contains(errs, tt.says)) {
			t.Errorf("%v: exit %d %q, want it to say %q", tt.env, code, errs, tt.says)
		}
	}
}
