package access

import (
	"database/sql"
	"fmt"
	"time"
)

// Settings are the rule's environment: BLINDEXEC_TOOL_ACCESS,
// BLINDEXEC_PERMISSIONS (and _QUERY), BLINDEXEC_PERMISSIONS_TTL_MS.
type Settings struct {
	Mode   Mode
	Source string
	Query  string
	// DigestQuery is SourceQuery's optional digest (DigestedQuery).
	DigestQuery string
	TTL         time.Duration
}

// New is the Checker of s, its database source reading db (the engine's
// database, where RuoYi's tables live) through a Cache of s.TTL. A zero
// Settings is ModeOpen and SourceNone: the engine as before issue 46.
func New(db *sql.DB, s Settings) (*Checker, error) {
	c := &Checker{Mode: s.Mode, Name: s.Source}
	switch s.Mode {
	case "", ModeOpen, ModePerms:
	default:
		return nil, fmt.Errorf("%s: %q is neither %q nor %q", EnvToolAccess, s.Mode, ModeOpen, ModePerms)
	}
	if s.Source != SourceQuery && s.Query != "" {
		return nil, fmt.Errorf("%s is set but %s is %q, not %q", EnvPermissionsQuery, EnvPermissions, s.Source, SourceQuery)
	}
	if s.Source != SourceQuery && s.DigestQuery != "" {
		return nil, fmt.Errorf("%s is set but %s is %q, not %q", EnvPermissionsDigestQuery, EnvPermissions, s.Source, SourceQuery)
	}
	var src Source
	switch s.Source {
	case "", SourceNone:
		c.Name = SourceNone
		return c, nil
	case SourceRuoYi:
		src = RuoYi{DB: db}
		c.Directory = RuoYi{DB: db}
	case SourceYudao:
		src = Yudao{DB: db}
	case SourceQuery:
		if err := CheckQuery(s.Query); err != nil {
			return nil, err
		}
		src = Query{DB: db, SQL: s.Query}
		if s.DigestQuery != "" {
			if err := CheckDigestQuery(s.DigestQuery); err != nil {
				return nil, err
			}
			src = DigestedQuery{Query: Query{DB: db, SQL: s.Query}, Digest: s.DigestQuery}
		}
	default:
		return nil, fmt.Errorf("%s: %q is not a source (expected %s, %s, %s or %s)", EnvPermissions, s.Source, SourceRuoYi, SourceYudao, SourceQuery, SourceNone)
	}
	if s.TTL < 0 {
		return nil, fmt.Errorf("%s: %v is negative", EnvPermissionsTTL, s.TTL)
	}
	c.Source = NewCache(src, s.TTL)
	return c, nil
}
