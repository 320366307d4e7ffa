package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// A Notice is what an upstream says about a call while it runs (issue 48
// point 3): its progress, or a log message (Log set). Notices are masked
// by the call's masker before anyone sees them (Prepared.Notify).
type Notice struct {
	Progress, Total float64 // progress; Total 0 when unknown
	Message         string  // progress message
	Log             bool
	Level, Logger   string          // a log message's
	Data            json.RawMessage // a log message's data, JSON
}

// MaxNoticeLogBytes bounds each text of a log message the engine keeps
// (Notice.Kept): the upstream decides how long they are, up to an
// answer's 10 MiB, and a call's span keeps 128 events.
const MaxNoticeLogBytes = 2048

// Kept is what the engine keeps of a log message — in its own log and
// as an event of the call's span —, each text cut to MaxNoticeLogBytes,
// saying how much more there was, its level only when it is one
// (logLevels); the call's client hears it whole.
func (n Notice) Kept() (level, logger, data string) {
	return keptLevel(n.Level), cutNotice(n.Logger), cutNotice(string(n.Data))
}

// logLevels are the levels of an MCP log message (RFC 5424's severities).
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// keptLevel is level when it is one of logLevels, else its length only:
// the upstream writes any text there, a credential it was sent included,
// and a message no call can be given has no masker (review80).
func keptLevel(level string) string {
	if slices.Contains(logLevels, level) {
		return level
	}
	return fmt.Sprintf("(not a log level: %d bytes)", len(level))
}

// cutNotice cuts s to MaxNoticeLogBytes without splitting a character,
// saying how many bytes were left out.
func cutNotice(s string) string {
	if len(s) <= MaxNoticeLogBytes {
		return s
	}
	kept := truncateUTF8(s, MaxNoticeLogBytes)
	return kept + fmt.Sprintf("…[cut: %d more bytes]", len(s)-len(kept))
}

// A Listener receives the notices of the calls made with its context: the
// client a call is for (an MCP client of /mcp), never another.
type Listener func(Notice)

type listenerKey struct{}

type listening struct {
	l        Listener
	progress bool
}

// WithListener returns ctx whose calls' notices go to l; progress says
// the client asked for progress (an MCP progressToken), so that upstreams
// are asked for it.
func WithListener(ctx context.Context, l Listener, progress bool) context.Context {
	return context.WithValue(ctx, listenerKey{}, listening{l, progress})
}

// Listening reports whether a client listens to the notices of ctx's
// calls.
func Listening(ctx context.Context) bool {
	v, _ := ctx.Value(listenerKey{}).(listening)
	return v.l != nil
}

// ProgressWanted reports whether the client of ctx's calls asked for
// their progress.
func ProgressWanted(ctx context.Context) bool {
	v, _ := ctx.Value(listenerKey{}).(listening)
	return v.progress && v.l != nil
}

// Notify masks n with the masker of the call p prepares — the masker of
// its result — and passes it to the call's listener (ctx's), if any; a
// log message also goes to the call's span as an event. Masking here,
// beside the result's, keeps one place that decides what of a call
// leaves the engine.
func (p *Prepared) Notify(ctx context.Context, n Notice) Notice {
	m := callMasker(p)
	n.Message = m.String(n.Message)
	n.Level = m.String(n.Level) // the upstream's text, as the others are
	n.Logger = m.String(n.Logger)
	if len(n.Data) > 0 {
		if d := m.Bytes(n.Data); json.Valid(d) {
			n.Data = d
		} else {
			n.Data = json.RawMessage(`"(withheld: masking left no valid JSON)"`)
		}
	}
	if n.Log {
		level, logger, data := n.Kept()
		trace.SpanFromContext(ctx).AddEvent("upstream log message", trace.WithAttributes(
			attribute.String("log.level", level), attribute.String("log.logger", logger), attribute.String("log.data", data)))
	}
	if v, _ := ctx.Value(listenerKey{}).(listening); v.l != nil && (n.Log || v.progress) {
		v.l(n)
	}
	return n
}
