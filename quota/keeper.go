package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// Store is where rules and leases live; *store.Store implements it.
type Store interface {
	ListQuotaRules(ctx context.Context) ([]store.QuotaRule, error)
	LeaseQuota(ctx context.Context, k store.QuotaKey, limit, want int64) (granted, used int64, err error)
	ReturnQuota(ctx context.Context, k store.QuotaKey, n int64) error
	QuotaUsed(ctx context.Context, k store.QuotaKey) (int64, error)
	PruneQuotaUse(ctx context.Context, cutoff int64) error
}

// Versions tells the rules' change counter; *store.Watcher implements it.
type Versions interface {
	Current() store.Versions
}

// Catalog finds the catalog plugin of a name; *catalog.Catalog implements
// it. An inline plugin counts as the catalog plugin of its name.
type Catalog interface {
	Plugin(ctx context.Context, name string) (*plugins.Plugin, error)
}

// Settings of a Keeper.
const (
	// IdleReturn is how long a lease may sit unspent before it is given
	// back for other replicas to lease.
	IdleReturn = 2 * time.Second
	// Recheck is how long a replica that found a window spent waits
	// before it asks the database again (another replica may have given
	// some back).
	Recheck = time.Second
)

// Keeper applies the rules on one replica. It is safe for concurrent use.
type Keeper struct {
	src     Store
	changes Versions
	catalog Catalog // nil: inline plugins count as their own name
	loc     *time.Location
	logger  *slog.Logger
	// Now is the clock (time.Now when nil); tests set it.
	Now func() time.Time

	refusals *prometheus.CounterVec
	writes   atomic.Int64   // leases and give-backs written
	refills  sync.WaitGroup // top-ups under way

	mu           sync.Mutex // guards loading and reloadFailed
	loading      *reload    // the reload under way, nil when none
	reloadFailed time.Time  // when the last reload failed; zero once one succeeds
	// tidy runs one Tidy at a time, so that Tidy(all) returns only once
	// every give-back under way has landed: at shutdown, Run's and the
	// caller's run together, and the store is closed right after.
	tidy    sync.Mutex
	rules   atomic.Pointer[ruleSet]
	bmu     sync.RWMutex
	buckets map[store.QuotaKey]*bucket
}

type ruleSet struct {
	version int64
	calls   []*Rule
	wins    []atomic.Pointer[window] // the current window of each of calls
	runs    []*Rule
}

// bucket is what this replica holds of one user's window of one rule.
type bucket struct {
	mu        sync.Mutex
	held      int64     // leased, not spent
	lastUse   time.Time // of the last unit spent or given back
	spentSeen time.Time // when the database last had none left
	left      int64     // the window's allowance no replica had leased, at the last lease
	failed    *UnavailableError
	failedAt  time.Time // when the database last failed to lease
	undo      func()    // giveBack, made once
	// refilled, while a top-up is under way, is closed when it lands.
	refilled chan struct{}
}

// giveBack returns a unit spent for a call that was not sent after all.
func (b *bucket) giveBack() {
	b.mu.Lock()
	b.held++
	b.mu.Unlock()
}

// New returns a keeper of src's rules, fresh while changes' QuotaRules
// counter stays where it was when they were read. Windows are aligned in
// loc (nil: UTC).
func New(src Store, changes Versions, catalog Catalog, loc *time.Location, logger *slog.Logger) *Keeper {
	if loc == nil {
		loc = time.UTC
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Keeper{src: src, changes: changes, catalog: catalog, loc: loc, logger: logger, buckets: map[store.QuotaKey]*bucket{}}
}

// Register counts refusals in reg as blindexec_quota_refusals_total by
// rule: the operator's rule names, a bounded set (a deleted rule's series
// goes with it).
func (k *Keeper) Register(reg prometheus.Registerer) error {
	k.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "blindexec_quota_refusals_total",
		Help: "Calls refused by a quota rule, by rule.",
	}, []string{"rule"})
	return reg.Register(k.refusals)
}

// Writes is the number of database writes the leases took: leases
// granted and leases given back.
func (k *Keeper) Writes() int64 { return k.writes.Load() }

