//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577), but upstreams of 2025 send logs, which issue 48 relays

package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/loglimit"
)

// notices routes what upstream sessions say about calls in flight to
// those calls alone (issue 48 point 3). Sessions are shared by the calls
// of one server and credential set, so a client's progressToken is never
// sent upstream as is: each call gets a token of its own, and the
// upstream's progress under it reaches that call's listener only. Log
// messages (notifications/message) name no request: one is the call's
// when it is the only call in flight on its session, and otherwise
// reaches no client (the engine logs its level alone, no data, since no
// call's masker applies to it).
type notices struct {
	progress sync.Map // token → func(*sdk.ProgressNotificationParams)
	mu       sync.Mutex
	// logs are the calls in flight on each session, with what hears their
	// log messages and asks their questions (questions.go).
	logs map[*sdk.ClientSession]map[*logListener]bool
	// unattributed bounds the engine's log lines about what no call in
	// flight can be given: an upstream decides how many it sends.
	unattributed loglimit.Limiter
}

// Unattributed log lines: at most this many a minute, all servers together.
const unattributedLogsPerMinute = 5

// logUnattributed logs, within the notices' bound, what an upstream said
// that no call in flight can be given, with how many such lines were
// held back since the last.
func (m *Manager) logUnattributed(ctx context.Context, msg string, attrs ...any) {
	ok, held := m.notices.unattributed.Allow(time.Now())
	if !ok {
		return
	}
	m.logger().InfoContext(ctx, msg, append(attrs, "not_logged_since_last", held)...)
}

// logMessage is an upstream's notifications/message.
type logMessage = sdk.LoggingMessageParams

// logListener is one call in flight: f hears its log messages, ask puts
// its questions (either may be nil).
type logListener struct {
	f   func(*logMessage)
	ask askFunc
}

// progressToken registers f for the progress of one call and returns its
// token and the function that forgets it.
func (n *notices) progressToken(f func(*sdk.ProgressNotificationParams)) (string, func()) {
	b := make([]byte, 16)
	rand.Read(b)
	tok := "blindexec-" + hex.EncodeToString(b)
	n.progress.Store(tok, f)
	return tok, func() { n.progress.Delete(tok) }
}

// listen registers a call in flight on cs until the returned function is
// called: f for its log messages, ask for its questions.
func (n *notices) listen(cs *sdk.ClientSession, f func(*logMessage), ask askFunc) func() {
	l := &logListener{f, ask}
	n.mu.Lock()
	if n.logs == nil {
		n.logs = map[*sdk.ClientSession]map[*logListener]bool{}
	}
	if n.logs[cs] == nil {
		n.logs[cs] = map[*logListener]bool{}
	}
	n.logs[cs][l] = true
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		delete(n.logs[cs], l)
		if len(n.logs[cs]) == 0 {
			delete(n.logs, cs)
		}
		n.mu.Unlock()
	}
}

// onProgress is the sessions' ProgressNotificationHandler.
func (m *Manager) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	tok, _ := req.Params.ProgressToken.(string)
	if f, ok := m.notices.progress.Load(tok); ok {
		f.(func(*sdk.ProgressNotificationParams))(req.Params)
	}
}

// onLog is the sessions' LoggingMessageHandler.
func (m *Manager) onLog(ctx context.Context, req *sdk.LoggingMessageRequest) {
	m.notices.mu.Lock()
	var only *logListener
	if ls := m.notices.logs[req.Session]; len(ls) == 1 {
		for l := range ls {
			only = l
		}
	}
	m.notices.mu.Unlock()
	if only != nil && only.f != nil {
		only.f(req.Params)
		return
	}
	level, _, _ := engine.Notice{Level: string(req.Params.Level)}.Kept() // the upstream's text, unmasked here: a level or its length
	m.logUnattributed(ctx, "upstream MCP log message not attributable to one call: its data withheld", "level", level)
}

// logEverything asks an upstream that logs for every level: a call's
// client filters at the level it set, and the engine's log keeps the rest.
func (m *Manager) logEverything(ctx context.Context, srv *serverConfig, cs *sdk.ClientSession) {
	init := cs.InitializeResult()
	if init == nil || init.Capabilities == nil || init.Capabilities.Logging == nil {
		return
	}
	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		m.logger().DebugContext(ctx, "MCP server's log level not set", "mcp_id", srv.id, "err", err)
	}
}

// settle waits, after a call's result came, for the notices the upstream
// sent before it: the SDK hands a response to its caller at once but
// queues notifications for a handler, so a result overtakes the progress
// and log messages sent ahead of it. The wait ends once no notice came for
// settleQuiet, at most settleMax after the result: the latency a client
// listening to notices pays for hearing them before the result.
func settle(last *atomic.Int64) {
	start := time.Now()
	for time.Since(start) < settleMax {
		quiet := time.Since(start)
		if l := last.Load(); l > start.UnixNano() {
			quiet = time.Since(time.Unix(0, l))
		}
		if quiet >= settleQuiet {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

const (
	settleQuiet = 5 * time.Millisecond
	settleMax   = 100 * time.Millisecond
)

// logData is a log message's data as JSON.
func logData(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
