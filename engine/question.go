package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
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
	// Tool, User and RunID are the call the question comes during, as
	// the executor prepared it (Ask sets them): whom an approval page
	// shows it to.
	Tool  string
	User  int64
	RunID string
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
// client the call came from (an MCP session's elicitation, input_required)
// or on the approval page (engine/questions), and returns the answer; an
// error when the person could not be asked.
type Asker func(ctx context.Context, q Question) (Answer, error)

type askerKey struct{}

// WithAsker returns ctx whose calls' questions go to a.
func WithAsker(ctx context.Context, a Asker) context.Context {
	return context.WithValue(ctx, askerKey{}, a)
}

// NobodyToAskError answers an upstream's question at once when nobody can
// be asked it: no asker (an entry point without the approval page), a
// question the engine will not show (too large, a link not http(s)), or
// one past the bounds of what waits for a person: no call waits out its
// timeout for a question nobody was shown.
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

// MaxQuestion bounds the bytes of a question (its message, schema and
// link) the engine shows a person and keeps: an upstream nobody vetted
// writes it, and it is stored as a pending item and shown on a page.
const MaxQuestion = 16 << 10

// size is the bytes of q the engine shows and keeps.
func (q Question) size() int { return len(q.Message) + len(q.Schema) + len(q.URL) + len(q.Server) }

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
// upstream may echo the credentials it was sent), it is at most
// MaxQuestion bytes, a URL-mode link must be an absolute http or https
// URL, and it goes to the asker of ctx — the call's client, or the
// approval page — or, when there is none, is refused at once
// (*NobodyToAskError). The answer goes back as the person gave it; the
// record keeps it masked.
func (p *Prepared) Ask(ctx context.Context, q Question) (Answer, error) {
	m := callMasker(p)
	q.User, q.RunID = p.UserID, p.RunID
	if p.Plugin != nil {
		q.Tool = p.Plugin.Name
	}
	q.Server, q.Message, q.URL = m.String(q.Server), m.String(q.Message), m.String(q.URL)
	if n := q.size(); n > MaxQuestion {
		q.Schema = nil
		return p.answered(ctx, q, Answer{}, &NobodyToAskError{Reason: fmt.Sprintf("the question is %d bytes, more than the %d a question may be", n, MaxQuestion)})
	}
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

// Check reports whether a is an answer to q a person may give: accept,
// decline or cancel; for an accepted form, content whose fields are the
// requestedSchema's (its primitive fields: string, number, integer,
// boolean, an enum or a list of enum values), of their types and within
// their enums and bounds, the required ones present. The error names the
// field and what was expected.
func (q Question) Check(a Answer) error {
	switch a.Action {
	case "accept":
	case "decline", "cancel":
		if len(a.Content) > 0 {
			return fmt.Errorf("content: only an accepted answer carries content")
		}
		return nil
	default:
		return fmt.Errorf(`action: expected "accept", "decline" or "cancel"`)
	}
	if q.Mode != QuestionForm {
		if len(a.Content) > 0 {
			return fmt.Errorf("content: a link's question takes no content")
		}
		return nil
	}
	var s struct {
		Properties map[string]answerField `json:"properties"`
		Required   []string               `json:"required"`
	}
	if len(q.Schema) > 0 {
		if err := json.Unmarshal(q.Schema, &s); err != nil {
			return fmt.Errorf("the question's requestedSchema cannot be read: %w", err)
		}
	}
	for k, v := range a.Content {
		f, ok := s.Properties[k]
		if !ok {
			return fmt.Errorf("content.%s: not a field of the question", k)
		}
		if err := f.check(v); err != nil {
			return fmt.Errorf("content.%s: %w", k, err)
		}
	}
	for _, k := range s.Required {
		if _, ok := a.Content[k]; !ok {
			return fmt.Errorf("content.%s: required", k)
		}
	}
	return nil
}

// answerField is what Check reads of a requestedSchema's field.
type answerField struct {
	Type      string                `json:"type"`
	Enum      []any                 `json:"enum"`
	OneOf     []struct{ Const any } `json:"oneOf"`
	Items     *answerField          `json:"items"`
	MinLength *int                  `json:"minLength"`
	MaxLength *int                  `json:"maxLength"`
	Minimum   *float64              `json:"minimum"`
	Maximum   *float64              `json:"maximum"`
	MaxItems  *int                  `json:"maxItems"`
}

// check reports whether v is a value of f.
func (f answerField) check(v any) error {
	switch f.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("expected a string")
		}
		if n := len([]rune(s)); f.MinLength != nil && n < *f.MinLength || f.MaxLength != nil && n > *f.MaxLength {
			return fmt.Errorf("expected %s characters", bounds(f.MinLength, f.MaxLength))
		}
		if allowed := f.allowed(); allowed != nil && !slices.Contains(allowed, any(s)) {
			return fmt.Errorf("expected one of %v", allowed)
		}
	case "number", "integer":
		what := "a number"
		if f.Type == "integer" {
			what = "an integer"
		}
		n, ok := v.(float64)
		if !ok || f.Type == "integer" && n != math.Trunc(n) {
			return fmt.Errorf("expected %s", what)
		}
		if f.Minimum != nil && n < *f.Minimum || f.Maximum != nil && n > *f.Maximum {
			return fmt.Errorf("expected %s from %v to %v", what, deref(f.Minimum), deref(f.Maximum))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("expected true or false")
		}
	case "array":
		vs, ok := v.([]any)
		if !ok || f.Items == nil {
			return fmt.Errorf("expected a list of the field's values")
		}
		if f.MaxItems != nil && len(vs) > *f.MaxItems {
			return fmt.Errorf("expected at most %d values", *f.MaxItems)
		}
		for i, e := range vs {
			if err := f.Items.check(e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	default:
		return fmt.Errorf("a field of type %q cannot be answered", f.Type)
	}
	return nil
}

// allowed is f's enum (or the consts of its oneOf), nil when any value.
func (f answerField) allowed() []any {
	if f.Enum != nil {
		return f.Enum
	}
	var out []any
	for _, o := range f.OneOf {
		out = append(out, o.Const)
	}
	return out
}

func bounds(lo, hi *int) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%d to %d", *lo, *hi)
	case lo != nil:
		return fmt.Sprintf("at least %d", *lo)
	}
	return fmt.Sprintf("at most %d", *hi)
}

func deref(f *float64) any {
	if f == nil {
		return "any"
	}
	return *f
}
