package plugins

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestCheckPerm(t *testing.T) {
	for _, tt := range []struct {
		perm string
		ok   bool
	}{
		{"system:user:list", true},
		{"monitor:job:changeStatus", true},
		{"im:manager:message:private:list", true}, // ruoyi-vue-pro's five segments
		{"infra:api-access-log:export", true},
		{"tool:gen_code:preview", true},
		{"a:b", true},
		{AllPerms, true},
		{"", false},
		{"system", false},                       // one segment
		{"system:user:", false},                 // an empty segment
		{":user:list", false},                   // an empty segment
		{"system::list", false},                 // an empty segment
		{"system:user:*", false},                // partial wildcard
		{"*:*", false},                          // not RuoYi's all
		{"*", false},                            // not RuoYi's all
		{" system:user:list", false},            // spaces
		{"system:user:list,a:b", false},         // two strings in one
		{"system:用户:list", false},               // outside RuoYi's characters
		{"system.user.list", false},             // Shiro's dots are not RuoYi's form
		{strings.Repeat("a:", 50) + "b", false}, // longer than sys_menu.perms
	} {
		if err := CheckPerm(tt.perm); (err == nil) != tt.ok {
			t.Errorf("CheckPerm(%q) = %v, want ok=%v", tt.perm, err, tt.ok)
		}
	}
}

func TestCheckPermsNamesItems(t *testing.T) {
	many := make([]string, MaxPerms+1)
	for i := range many {
		many[i] = fmt.Sprintf("p:%d", i)
	}
	for _, tt := range []struct {
		name  string
		perms []string
		want  []string
	}{
		{"none", nil, nil},
		{"good", []string{"system:user:list", AllPerms}, nil},
		{"bad and twice", []string{"a:b", "x", "a:b"}, []string{"perms[1]", "perms[2]"}},
		{"too many", many, []string{"perms"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var fields []string
			for _, e := range CheckPerms("perms", tt.perms) {
				fields = append(fields, e.Field)
			}
			if !slices.Equal(fields, tt.want) {
				t.Errorf("fields %v, want %v", fields, tt.want)
			}
		})
	}
}

func TestPermsColumn(t *testing.T) {
	col := func(s string) *string { return &s }
	for _, tt := range []struct {
		col     *string
		want    []string
		wantErr bool
	}{
		{nil, nil, false},
		{col(""), nil, false},
		{col("  "), nil, false},
		{col("system:user:list"), []string{"system:user:list"}, false},
		{col("system:user:list, system:user:add"), []string{"system:user:list", "system:user:add"}, false},
		{col("system:user:list,,a:b"), nil, true},
		{col("system:user:*"), nil, true},
	} {
		got, err := SplitPerms(tt.col)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("SplitPerms(%v) = %v, %v; want %v (error %v)", tt.col, got, err, tt.want, tt.wantErr)
		}
	}
	if JoinPerms(nil) != nil {
		t.Error("JoinPerms(nil) is not NULL")
	}
}

// FuzzCheckPerm: a string CheckPerm accepts is one whole permission
// string — no comma, no space, within the column's width — and survives
// the perms column's round trip alone and beside another.
func FuzzCheckPerm(f *testing.F) {
	for _, s := range []string{"system:user:list", AllPerms, "a:b", "system:user:*", " a:b", "a:b,c:d", "", "：", "a:\u00e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckPerm(s) != nil {
			return
		}
		if strings.ContainsAny(s, ", \t\r\n") || len(s) > MaxPermChars || !strings.Contains(s, ":") {
			t.Fatalf("CheckPerm accepted %q", s)
		}
		if strings.Contains(s, "*") && s != AllPerms {
			t.Fatalf("CheckPerm accepted the partial wildcard %q", s)
		}
		got, err := SplitPerms(JoinPerms([]string{s, "system:user:list"}))
		if err != nil || !slices.Equal(got, []string{s, "system:user:list"}) {
			t.Fatalf("column round trip of %q: %v, %v", s, got, err)
		}
	})
}
