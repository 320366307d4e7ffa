package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// A Question is what an upstream MCP server asks the person a call is for
// while the call runs (elicitation/create, issue 48 point 4): a form
// (Schema, its requestedSchema as the upstream wrote it) or a link (URL),
// with the upstream's message. Server names the MCP server asking, so the
// question never passes for the engine's own.
type Question struct {
	Server  string
	Message string
	Mode    string          // QuestionForm or QuestionURL
	Schema  json.RawMessage // form: the requestedSchema (JSON)
	URL     string          // url: the link, never followed by the engine
	// ElicitationID is a URL-mode request's id, as the upstream gave it.
	ElicitationID string
}

// Question modes.
const (
	QuestionForm = "form"
	QuestionURL  = "url"
)

// Host is the host of a URL-mode question's link, shown with it.
func (q Question) Host() string {
	u, err := url.Parse(q.URL)
	if err != nil {
		return ""
	}
	return u.Host
}

// Prompt is the question's message as the person reads it: which MCP
// server asks, what it asks and, for a link, its host.
func (q Question) Prompt() string {
	s := fmt.Sprintf("The MCP server %q asks: %s", q.Server, q.Message)
	if q.Mode == QuestionURL {
		s += fmt.Sprintf(" (a link to %s, which the engine does not open)", q.Host())
	}
	return s
}

// An Answer is what the person answered: "accept" (with Content for a
// form), "decline" or "cancel". It is all the upstream learns.
type Answer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// An Asker puts a question to the person a call is for, through the
// client the call came from (an MCP session's elicitation), and returns
// the answer; an error when the person could not be asked.
type Asker func(ctx context.Context, q Question) (Answer, error)

type askerKey struct{}

// WithAsker returns ctx whose calls' questions go to a.
func WithAsker(ctx context.Context, a Asker) context.Context {
	return context.WithValue(ctx, askerKey{}, a)
}

// NobodyToAskError answers an upstream's question at once when the call's
// client cannot be asked (a run, /v1/execute, an MCP client that declared
// no elicitation or not the mode asked): no call waits out its timeout for
// a question nobody was shown.
type NobodyToAskError struct{ Reason string }

func (e *NobodyToAskError) Error() string {
	return "nobody can be asked: " + e.Reason
}

// maxQuestions bounds the questions one call records, maxAnswer the
// bytes of an answer kept (the record's column is TEXT, 64 KiB on MySQL).
const (
	maxQuestions = 8
	maxAnswer    = 2000
)

// asked is a question and its answer as the execution record keeps them,
// masked.
type asked struct {
	Server  string          `json:"server"`
	Mode    string          `json:"mode"`
	Message string          `json:"message"`
	Host    string          `json:"host,omitempty"`
	Answer  json.RawMessage `json:"answer,omitempty"`
	Error   string          `json:"error,omitempty"`
}

type questions struct {
	mu   sync.Mutex
	list []asked
}

// Ask is the executor's decision on an upstream's question during the
// call p prepares: the question is masked with the call's masker (an
// upstream may echo the credentials it was sent), a URL-mode link must be
// an absolute http or https URL, and it goes to the asker of ctx — the
// call's client — or, when there is none, is refused at once
// (*NobodyToAskError). The answer goes back as the person gave it; the
// record keeps it masked.
func (p *Prepared) Ask(ctx context.Context, q Question) (Answer, error) {
	m := callMasker(p)
	q.Server, q.Message, q.URL = m.String(q.Server), m.String(q.Message), m.String(q.URL)
	if len(q.Schema) > 0 {
		if s := m.Bytes(q.Schema); json.Valid(s) {
			q.Schema = s
		} else {
			return p.answered(ctx, q, Answer{}, &NobodyToAskError{Reason: "the question's schema cannot be shown masked"})
		}
	}
	switch q.Mode {
	case QuestionForm:
	case QuestionURL:
		if u, err := url.Parse(q.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return p.answered(ctx, q, Answer{}, &NobodyToAskError{Reason: "the question's link is not an absolute http or https URL"})
		}
	default:
		return p.answered(ctx, q, Answer{}, &NobodyToAskError{Reason: fmt.Sprintf("unknown elicitation mode %q", q.Mode)})
	}
	a, _ := ctx.Value(askerKey{}).(Asker)
	if a == nil {
		return p.answered(ctx, q, Answer{}, &NobodyToAskError{Reason: "the call's client cannot be asked (not an MCP client that declared elicitation)"})
	}
	ans, err := a(ctx, q)
	return p.answered(ctx, q, ans, err)
}

// answered records q and its answer (or why it was not asked), masked, on
// the call's span and in its record.
func (p *Prepared) answered(ctx context.Context, q Question, ans Answer, err error) (Answer, error) {
	m := callMasker(p)
	rec := asked{Server: q.Server, Mode: q.Mode, Message: truncateUTF8(q.Message, 200)}
	if q.Mode == QuestionURL {
		rec.Host = q.Host()
	}
	if err != nil {
		rec.Error = truncateUTF8(m.String(err.Error()), 200)
	} else if b, jerr := json.Marshal(ans); jerr == nil {
		if len(b) > maxAnswer {
			b, _ = json.Marshal(map[string]any{"action": ans.Action, "content": fmt.Sprintf("(%d bytes, not kept)", len(b))})
		}
		if b = m.Bytes(b); json.Valid(b) {
			rec.Answer = b
		}
	}
	trace.SpanFromContext(ctx).AddEvent("upstream question", trace.WithAttributes(
		attribute.String("mcp.server", rec.Server), attribute.String("elicitation.mode", rec.Mode),
		attribute.String("elicitation.action", ans.Action)))
	p.questions.mu.Lock()
	if len(p.questions.list) < maxQuestions {
		p.questions.list = append(p.questions.list, rec)
	}
	p.questions.mu.Unlock()
	return ans, err
}

// askedRecord is the questions of the call p prepared as its record keeps
// them (JSON, masked), "" when none was asked.
func (p *Prepared) askedRecord() string {
	if p == nil {
		return ""
	}
	p.questions.mu.Lock()
	defer p.questions.mu.Unlock()
	if len(p.questions.list) == 0 {
		return ""
	}
	b, err := json.Marshal(p.questions.list)
	if err != nil {
		return ""
	}
	return strings.ToValidUTF8(string(b), "")
}
