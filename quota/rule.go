// Package quota holds the operator's quota rules ("user 7 may call refund
// 20 times a day", "write tools at most 10 a minute per user", "200,000
// run tokens a day") and counts calls against them across replicas
// without a database round trip per call.
//
// # Leases
//
// The allowance of a rule's window for a user lives in one row of
// sys_ai_quota_use: used is what replicas have leased so far. A replica
// takes a lease of max(1, limit/100) units at a time with one locked
// read-and-write (never past the limit: together the replicas never lease
// more than the limit, so nothing ever overshoots) and spends it in
// memory, one unit per call sent. A lease left unspent for IdleReturn, or
// when its replica shuts down, is given back, so a user whose calls land
// on another replica loses nothing; a replica that crashes loses at most
// the lease it held (1% of the limit, at least one call). At most 100
// leases are taken of a window (plus one per give-back): at 2,000 calls/s
// of one user and rule the database sees 2,000×100/limit writes per
// second while the window has allowance, none once it is spent (a replica
// that found none left asks again at most once a second, with a read).
//
// During a database outage a replica spends what it holds, then refuses:
// quotas are no exception the outage grace period may lift.
package quota

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// Windows of a call rule.
const (
	Minute = "minute"
	Hour   = "hour"
	Day    = "day"
)

// Rule is one quota rule as the API reads and writes it. A call rule has
// Calls and Window and applies to the tools named in Plugins, or tagged
// with one of Tags, or Consequential ones, or (none of them) every tool. A
// run rule has RunTokensPerDay alone. UserID nil applies the rule to every
// user, each on their own.
type Rule struct {
	ID              int64    `json:"rule_id,omitempty"`
	Name            string   `json:"name"`
	UserID          *int64   `json:"user_id,omitempty"`
	Plugins         []string `json:"plugins,omitempty"`
	Tags            []string `json:"tags,omitempty"`
	Consequential   bool     `json:"consequential,omitempty"`
	Calls           int64    `json:"calls,omitempty"`
	Window          string   `json:"window,omitempty"`
	RunTokensPerDay int64    `json:"run_tokens_per_day,omitempty"`
}

var ruleName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// FieldError is a rule field that is wrong, and what was expected.
type FieldError struct{ Field, Message string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Validate reports the first field of r that is wrong.
func (r *Rule) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if !ruleName.MatchString(r.Name) {
		return bad("name", "%q: expected 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit", r.Name)
	}
	if r.UserID != nil && *r.UserID < 0 {
		return bad("user_id", "expected a user id (0 for calls naming no user), or omitted for every user each on their own")
	}
	selectors := 0
	for _, n := range []int{len(r.Plugins), len(r.Tags)} {
		if n > 0 {
			selectors++
		}
	}
	if r.Consequential {
		selectors++
	}
	if r.RunTokensPerDay != 0 {
		if r.RunTokensPerDay < 0 {
			return bad("run_tokens_per_day", "expected a positive number of model tokens")
		}
		if r.Calls != 0 || r.Window != "" || selectors > 0 {
			return bad("run_tokens_per_day", "a run rule takes name, user_id and run_tokens_per_day only (calls, window, plugins, tags and consequential are for call rules)")
		}
		return nil
	}
	if r.Calls <= 0 {
		return bad("calls", "expected a positive number of calls (or run_tokens_per_day for a run rule)")
	}
	switch r.Window {
	case Minute, Hour, Day:
	default:
		return bad("window", "%q: expected minute, hour or day", r.Window)
	}
	if selectors > 1 {
		return bad("plugins", "give one of plugins, tags and consequential, or none of them for every tool")
	}
	for i, p := range r.Plugins {
		if p == "" {
			return bad(fmt.Sprintf("plugins[%d]", i), "expected a tool name")
		}
	}
	for i, t := range r.Tags {
		if t == "" {
			return bad(fmt.Sprintf("tags[%d]", i), "expected a tag")
		}
	}
	return nil
}

// Row converts a valid rule into its row.
func (r *Rule) Row() *store.QuotaRule {
	row := &store.QuotaRule{ID: r.ID, Name: r.Name, UserID: r.UserID, Consequential: "0", Window: r.Window}
	if len(r.Plugins) > 0 {
		row.Plugins, _ = json.Marshal(r.Plugins)
	}
	if len(r.Tags) > 0 {
		row.Tags, _ = json.Marshal(r.Tags)
	}
	if r.Consequential {
		row.Consequential = "1"
	}
	if r.Calls > 0 {
		row.Calls = &r.Calls
	}
	if r.RunTokensPerDay > 0 {
		row.RunTokens = &r.RunTokensPerDay
	}
	return row
}

