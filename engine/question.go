package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/net/idna"
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

// Host is the host of a URL-mode question's link, shown with it: in
// ASCII (an internationalised name as its punycode, xn--…), so that a
// name written in look-alike letters never reads as another; "" when the
// link has none a browser would reach.
func (q Question) Host() string {
	u, err := url.Parse(q.URL)
	if err != nil {
		return ""
	}
	h := asciiHost(u.Hostname())
	if h == "" {
		return ""
	}
	if p := u.Port(); p != "" {
		return net.JoinHostPort(h, p)
	}
	if strings.Contains(h, ":") { // an IPv6 literal
		return "[" + h + "]"
	}
	return h
}

// asciiHost is a host name as a browser reaches it, in ASCII (idna's
// lookup profile: lower case, punycode), or an IP address as a browser
// reads it, in its one spelling (an IPv4 host in hex, octal, as one
// number or short, an IPv6 one written in full or mapping an IPv4 one:
// the same address, which the engine's own must not pass as another);
// "" when a browser reaches none.
func asciiHost(h string) string {
	if h == "" {
		return ""
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().WithZone("").String()
	}
	h, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return ""
	}
	if a, number, ok := browserIPv4(h); number {
		if !ok {
			return ""
		}
		return a.String()
	}
	return h
}

// browserIPv4 reads h as the WHATWG URL standard's IPv4 parser does: a
// host whose last label is a number (decimal, 0x hex, 0-led octal) is an
// IPv4 address of at most four parts, the last filling the bytes left
// (number; ok when it is one).
func browserIPv4(h string) (_ netip.Addr, number, ok bool) {
	parts := strings.Split(h, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if strings.Trim(last, "0123456789") != "" && !(len(last) >= 2 && last[0] == '0' && last[1] == 'x' &&
		strings.Trim(last[2:], "0123456789abcdef") == "") {
		return netip.Addr{}, false, false
	}
	if len(parts) > 4 {
		return netip.Addr{}, true, false
	}
	var v uint64
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			base, p = 16, p[2:]
			if p == "" {
				p = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		n, err := strconv.ParseUint(p, base, 64)
		bits := 8
		if i == len(parts)-1 {
			bits = 8 * (5 - len(parts))
		}
		if err != nil || n >= 1<<bits {
			return netip.Addr{}, true, false
		}
		v = v<<bits | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, true
}

// personsOwn says whether h (as asciiHost writes it) is where the
// person's browser reaches its own machine or its link, never an
// upstream's page: a loopback, link-local (the cloud's metadata at
// 169.254.169.254) or unspecified address (0.0.0.0 reaches the machine
// itself), or localhost and the names under it, which browsers resolve
// to loopback without asking DNS (RFC 6761).
func personsOwn(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsUnspecified()
	}
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// ownHost is the host name of the engine's own pages, browserURL's
// (BLINDEXEC_BROWSER_URL), as asciiHost writes it; "" when unset.
func ownHost(browserURL string) string {
	u, err := url.Parse(browserURL)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(asciiHost(u.Hostname()), ".")
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
// form), "decline" or "cancel". Action and Content are all the upstream
// learns.
type Answer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
	// By says who answered and by which route, for the audit log
	// (AnswerLog); nil for an answer nobody gave (a question closed
	// unanswered is answered cancel). It never goes upstream.
	By *Answerer `json:"by,omitempty"`
}

// An Answerer is who gave an answer, in the audit log's terms, and how.
type Answerer struct {
	Actor string `json:"actor"` // who: "user 7", "admin", "service"
	Via   string `json:"via"`   // the audit log's via: "console", "api", "mcp"
	Route string `json:"route"` // RoutePage, RouteElicitation or RouteInputRequired
	// Pending is the pending item answered, for the routes through one.
	Pending string `json:"pending,omitempty"`
}

// The routes an answer comes by.
const (
	// RoutePage: the approval page (the console's Approvals, POST
	// /v1/pending/{id}).
	RoutePage = "page"
	// RouteElicitation: the MCP client's session (a 2025-era client that
	// declared elicitation).
	RouteElicitation = "elicitation"
	// RouteInputRequired: a 2026-07-28 client's retry with inputResponses.
	RouteInputRequired = "input_required"
)

// An AnswerLog records each answer a person gave to an upstream's
// question as the call takes it — one place whatever the route — in the
// audit log: who, by which route, the action, the call's user, tool, MCP
// server and run; never the content, which is the upstream's to know.
type AnswerLog interface {
	Answered(ctx context.Context, q Question, a Answer) error
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
func (q Question) size() int {
	return len(q.Message) + len(q.Schema) + len(q.URL) + len(q.Server) + len(q.ElicitationID)
}

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
	q.Server, q.Message, q.URL, q.ElicitationID = m.String(q.Server), m.String(q.Message), m.String(q.URL), m.String(q.ElicitationID)
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
	if reason := q.unshowable(ownHost(p.browserURL)); reason != "" {
		return p.answered(ctx, q, Answer{}, &NobodyToAskError{Reason: reason})
	}
	a, _ := ctx.Value(askerKey{}).(Asker)
	if a == nil {
		return p.answered(ctx, q, Answer{}, &NobodyToAskError{Reason: "the call's client cannot be asked (not an MCP client that declared elicitation)"})
	}
	ans, err := a(ctx, q)
	if err == nil {
		ans, err = q.given(ans)
	}
	if err == nil && p.allowed != nil {
		if refused := p.allowed(ctx); refused != nil {
			ans, err = Answer{}, refused
		}
	}
	if err == nil && ans.By != nil && p.answers != nil {
		if lerr := p.answers.Answered(context.WithoutCancel(ctx), q, ans); lerr != nil {
			// An answer goes upstream only with its row: a database that
			// fails the write (an outage; the session's own elicitation
			// needs it for nothing else) would otherwise leave an answer
			// acted on that the audit log never shows.
			p.log.ErrorContext(ctx, "an answer to an upstream's question not recorded in the audit log: not passed on", "route", ans.By.Route, "err", lerr)
			ans, err = Answer{}, errUnrecordedAnswer
		}
	}
	return p.answered(ctx, q, ans, err)
}

// unshowable says why q cannot be put to a person as it is ("" when it
// can): a link that is not an absolute http(s) URL, that carries
// userinfo (https://bank.example@evil.example/ reads as the bank's), or
// that leads to the engine's own pages, own (another user's start URL
// there, shown as "a link to" the engine, connects the person's account
// to that user; a console page asks what only the engine asks) or to the
// person's own machine (personsOwn: a local server's page, acting with
// whatever the browser holds there, shown as the upstream's); a
// form whose requestedSchema is not what MCP allows — a flat object of
// primitive fields (string, number, integer, boolean, a list of enum
// values) — since a field no person can fill (a nested object, a list of
// objects, a $ref) would be answered by whatever the page sent.
func (q Question) unshowable(own string) string {
	switch q.Mode {
	case QuestionForm:
		if err := formShape(q.Schema); err != nil {
			return "the question's requestedSchema is not one MCP allows: " + err.Error()
		}
	case QuestionURL:
		u, err := url.Parse(q.URL)
		switch {
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			return "the question's link is not an absolute http or https URL"
		case u.User != nil:
			return "the question's link carries a user name before its host (user@host), which disguises the host"
		case q.Host() == "":
			return "the question's link has no host a browser would reach"
		case own != "" && strings.TrimSuffix(asciiHost(u.Hostname()), ".") == own:
			return "the question's link leads to the engine's own pages (" + own + "): an upstream does not send a person there, where the engine asks for approvals and connections itself"
		case personsOwn(asciiHost(u.Hostname())):
			return "the question's link leads to the person's own machine or its link (" + strings.TrimSuffix(asciiHost(u.Hostname()), ".") + "): an upstream does not send a person to what listens there"
		}
	default:
		return fmt.Sprintf("unknown elicitation mode %q", q.Mode)
	}
	return ""
}

// given is the answer a as the upstream gets it: a declined or cancelled
// answer without content (a client may send some: it is not the person's
// answer), an accepted one only as the question asked (Check), else an
// error the upstream reads, with nothing the person typed.
func (q Question) given(a Answer) (Answer, error) {
	if a.Action == "decline" || a.Action == "cancel" {
		return Answer{Action: a.Action, By: a.By}, nil
	}
	if err := q.Check(a); err != nil {
		return Answer{}, &AnswerError{Err: err}
	}
	return a, nil
}

// errUnrecordedAnswer is what the upstream reads for an answer the audit
// log could not take (Ask): nothing the person answered.
var errUnrecordedAnswer = errors.New("the answer could not be recorded in the engine's audit log (its database is unreachable), so it was not passed on")

// An AnswerError is an answer the question did not ask for (Check): the
// upstream is told its question was not answered, never the content.
type AnswerError struct{ Err error }

func (e *AnswerError) Error() string {
	var large *AnswerTooLargeError
	if errors.As(e.Err, &large) {
		return "the answer given is not one the question asked for: " + large.Error()
	}
	return "the answer given is not one the question asked for"
}

func (e *AnswerError) Unwrap() error { return e.Err }

// MaxAnswer bounds the bytes of an answer's content (JSON): a person
// types it, an upstream reads it, and it waits in a pending item's
// column (TEXT, 64 KiB on MySQL) until the call takes it.
const MaxAnswer = 16 << 10

// AnswerTooLargeError is an answer whose content is over MaxAnswer.
type AnswerTooLargeError struct{ Size, Max int }

func (e *AnswerTooLargeError) Error() string {
	return fmt.Sprintf("content: %d bytes, more than the %d an answer may be", e.Size, e.Max)
}

// formShape reports why schema is not a requestedSchema MCP allows: an
// object (type "object" or none) whose properties are fields a person
// can fill (answerField.fillable); nil when it is.
func formShape(schema json.RawMessage) error {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Type       *string                    `json:"type"`
		Ref        *string                    `json:"$ref"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("expected an object: %w", err)
	}
	switch {
	case s.Type != nil && *s.Type != "object":
		return fmt.Errorf("type: expected \"object\", got %q", *s.Type)
	case s.Ref != nil:
		return errors.New("$ref: a reference cannot be shown as a form")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		var f answerField
		if err := json.Unmarshal(s.Properties[k], &f); err != nil {
			return fmt.Errorf("properties.%s: %w", k, err)
		}
		if err := f.fillable(); err != nil {
			return fmt.Errorf("properties.%s: %w", k, err)
		}
	}
	return nil
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
	} else if b, jerr := json.Marshal(Answer{Action: ans.Action, Content: ans.Content}); jerr == nil {
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
	if b, _ := json.Marshal(a.Content); len(b) > MaxAnswer {
		return &AnswerTooLargeError{Size: len(b), Max: MaxAnswer}
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
	Ref        *string                    `json:"$ref"`
	Properties map[string]json.RawMessage `json:"properties"`
	Type       string                     `json:"type"`
	Enum       []any                      `json:"enum"`
	OneOf      []struct{ Const any }      `json:"oneOf"`
	AnyOf      []struct{ Const any }      `json:"anyOf"` // a list's titled values
	Items      *answerField               `json:"items"`
	MinLength  *int                       `json:"minLength"`
	MaxLength  *int                       `json:"maxLength"`
	Minimum    *float64                   `json:"minimum"`
	Maximum    *float64                   `json:"maximum"`
	MaxItems   *int                       `json:"maxItems"`
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
	case "": // a list's item of titled values (anyOf) has no type
		switch v.(type) {
		case string, float64, bool: // comparable: a map in content and in the consts would panic
		default:
			return fmt.Errorf("expected one of %v", f.allowed())
		}
		if allowed := f.allowed(); allowed == nil || !slices.Contains(allowed, v) {
			return fmt.Errorf("expected one of %v", allowed)
		}
	default:
		return fmt.Errorf("a field of type %q cannot be answered", f.Type)
	}
	return nil
}

// fillable reports why a person cannot fill f, nil when they can: a
// primitive field, or a list whose items are enum values.
func (f answerField) fillable() error {
	switch {
	case f.Ref != nil:
		return errors.New("$ref: a reference cannot be shown as a field")
	case f.Properties != nil:
		return errors.New("a nested object cannot be shown as a field")
	}
	switch f.Type {
	case "string", "number", "integer", "boolean":
		return nil
	case "array":
		if f.Items == nil || f.Items.allowed() == nil || f.Items.Type == "object" || f.Items.Properties != nil || f.Items.Ref != nil {
			return errors.New("items: expected enum values (a list of objects cannot be shown as a field)")
		}
		return nil
	}
	return fmt.Errorf("type: expected string, number, integer, boolean or array, got %q", f.Type)
}

// allowed is f's enum (or the consts of its oneOf or anyOf), nil when
// any value.
func (f answerField) allowed() []any {
	if f.Enum != nil {
		return f.Enum
	}
	var out []any
	for _, o := range append(f.OneOf, f.AnyOf...) {
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
