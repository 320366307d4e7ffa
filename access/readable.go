package access

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultProbeEvery is how long Checker.Readable keeps its answer when
// ProbeEvery is 0: a load balancer polling /readyz many times a second
// costs the source one read a second.
const DefaultProbeEvery = time.Second

// Prober is a Source that can tell whether it can be read at all, for
// no user in particular: its tables exist and answer its queries.
type Prober interface {
	Probe(ctx context.Context) error
}

// noUser is the user a probe reads for: 0 is no RuoYi, yudao or
// operator's user (their ids start at 1), so a probe reads nothing but
// runs each statement a call runs.
const noUser = 0

// Probe runs both of RuoYi's statements (ruoyiUser, ruoyiMenus), which
// read all five tables, for no user.
func (s RuoYi) Probe(ctx context.Context) error {
	var id int64
	if err := s.DB.QueryRowContext(ctx, ruoyiUser, noUser).Scan(&id); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read sys_user: %w", err)
	}
	if err := scanStrings(ctx, s.DB, ruoyiMenus, 0, func(string) {}, noUser); err != nil {
		return fmt.Errorf("read the menus: %w", err)
	}
	return nil
}

// Probe runs yudao's one statement for no user.
func (s Yudao) Probe(ctx context.Context) error {
	_, err := s.Held(ctx, noUser)
	return err
}

// Probe runs the operator's query for no user.
func (s Query) Probe(ctx context.Context) error {
	_, err := s.Held(ctx, noUser)
	return err
}

// Probe asks the source the cache keeps, when it can be asked; never
// from the cache.
func (c *Cache) Probe(ctx context.Context) error {
	if p, ok := c.src.(Prober); ok {
		return p.Probe(ctx)
	}
	return nil
}

// probeMemo is Readable's last answer.
type probeMemo struct {
	mu  sync.Mutex // held during a probe: probes at once wait for its answer
	at  time.Time
	err error
}

// Readable is nil when the database source can be read, or there is none
// (or it cannot be probed), else an *UnavailableError naming it: every
// call it would decide is refused meanwhile. /readyz asks it at each
// probe, so an answer is kept for ProbeEvery (DefaultProbeEvery when 0).
func (c *Checker) Readable(ctx context.Context) error {
	p, ok := c.Source.(Prober)
	if !ok {
		return nil
	}
	m := &c.probe
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.at.IsZero() && time.Since(m.at) < cmp.Or(c.ProbeEvery, DefaultProbeEvery) {
		return m.err
	}
	m.err = nil
	if err := p.Probe(ctx); err != nil {
		m.err = &UnavailableError{Source: c.Name, Err: err}
	}
	m.at = time.Now()
	return m.err
}
