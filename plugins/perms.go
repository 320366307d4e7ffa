package plugins

import (
	"fmt"
	"regexp"
	"strings"
)

// AllPerms is RuoYi's Constants.ALL_PERMISSION: who holds it holds every
// permission string (RuoYi's administrator, user 1).
const AllPerms = "*:*:*"

// Limits on a plugin's or an agent's perms: what the perms columns hold
// (MaxPerms strings of MaxPermChars, comma-separated), and RuoYi's own
// sys_menu.perms width.
const (
	MaxPerms     = 20
	MaxPermChars = 100
)

// permPattern is RuoYi's permission string as its menus and
// @ss.hasPermi('system:user:list') write it: two or more segments of
// letters, digits, _ and -, separated by colons (ruoyi-vue-pro's strings
// have up to five: im:manager:message:private:list).
var permPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(:[A-Za-z0-9_-]+)+$`)

// CheckPerm reports why s is not a permission string a plugin may need,
// nil when it is one: RuoYi's form, or AllPerms. RuoYi matches strings
// exactly, so a segment "*" elsewhere (system:user:*) would match only a
// user holding that very string: it is refused rather than read as a
// wildcard RuoYi never applies.
func CheckPerm(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty: expected a RuoYi permission string such as system:user:list")
	case len(s) > MaxPermChars:
		return fmt.Errorf("%d bytes: at most %d", len(s), MaxPermChars)
	case s == AllPerms:
		return nil
	case strings.Contains(s, "*"):
		return fmt.Errorf("%q: RuoYi matches permission strings exactly, so a partial wildcard grants nothing; name the exact string, or %s (the administrator's)", s, AllPerms)
	case !permPattern.MatchString(s):
		return fmt.Errorf("%q: expected a RuoYi permission string, segments of letters, digits, _ and - separated by colons (system:user:list)", s)
	}
	return nil
}

// CheckPerms checks a list of permission strings given as field (perms
// of a plugin or an agent): each in RuoYi's form, none twice, at most
// MaxPerms. Each problem names its item (perms[2]).
func CheckPerms(field string, perms []string) []FieldError {
	var errs []FieldError
	if len(perms) > MaxPerms {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("%d permission strings: at most %d", len(perms), MaxPerms)})
	}
	seen := make(map[string]bool, len(perms))
	for i, s := range perms {
		item := fmt.Sprintf("%s[%d]", field, i)
		if err := CheckPerm(s); err != nil {
			errs = append(errs, FieldError{Field: item, Message: err.Error()})
		} else if seen[s] {
			errs = append(errs, FieldError{Field: item, Message: fmt.Sprintf("%q is listed twice", s)})
		}
		seen[s] = true
	}
	return errs
}

// JoinPerms is the perms column of a list: comma-separated, as RuoYi's
// sys_menu.perms; nil for none.
func JoinPerms(perms []string) *string {
	if len(perms) == 0 {
		return nil
	}
	s := strings.Join(perms, ",")
	return &s
}

// SplitPerms reads a perms column: comma-separated strings, each
// trimmed (an administrator's SQL may write "a:b:c, d:e:f"), each
// checked; nil or blank is none. A string CheckPerm refuses is an error:
// the caller leaves the plugin out rather than guess.
func SplitPerms(col *string) ([]string, error) {
	if col == nil || strings.TrimSpace(*col) == "" {
		return nil, nil
	}
	var perms []string
	for p := range strings.SplitSeq(*col, ",") {
		p = strings.TrimSpace(p)
		if err := CheckPerm(p); err != nil {
			return nil, fmt.Errorf("perms: %w", err)
		}
		perms = append(perms, p)
	}
	return perms, nil
}
