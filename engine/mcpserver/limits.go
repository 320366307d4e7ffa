package mcpserver

import (
	"container/list"
	"fmt"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// Settings of the HTTP sessions' bounds (cmd/blindexec reads them).
const (
	EnvSessionsPerUser = "BLINDEXEC_MCP_MAX_SESSIONS_PER_USER"
	EnvSessions        = "BLINDEXEC_MCP_MAX_SESSIONS"
	EnvSessionIdle     = "BLINDEXEC_MCP_SESSION_IDLE_MS"

	DefaultSessionsPerUser = 32
	DefaultSessions        = 4096
	// DefaultSessionIdle closes a session that has had no request this
	// long. A session costs about 22 kB; clients that go away without
	// DELETE leave theirs behind.
	DefaultSessionIdle = 10 * time.Minute
)

// SessionLimits bound the live HTTP sessions of a Service. Zero fields
// take the defaults.
type SessionLimits struct {
	// PerUser bounds the sessions acting for one user, whatever token
	// opened them.
	PerUser int
	// Total bounds the sessions of this process (the service token may
	// name any number of users).
	Total int
	// Idle closes a session without a request for this long.
	Idle time.Duration
}

func (l SessionLimits) perUser() int {
	if l.PerUser <= 0 {
		return DefaultSessionsPerUser
	}
	return l.PerUser
}

func (l SessionLimits) total() int {
	if l.Total <= 0 {
		return DefaultSessions
	}
	return l.Total
}

func (l SessionLimits) idle() time.Duration {
	if l.Idle <= 0 {
		return DefaultSessionIdle
	}
	return l.Idle
}

// SessionLimitError refuses a new session: the cap is reached and every
// session under it has a request in flight, so none can be ended.
type SessionLimitError struct {
	Limit string // "sessions per user" or "sessions of the replica"
	Max   int
	Env   string // the setting
}

func (e *SessionLimitError) Error() string {
	return fmt.Sprintf("too many MCP sessions: the limit of %d %s (%s) is reached and each of them has a request in flight; end a session (DELETE /mcp) or retry later", e.Max, e.Limit, e.Env)
}

// live is one session the registry follows.
type live struct {
	id   string
	user int64
	ss   *sdk.ServerSession
	busy int           // requests in flight (not counting the GET stream)
	elem *list.Element // in registry.lru: least recently used first
	idle *time.Timer   // ends the session; stopped while busy
}

// registry bounds the live sessions. Past a cap a new session ends the
// least recently used idle session under that cap (the user's own for
// the per-user cap); when every one is busy, the new session is refused.
// An ended session's client gets 404 on its next request, which the MCP
// specification tells it to answer with a new initialize.
type registry struct {
	limits SessionLimits

	mu      sync.Mutex
	byID    map[string]*live
	lru     *list.List    // of *live: least recently used first
	perUser map[int64]int // live and reserved sessions by user
	pending int           // reserved by initialize requests in flight

	ended, refused *prometheus.CounterVec // by limit
}

// Limit names, as the metrics label them.
const (
	limitPerUser = "per_user"
	limitTotal   = "replica"
)

func newRegistry(l SessionLimits) *registry {
	return &registry{limits: l, byID: map[string]*live{}, lru: list.New(), perUser: map[int64]int{},
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blindexec_mcp_sessions_ended_total",
			Help: "/mcp sessions ended to make room for a new one, by the limit reached (per_user, replica); subscriptions/listen streams of 2026-07-28 ended to make room for a request (per_user_in_flight, replica_in_flight)."}, []string{"limit"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blindexec_mcp_sessions_refused_total",
			Help: "/mcp initialize requests refused: the limit reached (per_user, replica) and every session under it busy; requests of 2026-07-28 refused: too many in flight (per_user_in_flight, replica_in_flight)."}, []string{"limit"}),
	}
}