// FromRow reads a row (RuoYi may write them with plain SQL): a row that is
// not a valid rule is an error naming it.
func FromRow(row *store.QuotaRule) (*Rule, error) {
	r := &Rule{ID: row.ID, Name: row.Name, UserID: row.UserID, Consequential: row.Consequential == "1", Window: row.Window}
	if row.Calls != nil {
		r.Calls = *row.Calls
	}
	if row.RunTokens != nil {
		r.RunTokensPerDay = *row.RunTokens
	}
	for _, f := range []struct {
		raw store.JSON
		to  *[]string
	}{{row.Plugins, &r.Plugins}, {row.Tags, &r.Tags}} {
		if len(f.raw) > 0 && string(f.raw) != "null" {
			if err := json.Unmarshal(f.raw, f.to); err != nil {
				return nil, fmt.Errorf("quota rule %q: %w", row.Name, err)
			}
		}
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("quota rule %q: %w", row.Name, err)
	}
	return r, nil
}

// Consequential reports whether a call of p changes something: the
// plugin's consequential setting (issue 33: the administrator's choice,
// else the import's suggestion, else derived from the method; an inline
// plugin is classified by the API before it gets here). The one place
// quota rules ask it.
func Consequential(p *plugins.Plugin) bool { return p.IsConsequential() }

// amount is r's limit in its unit: calls, or run tokens.
func (r *Rule) amount() int64 { return max(r.Calls, r.RunTokensPerDay) }

// window is r's window: a run rule's is the day.
func (r *Rule) window() string {
	if r.RunTokensPerDay > 0 {
		return Day
	}
	return r.Window
}

// forUser reports whether r applies to user's calls.
func (r *Rule) forUser(user int64) bool { return r.UserID == nil || *r.UserID == user }

// target is what a call is counted as: the catalog plugin it matches, or
// the plugin as the caller gave it (catalog nil).
type target struct {
	name          string
	tags          []string
	consequential bool
	inCatalog     bool
}

// matches reports whether the call rule r applies to a call of t.
func (r *Rule) matches(t *target) bool {
	switch {
	case len(r.Plugins) > 0:
		return t.inCatalog && slices.Contains(r.Plugins, t.name)
	case len(r.Tags) > 0:
		return t.inCatalog && slices.ContainsFunc(r.Tags, func(tag string) bool { return slices.Contains(t.tags, tag) })
	case r.Consequential:
		return t.consequential
	}
	return true
}

// what says what a rule limits, for a refusal: "refund", "tools tagged
// orders", "consequential tools", "all tools".
func (r *Rule) what(t *target) string {
	switch {
	case len(r.Plugins) > 0:
		return t.name
	case len(r.Tags) > 0:
		return "tools tagged " + strings.Join(r.Tags, " or ")
	case r.Consequential:
		return "consequential tools"
	}
	return "all tools"
}

// AppliesTo says what r applies to, for listings.
func (r *Rule) AppliesTo() string {
	switch {
	case r.RunTokensPerDay > 0:
		return "runs"
	case len(r.Plugins) > 0:
		return strings.Join(r.Plugins, ", ")
	}
	return r.what(&target{})
}

// Limit says r's limit: "20 calls a day", "200000 run tokens a day".
func (r *Rule) Limit() string {
	if r.RunTokensPerDay > 0 {
		return fmt.Sprintf("%d run tokens a day", r.RunTokensPerDay)
	}
	return fmt.Sprintf("%d calls %s", r.Calls, Per(r.Window))
}

// Per says a window as a rate: "a day", "an hour".
func Per(window string) string {
	if window == Hour {
		return "an hour"
	}
	return "a " + window
}

// WindowOf returns the window of kind w holding t, aligned in loc: its
// start and its end (the reset).
func WindowOf(t time.Time, w string, loc *time.Location) (start, end time.Time) {
	t = t.In(loc)
	y, mo, d := t.Date()
	switch w {
	case Minute:
		start = time.Date(y, mo, d, t.Hour(), t.Minute(), 0, 0, loc)
		return start, start.Add(time.Minute)
	case Hour:
		start = time.Date(y, mo, d, t.Hour(), 0, 0, 0, loc)
		return start, time.Date(y, mo, d, t.Hour()+1, 0, 0, 0, loc)
	}
	return time.Date(y, mo, d, 0, 0, 0, 0, loc), time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
}

// ExceededError refuses a call over a rule: nothing was sent.
type ExceededError struct {
	Rule     string
	Calls    int64
	Window   string
	What     string
	ResetsAt time.Time // in the quota time zone
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("limit reached: %d calls %s for %s, resets at %s", e.Calls, Per(e.Window), e.What, e.ResetsAt.Format(time.RFC3339))
}

// UnavailableError refuses a call when the database holding the quotas
// cannot be reached and this replica holds none of the allowance left.
type UnavailableError struct {
	Rule string
	Err  error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("the quota %q cannot be checked (the database is unreachable) and this replica holds none of its allowance: retry later", e.Rule)
}

func (e *UnavailableError) Unwrap() error { return e.Err }