// Location is the time zone windows are aligned in.
func (k *Keeper) Location() *time.Location { return k.loc }

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// reload is a read of the rules under way, that every call needing them
// waits for rather than reading them again.
type reload struct {
	done chan struct{}
	rs   *ruleSet
	err  error
}

// ruleSet returns rules as new as the counter. When a reload fails, the
// rules held are kept; with none ever read, the error. A reload is bounded
// (store.QueryTimeout) and shared: no call waits behind another's
// unbounded query, and while reloads fail, the calls apply the rules held
// without waiting, one reload being tried again each Recheck.
func (k *Keeper) ruleSet(ctx context.Context) (*ruleSet, error) {
	want := k.changes.Current().QuotaRules
	held := k.rules.Load()
	if held != nil && held.version == want {
		return held, nil
	}
	k.mu.Lock()
	ld := k.loading
	failing := held != nil && !k.reloadFailed.IsZero()
	if ld == nil && (!failing || k.now().Sub(k.reloadFailed) >= Recheck) {
		ld = &reload{done: make(chan struct{})}
		k.loading = ld
		// Not the call's cancellation: the rules read are every call's.
		go k.reload(context.WithoutCancel(ctx), ld, want)
	}
	k.mu.Unlock()
	if failing {
		return held, nil
	}
	select {
	case <-ld.done:
		return ld.rs, ld.err
	case <-ctx.Done():
		if held != nil {
			return held, nil
		}
		return nil, fmt.Errorf("read quota rules: %w", context.Cause(ctx))
	}
}