// reserve makes room for a new session of user: past a cap it ends the
// least recently used idle session under it, or refuses. The caller then
// calls add with the session opened, or cancel.
func (g *registry) reserve(user int64) error {
	var victims []*sdk.ServerSession
	defer func() {
		// Closed outside the lock: the session's end takes it (add).
		for _, ss := range victims {
			ss.Close()
		}
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perUser[user] >= g.limits.perUser() {
		v := g.oldestIdle(func(l *live) bool { return l.user == user })
		if v == nil {
			g.refused.WithLabelValues(limitPerUser).Inc()
			return &SessionLimitError{Limit: "sessions per user", Max: g.limits.perUser(), Env: EnvSessionsPerUser}
		}
		victims = append(victims, g.drop(v, limitPerUser))
	}
	if len(g.byID)+g.pending >= g.limits.total() {
		v := g.oldestIdle(func(*live) bool { return true })
		if v == nil {
			g.refused.WithLabelValues(limitTotal).Inc()
			return &SessionLimitError{Limit: "sessions of the replica", Max: g.limits.total(), Env: EnvSessions}
		}
		victims = append(victims, g.drop(v, limitTotal))
	}
	g.pending++
	g.perUser[user]++
	return nil
}

// cancel gives back a reservation of user that opened no session.
func (g *registry) cancel(user int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending--
	g.decUser(user)
}

func (g *registry) decUser(user int64) {
	if g.perUser[user]--; g.perUser[user] <= 0 {
		delete(g.perUser, user)
	}
}

// oldestIdle is the least recently used session without a request in
// flight that keep accepts; nil when there is none. g.mu is held.
func (g *registry) oldestIdle(keep func(*live) bool) *live {
	for e := g.lru.Front(); e != nil; e = e.Next() {
		if l := e.Value.(*live); l.busy == 0 && keep(l) {
			return l
		}
	}
	return nil
}

// drop forgets l, ended by the cap named limit, and returns its session
// for the caller to close once g.mu is released. g.mu is held.
func (g *registry) drop(l *live, limit string) *sdk.ServerSession {
	g.forget(l)
	g.ended.WithLabelValues(limit).Inc()
	return l.ss
}

// forget removes l from the registry. g.mu is held.
func (g *registry) forget(l *live) {
	l.idle.Stop()
	delete(g.byID, l.id)
	g.lru.Remove(l.elem)
	g.decUser(l.user)
}

// add turns a reservation of user into the live session ss, forgotten
// when it ends however it ends (DELETE, idle expiry, a cap). It ends
// after the idle time without a request.
func (g *registry) add(user int64, ss *sdk.ServerSession) {
	l := &live{id: ss.ID(), user: user, ss: ss, idle: time.AfterFunc(g.limits.idle(), func() { ss.Close() })}
	g.mu.Lock()
	g.pending--
	l.elem = g.lru.PushBack(l)
	g.byID[l.id] = l
	g.mu.Unlock()
	go func() {
		ss.Wait()
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.byID[l.id] == l {
			g.forget(l)
		}
	}()
}

// use marks session id of user in use until done is called: the most
// recently used, and not idle meanwhile.
func (g *registry) use(id string, user int64) (done func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.byID[id]
	if l == nil || l.user != user { // not yet added, or ended meanwhile
		return func() {}
	}
	if l.busy++; l.busy == 1 {
		l.idle.Stop()
	}
	g.lru.MoveToBack(l.elem)
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		l.busy--
		if g.byID[id] != l { // ended meanwhile: forget stopped its timer for good
			return
		}
		if l.busy == 0 {
			l.idle.Reset(g.limits.idle())
		}
		g.lru.MoveToBack(l.elem)
	}
}

// count is the number of live HTTP sessions.
func (g *registry) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.byID)
}

// Register adds the HTTP sessions' metrics to reg:
// blindexec_mcp_sessions (live now), and
// blindexec_mcp_sessions_ended_total and
// blindexec_mcp_sessions_refused_total by the limit that ended or
// refused them (per_user, replica).
func (s *Service) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "blindexec_mcp_sessions", Help: "Live /mcp sessions of this replica."},
			func() float64 { return float64(s.sessions.count()) }),
		s.sessions.ended, s.sessions.refused,
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
