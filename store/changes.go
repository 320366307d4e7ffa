package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Versions are the change counters of the sources replicas keep in memory.
// Triggers (migration 00004) bump them on every insert, update and delete,
// whoever writes: the engine, the CLI, or RuoYi with plain SQL.
type Versions struct {
	Plugins     int64 `json:"plugins"`
	Credentials int64 `json:"credentials"`
	Tokens      int64 `json:"tokens"`
	MCPServers  int64 `json:"mcp_servers"`
}

// Versions reads the change counters: one indexed query.
func (s *Store) Versions(ctx context.Context) (Versions, error) {
	rows, err := s.sqlDB.QueryContext(ctx, "SELECT scope, version FROM sys_ai_change")
	if err != nil {
		return Versions{}, fmt.Errorf("read change counters: %w", err)
	}
	defer rows.Close()
	var v Versions
	for rows.Next() {
		var (
			scope string
			n     int64
		)
		if err := rows.Scan(&scope, &n); err != nil {
			return Versions{}, fmt.Errorf("read change counters: %w", err)
		}
		switch scope {
		case "plugin":
			v.Plugins = n
		case "credential":
			v.Credentials = n
		case "token":
			v.Tokens = n
		case "mcp_server":
			v.MCPServers = n
		}
	}
	if err := rows.Err(); err != nil {
		return Versions{}, fmt.Errorf("read change counters: %w", err)
	}
	return v, nil
}

// VersionSource is what a Watcher polls; *Store implements it.
type VersionSource interface {
	Versions(ctx context.Context) (Versions, error)
}

// Watcher polls the change counters and tells the caches of a replica when
// they moved. Caches tag what they hold with the version they read it at
// and compare it with Current, an atomic load, so a call never queries the
// database to learn whether its cache is fresh.
type Watcher struct {
	src    VersionSource
	every  time.Duration
	logger *slog.Logger

	cur      atomic.Pointer[Versions]
	lastRead atomic.Int64 // unix nanoseconds of the last successful read

	mu      sync.Mutex // serializes polls, so listeners see moves in order
	listens []func(old, new Versions)
	failing bool
}

// NewWatcher returns a watcher polling src every interval once Run is
// called. Until its first poll, Current is the zero Versions.
func NewWatcher(src VersionSource, every time.Duration, logger *slog.Logger) *Watcher {
	if logger == nil {
		logger = slog.Default()
	}
	w := &Watcher{src: src, every: every, logger: logger}
	w.cur.Store(&Versions{})
	return w
}

// Current is the last read versions.
func (w *Watcher) Current() Versions { return *w.cur.Load() }

// LastRead is when the counters were last read successfully (zero: never).
func (w *Watcher) LastRead() time.Time {
	if n := w.lastRead.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// OnChange registers fn, called after a poll that saw the counters move,
// from the polling goroutine. Register listeners before Run.
func (w *Watcher) OnChange(fn func(old, new Versions)) {
	w.mu.Lock()
	w.listens = append(w.listens, fn)
	w.mu.Unlock()
}

// Poll reads the counters now. A replica's own writes call it, so that
// they take effect on that replica at once rather than after a poll
// interval.
func (w *Watcher) Poll(ctx context.Context) (Versions, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, err := w.src.Versions(ctx)
	if err != nil {
		if !w.failing {
			w.failing = true
			w.logger.Warn("cannot read the change counters; serving what is in memory", "err", err)
		}
		return w.Current(), err
	}
	if w.failing {
		w.failing = false
		w.logger.Info("change counters readable again")
	}
	w.lastRead.Store(time.Now().UnixNano())
	old := w.Current()
	if v != old {
		w.cur.Store(&v)
		for _, fn := range w.listens {
			fn(old, v)
		}
	}
	return v, nil
}

// Run polls every interval until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// Bounded: a database that stops answering without closing
			// the connection would otherwise hold the poll, and with it
			// LastRead, for as long as the operating system waits.
			pctx, cancel := context.WithTimeout(ctx, max(w.every, 5*time.Second))
			w.Poll(pctx)
			cancel()
		}
	}
}