// reload reads the rules of version want into ld.
func (k *Keeper) reload(ctx context.Context, ld *reload, want int64) {
	ctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	defer cancel()
	rows, err := k.src.ListQuotaRules(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	defer close(ld.done)
	k.loading = nil
	held := k.rules.Load()
	if err != nil {
		if held == nil {
			ld.err = fmt.Errorf("read quota rules: %w", err)
			return
		}
		if k.reloadFailed.IsZero() {
			k.logger.WarnContext(ctx, "quota rules reload failed; applying the last ones read", "err", err)
		}
		k.reloadFailed, ld.rs = k.now(), held
		return
	}
	k.reloadFailed = time.Time{}
	rs := &ruleSet{version: want}
	for i := range rows {
		r, err := FromRow(&rows[i])
		if err != nil {
			k.logger.WarnContext(ctx, "quota rule row left out", "rule", rows[i].Name, "err", err)
			continue
		}
		if r.RunTokensPerDay > 0 {
			rs.runs = append(rs.runs, r)
		} else {
			rs.calls = append(rs.calls, r)
		}
	}
	if held != nil && k.refusals != nil {
		for _, r := range append(held.calls, held.runs...) {
			if !rs.has(r.Name) {
				k.refusals.DeleteLabelValues(r.Name)
			}
		}
	}
	rs.wins = make([]atomic.Pointer[window], len(rs.calls))
	k.rules.Store(rs)
	ld.rs = rs
}

func (rs *ruleSet) has(name string) bool {
	for _, r := range append(rs.calls, rs.runs...) {
		if r.Name == name {
			return true
		}
	}
	return false
}

// Rules returns the rules in force.
func (k *Keeper) Rules(ctx context.Context) ([]*Rule, error) {
	rs, err := k.ruleSet(ctx)
	if err != nil {
		return nil, err
	}
	return append(append([]*Rule(nil), rs.calls...), rs.runs...), nil
}

// targetOf is what a call of p counts as: a catalog row (its ID set)
// as itself — its name, tags and classification, whichever route made
// the call (issue 44 point 3: never a name a route rebuilt); an inline
// plugin the executor did not bind to a row as the catalog plugin of its
// name (plugin and tag rules apply: a caller's own copy never counts
// less), or, under a name the catalog lacks, as no named tool (every-tool
// and consequential rules only).
func (k *Keeper) targetOf(ctx context.Context, p *plugins.Plugin) target {
	t := target{name: p.Name, tags: p.Tags, consequential: Consequential(p), inCatalog: p.ID != 0}
	if p.ID != 0 || k.catalog == nil {
		return t
	}
	if row, err := k.catalog.Plugin(ctx, p.Name); err == nil {
		t.tags, t.inCatalog = row.Tags, true
		t.consequential = t.consequential || Consequential(row)
	}
	return t
}

// Take counts one call of p by user against every call rule that applies,
// before it is sent: all admit it, or none counts it and the error is an
// *ExceededError (or an *UnavailableError). undo gives the call back when
// nothing was sent after all.
func (k *Keeper) Take(ctx context.Context, user int64, p *plugins.Plugin) (undo func(), err error) {
	rs, err := k.ruleSet(ctx)
	if err != nil {
		return nil, &UnavailableError{Rule: "(rules)", Err: err}
	}
	if len(rs.calls) == 0 {
		return noop, nil
	}
	var (
		t      target
		looked bool
		buf    [4]*bucket
		taken  = buf[:0] // on the stack: the common case takes one
		now    = k.now()
	)
	for i, r := range rs.calls {
		if !r.forUser(user) {
			continue
		}
		if !looked {
			t, looked = k.targetOf(ctx, p), true
		}
		if !r.matches(&t) {
			continue
		}
		w := rs.window(i, now, k.loc)
		key := store.QuotaKey{Rule: r.ID, User: user, WindowStart: w.start}
		b := k.bucket(key)
		if err := k.spend(ctx, b, key, r, now); err != nil {
			for _, b := range taken {
				b.giveBack()
			}
			if errors.Is(err, errSpent) {
				err = &ExceededError{Rule: r.Name, Calls: r.Calls, Window: r.Window, What: r.what(&t), ResetsAt: w.end}
			}
			if k.refusals != nil {
				k.refusals.WithLabelValues(r.Name).Inc()
			}
			return nil, err
		}
		taken = append(taken, b)
	}
	switch len(taken) {
	case 0:
		return noop, nil
	case 1:
		return taken[0].undo, nil // made with the bucket: no allocation a call
	}
	all := slices.Clone(taken)
	return func() {
		for _, b := range all {
			b.giveBack()
		}
	}, nil
}

func noop() {}

// window is a rule's current window, cached until it ends: aligning a
// time in a zone costs more than the rest of a call's counting.
type window struct {
	start int64 // unix seconds
	end   time.Time
}

// window returns the window of rs.calls[i] holding now.
func (rs *ruleSet) window(i int, now time.Time, loc *time.Location) *window {
	if w := rs.wins[i].Load(); w != nil && now.Before(w.end) && now.Unix() >= w.start {
		return w
	}
	start, end := WindowOf(now, rs.calls[i].Window, loc)
	w := &window{start: start.Unix(), end: end}
	rs.wins[i].Store(w)
	return w
}

var errSpent = errors.New("spent")

func (k *Keeper) bucket(key store.QuotaKey) *bucket {
	k.bmu.RLock()
	b := k.buckets[key]
	k.bmu.RUnlock()
	if b != nil {
		return b
	}
	k.bmu.Lock()
	defer k.bmu.Unlock()
	if b = k.buckets[key]; b == nil {
		b = &bucket{}
		b.undo = b.giveBack
		k.buckets[key] = b
	}
	return b
}

// LeaseSize is how much of a limit a replica leases at a time: 1% of it,
// at least one call.
func LeaseSize(limit int64) int64 { return max(1, limit/100) }

// spend takes one unit of b. Once three quarters of a lease are spent it
// tops the lease up in the background, so that the calls do not wait for
// the database while the window has allowance; with none held it leases
// before the call (after a pause, say, or when the calls outran the top-up).
func (k *Keeper) spend(ctx context.Context, b *bucket, key store.QuotaKey, r *Rule, now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastUse = now
	for b.held <= 0 && b.refilled != nil {
		ch := b.refilled
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		b.mu.Lock()
		if ctx.Err() != nil {
			return &UnavailableError{Rule: r.Name, Err: ctx.Err()}
		}
	}
	if b.held > 0 {
		b.held--
		k.topUp(ctx, b, key, r, now)
		return nil
	}
	if !b.spentSeen.IsZero() && now.Sub(b.spentSeen) < Recheck {
		return errSpent
	}
	if b.failed != nil && now.Sub(b.failedAt) < Recheck {
		return b.failed // the database failed a moment ago: not asked again per call
	}
	granted, err := k.lease(ctx, b, key, r, LeaseSize(r.Calls))
	if err = k.leased(ctx, b, r, granted, err, now); err != nil {
		return err
	}
	b.held--
	return nil
}

// topUp starts leasing b back up to one lease when it holds a quarter of
// one or less (b is locked): one lease at most is held, so a replica that
// crashes still loses at most one.
func (k *Keeper) topUp(ctx context.Context, b *bucket, key store.QuotaKey, r *Rule, now time.Time) {
	size := LeaseSize(r.Calls)
	if b.refilled != nil || b.held > size/4 || size < 4 ||
		(!b.spentSeen.IsZero() && now.Sub(b.spentSeen) < Recheck) || (b.failed != nil && now.Sub(b.failedAt) < Recheck) {
		return
	}
	want := size - b.held
	b.refilled = make(chan struct{})
	k.refills.Add(1)
	// Not the call's cancellation: the top-up is for the calls after it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.QueryTimeout)
	go func() {
		defer k.refills.Done()
		defer cancel()
		granted, used, err := k.src.LeaseQuota(ctx, key, r.amount(), want)
		b.mu.Lock()
		defer b.mu.Unlock()
		if err == nil {
			k.granted(b, r, granted, used)
		}
		// No call waits on the outcome but through b: a spent window or a
		// failure refuses the calls once what is held runs out.
		_ = k.leased(ctx, b, r, granted, err, k.now())
		close(b.refilled)
		b.refilled = nil
	}()
}

// leased records the outcome of a lease of b (locked): an error to refuse
// the call with when nothing could be leased.
func (k *Keeper) leased(ctx context.Context, b *bucket, r *Rule, granted int64, err error, now time.Time) error {
	if err != nil {
		if b.failed == nil {
			k.logger.WarnContext(ctx, "quota lease failed; refusing what this replica holds no allowance for", "rule", r.Name, "err", err)
		}
		b.failed, b.failedAt = &UnavailableError{Rule: r.Name, Err: err}, now
		return b.failed
	}
	b.failed = nil
	if granted == 0 {
		b.spentSeen = now
		return errSpent
	}
	b.spentSeen = time.Time{}
	return nil
}

// lease takes up to want more of r's window for b; b is locked, so the
// lease is bounded (store.QueryTimeout): the user's other calls, and Tidy,
// wait on it.
func (k *Keeper) lease(ctx context.Context, b *bucket, key store.QuotaKey, r *Rule, want int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	defer cancel()
	granted, used, err := k.src.LeaseQuota(ctx, key, r.amount(), want)
	if err != nil {
		return 0, err
	}
	k.granted(b, r, granted, used)
	return granted, nil
}

// granted adds a lease to b (locked).
func (k *Keeper) granted(b *bucket, r *Rule, granted, used int64) {
	if granted > 0 {
		k.writes.Add(1)
	}
	b.held += granted
	b.left = r.amount() - used
}

// RunBudget is what a user's runs may still spend today under the run
// rules that apply (the tightest of them).
type RunBudget struct {
	Limited  bool // false: no run rule applies
	Left     int64
	Rule     string
	Limit    int64
	ResetsAt time.Time
}

// Exhausted says a budget spent, for the run that stops on it.
func (b RunBudget) Exhausted() string {
	return fmt.Sprintf("run token budget reached: %d model tokens a day for runs (rule %s), resets at %s", b.Limit, b.Rule, b.ResetsAt.Format(time.RFC3339))
}

// RunTokensLeft returns what user's runs may still spend today: what this
// replica holds of the run rules' leases plus what no replica has leased
// yet (as of the last lease). It leases when it holds none, so a
// database outage leaves a replica what it holds, then an error.
func (k *Keeper) RunTokensLeft(ctx context.Context, user int64) (RunBudget, error) {
	rs, err := k.ruleSet(ctx)
	if err != nil {
		return RunBudget{}, &UnavailableError{Rule: "(rules)", Err: err}
	}
	var out RunBudget
	now := k.now()
	for _, r := range rs.runs {
		if !r.forUser(user) {
			continue
		}
		_, end := WindowOf(now, Day, k.loc)
		key, b := k.runBucket(r, user, now)
		b.mu.Lock()
		if b.held <= 0 && (b.spentSeen.IsZero() || now.Sub(b.spentSeen) >= Recheck) {
			// A debt (tokens spent while the database was out) is leased
			// with the next lease: it was spent, the window counts it.
			if _, err := k.lease(ctx, b, key, r, LeaseSize(r.RunTokensPerDay)-min(0, b.held)); err != nil {
				b.mu.Unlock()
				return RunBudget{}, &UnavailableError{Rule: r.Name, Err: err}
			}
			if b.held <= 0 {
				b.held, b.spentSeen = 0, now // what the window could not take is the documented overshoot
			}
		}
		left := max(0, b.held) + max(0, b.left)
		b.mu.Unlock()
		if !out.Limited || left < out.Left {
			out = RunBudget{Limited: true, Left: left, Rule: r.Name, Limit: r.RunTokensPerDay, ResetsAt: end}
		}
	}
	return out, nil
}

// SpendRunTokens counts n model tokens spent by a run of user: from what
// this replica holds, leasing the rest. What cannot be leased (the day is
// spent) is the overshoot of the one model call that made it.
func (k *Keeper) SpendRunTokens(ctx context.Context, user, n int64) {
	rs := k.rules.Load()
	if rs == nil || n <= 0 {
		return
	}
	now := k.now()
	for _, r := range rs.runs {
		if !r.forUser(user) {
			continue
		}
		key, b := k.runBucket(r, user, now)
		b.mu.Lock()
		b.lastUse = now
		b.held -= n
		if b.held < 0 {
			if _, err := k.lease(ctx, b, key, r, max(-b.held, LeaseSize(r.RunTokensPerDay))); err != nil {
				// Kept as a debt (held below zero), leased once the
				// database answers: forgetting it would let the tokens
				// spent during an outage go uncounted for the day.
				k.logger.WarnContext(ctx, "run tokens not counted yet: the database is unreachable; they are counted once it is back", "rule", r.Name, "tokens", -b.held, "err", err)
			} else {
				b.held = max(0, b.held) // past the day's limit: the one call's overshoot
			}
		}
		b.mu.Unlock()
	}
}

func (k *Keeper) runBucket(r *Rule, user int64, now time.Time) (store.QuotaKey, *bucket) {
	start, _ := WindowOf(now, Day, k.loc)
	key := store.QuotaKey{Rule: r.ID, User: user, WindowStart: start.Unix()}
	return key, k.bucket(key)
}

// Tidy gives back the leases left unspent for IdleReturn (all of them
// with all set: shutdown, once the top-ups under way have landed) and
// forgets the windows that are over and the rules that are gone. The
// calls do not wait for a give-back: it is taken out of the bucket first.
func (k *Keeper) Tidy(ctx context.Context, all bool) {
	k.tidy.Lock()
	defer k.tidy.Unlock()
	if all {
		k.refills.Wait()
	}
	now := k.now()
	rs := k.rules.Load()
	k.bmu.Lock()
	keys := make([]store.QuotaKey, 0, len(k.buckets))
	for key := range k.buckets {
		keys = append(keys, key)
	}
	k.bmu.Unlock()
	for _, key := range keys {
		k.bmu.RLock()
		b := k.buckets[key]
		k.bmu.RUnlock()
		r := rs.byID(key.Rule)
		current := false
		if r != nil {
			start, _ := WindowOf(now, r.window(), k.loc)
			current = start.Unix() == key.WindowStart
		}
		b.mu.Lock()
		var back int64
		if current && b.held > 0 && b.refilled == nil && (all || now.Sub(b.lastUse) >= IdleReturn) {
			back, b.held = b.held, 0
		}
		if b.held < 0 && r != nil {
			// Run tokens spent during an outage, counted in their window
			// once the database answers (or at shutdown), never dropped.
			if _, err := k.lease(ctx, b, key, r, -b.held); err == nil {
				b.held = 0
			}
		}
		b.mu.Unlock()
		if back > 0 {
			rctx, cancel := context.WithTimeout(ctx, store.QueryTimeout) // the next Tidy waits on it
			err := k.src.ReturnQuota(rctx, key, back)
			cancel()
			b.mu.Lock()
			if err != nil {
				k.logger.WarnContext(ctx, "quota lease not given back; it is kept for now", "rule", r.Name, "err", err)
				b.held += back
			} else {
				b.lastUse = now
				k.writes.Add(1)
			}
			b.mu.Unlock()
		}
		b.mu.Lock()
		forget := r == nil || !current && b.held >= 0 || (b.held == 0 && b.refilled == nil && now.Sub(b.lastUse) >= time.Minute)
		b.mu.Unlock()
		if forget {
			k.bmu.Lock()
			delete(k.buckets, key)
			k.bmu.Unlock()
		}
	}
}

func (rs *ruleSet) byID(id int64) *Rule {
	if rs == nil {
		return nil
	}
	for _, r := range append(rs.calls, rs.runs...) {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Run gives back idle leases every second and prunes the use of windows
// over for two days every hour, until ctx ends; then it gives back every
// lease it holds, so that a restart loses none.
func (k *Keeper) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var pruned time.Time
	for {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			k.Tidy(sctx, true)
			cancel()
			return
		case <-t.C:
			k.Tidy(ctx, false)
			if now := k.now(); now.Sub(pruned) > time.Hour {
				pctx, cancel := context.WithTimeout(ctx, store.QueryTimeout) // the next Tidy waits on it
				err := k.src.PruneQuotaUse(pctx, now.Add(-48*time.Hour).Unix())
				cancel()
				if err != nil {
					k.logger.WarnContext(ctx, "quota use not pruned", "err", err)
				}
				pruned = now
			}
		}
	}
}

// Use is one rule's use by one user in the current window.
type Use struct {
	Rule     string    `json:"rule"`
	What     string    `json:"applies_to"`
	Limit    int64     `json:"limit"`
	Unit     string    `json:"unit"` // calls or run tokens
	Window   string    `json:"window"`
	Used     int64     `json:"used"`
	ResetsAt time.Time `json:"resets_at"`
	// Plugins and Tags are the rule's selectors, for narrowing what a
	// user is shown of it to the tools the user may use (Narrow).
	Plugins []string `json:"-"`
	Tags    []string `json:"-"`
}

// Narrow keeps of u's selectors the plugin names and tags of the tools a
// user may use, given as plugins and tags, and says what u applies to in
// those terms; false when its selectors name none of them: a rule of
// only tools the user may not use says nothing the user may be told.
func (u *Use) Narrow(plugins, tags []string) bool {
	in := func(x string, set []string) bool { return slices.Contains(set, x) }
	switch {
	case len(u.Plugins) > 0:
		u.Plugins = slices.DeleteFunc(slices.Clone(u.Plugins), func(n string) bool { return !in(n, plugins) })
		u.What = (&Rule{Plugins: u.Plugins}).AppliesTo()
		return len(u.Plugins) > 0
	case len(u.Tags) > 0:
		u.Tags = slices.DeleteFunc(slices.Clone(u.Tags), func(t string) bool { return !in(t, tags) })
		u.What = (&Rule{Tags: u.Tags}).AppliesTo()
		return len(u.Tags) > 0
	}
	return true
}

// UseOf returns the use of every rule that applies to user. Used counts
// the allowance leased, less what this replica holds unspent: another
// replica may hold up to one lease of it unspent.
func (k *Keeper) UseOf(ctx context.Context, user int64) ([]Use, error) {
	rs, err := k.ruleSet(ctx)
	if err != nil {
		return nil, err
	}
	now := k.now()
	out := []Use{}
	for _, r := range append(rs.calls, rs.runs...) {
		if !r.forUser(user) {
			continue
		}
		start, end := WindowOf(now, r.window(), k.loc)
		key := store.QuotaKey{Rule: r.ID, User: user, WindowStart: start.Unix()}
		used, err := k.src.QuotaUsed(ctx, key)
		if err != nil {
			return nil, err
		}
		k.bmu.RLock()
		b := k.buckets[key]
		k.bmu.RUnlock()
		if b != nil {
			b.mu.Lock()
			used -= b.held
			b.mu.Unlock()
		}
		unit := "calls"
		if r.RunTokensPerDay > 0 {
			unit = "run tokens"
		}
		out = append(out, Use{Rule: r.Name, What: r.AppliesTo(), Limit: r.amount(), Unit: unit, Window: r.window(), Used: max(0, used), ResetsAt: end,
			Plugins: r.Plugins, Tags: r.Tags})
	}
	return out, nil
}
