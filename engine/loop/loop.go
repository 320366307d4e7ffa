// Package loop runs one conversation turn with tools: it shows the plugins
// to an OpenAI-compatible model as tools (name, description and parameters
// only), executes the tool calls the model makes through the blind
// executor, feeds the results back and repeats until the model answers
// without tool calls or the step limit is reached.
//
// When the tools outnumber the tool search threshold (engine/toolset), the
// model is shown the meta-tool search_tools and the pinned tools instead,
// and the tools its searches find join the following model calls, never
// more than the threshold at once (deferred loading).
//
// What reaches the model: the caller's messages, the tool definitions and
// the tool outputs (which the executor has masked). Execution config, auth
// config, credentials and fixed-param values never do.
package loop

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/quota"
)

// Settings of the Runner's bounds on what the model answers
// (cmd/blindexec reads them).
const (
	EnvMaxResponseBytes = "BLINDEXEC_LLM_MAX_RESPONSE_BYTES"
	EnvMaxToolCalls     = "BLINDEXEC_LLM_MAX_TOOL_CALLS"
)

// Defaults of Options and Runner.
const (
	// DefaultMaxResponseBytes bounds one model answer (a stream's whole
	// body): past it the run fails rather than decode it.
	DefaultMaxResponseBytes = 4 << 20
	// DefaultMaxToolCalls bounds the tool calls executed per turn; the
	// rest are answered to the model as not executed.
	DefaultMaxToolCalls   = 32
	DefaultMaxSteps       = 8
	MaxMaxSteps           = 50
	DefaultMaxConcurrency = 4
	DefaultLLMRetries     = 3
	DefaultLLMTimeout     = 120 * time.Second
	DefaultLLMBackoff     = 500 * time.Millisecond
)

// ToolExecutor decides one tool call and sends what it decided;
// *engine.Executor implements it. The run renders the verdict: a
// result, a refusal, a wait for a person or for the user to connect.
type ToolExecutor interface {
	Decide(ctx context.Context, call engine.Call) (*engine.Plan, error)
	Send(ctx context.Context, plan *engine.Plan) (*engine.Result, error)
}

// Offerer tells which of a run's catalog tools its subject may use now
// (*engine.Executor.Usable): the user's grants, the token's perms as they
// are (engine.Call.Token), the payload's, the agent. A tool it leaves out
// is not offered at that model call: a token narrowed during a run is not
// shown what it may no longer use, one widened is shown what it now may.
type Offerer interface {
	Usable(ctx context.Context, call engine.Call, ps []*plugins.Plugin) ([]*plugins.Plugin, error)
}

// Request is one run: the conversation so far and what the model may use.
type Request struct {
	UserID      int64                          `json:"user_id"`
	Messages    []openai.ChatCompletionMessage `json:"messages"`
	Plugins     []*plugins.Plugin              `json:"plugins"`
	Credentials map[string]string              `json:"credentials,omitempty"`
	// FixedParams are argument values per plugin name, hidden from the
	// model and merged into its arguments where the plugin's own leave a
	// declared parameter open (engine.Call.FixedParams).
	FixedParams map[string]map[string]any `json:"fixed_params,omitempty"`
	// Model is a model name only: the endpoint and key are the operator's.
	Model   string  `json:"model,omitempty"`
	Options Options `json:"options"`
	RunID   string  `json:"run_id,omitempty"` // generated when empty
	// Inline marks the plugins the payload defined itself
	// (engine.Call.Inline), as opposed to those named from the catalog.
	Inline map[*plugins.Plugin]bool `json:"-"`
	// Owner is the principal that started the run (engine.Call.Owner):
	// on a resume too, whoever resumes it.
	Owner engine.Owner `json:"-"`
	// Narrow are the run's further sources of the user's permission
	// strings (engine.Call.Narrow): a service payload's, a token's.
	Narrow []access.Held `json:"-"`
	// Token is the per-user token the run's calls name
	// (engine.Call.Token): its perms are read at each call, not copied
	// into Narrow.
	Token int64 `json:"-"`
	// Agent is the agent the run is within (engine.Call.Agent): every
	// call is refused outside it, whatever the model names.
	Agent string `json:"-"`
}

// Options tune the loop.
type Options struct {
	// MaxSteps bounds the model calls (DefaultMaxSteps when 0, at most
	// MaxMaxSteps).
	MaxSteps    int      `json:"max_steps,omitempty"`
	Temperature *float32 `json:"temperature,omitempty"`
	// ToolChoice is "auto", "none", "required" or
	// {"type":"function","function":{"name":...}}. It applies to the first
	// model call only; later calls use the default (auto), since a choice
	// that forces a tool would otherwise never let the model answer.
	ToolChoice        any   `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	// Stream calls the model in streaming mode and emits message.delta
	// events as the content arrives.
	Stream bool `json:"stream,omitempty"`
	// ToolSearch is "auto", "always" or "off": whether the model gets
	// the meta-tool search_tools and the tools its searches find instead
	// of every tool (auto: when the enabled tools outnumber the
	// threshold). Empty: the Runner's setting (BLINDEXEC_TOOL_SEARCH).
	ToolSearch string `json:"tool_search,omitempty"`
	// PinnedTools are shown to the model beside search_tools whenever
	// tool search is on.
	PinnedTools []string `json:"pinned_tools,omitempty"`
	// Confirm asks for more confirmation than the Runner's policy
	// ("always"), never less (issue 33).
	Confirm string `json:"confirm,omitempty"`
}

// Run statuses.
const (
	StatusCompleted = "completed"
	StatusMaxSteps  = "max_steps"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	// StatusBudgetExhausted: the user's run token budget (a quota rule)
	// is spent; the run stops before its next model call, its messages
	// kept.
	StatusBudgetExhausted = "budget_exhausted"
	// StatusPaused: a call waits for a person (Reply.Pending); the run
	// goes on when the caller resumes it (Runner.Resume).
	StatusPaused = "paused"
)

// Step statuses.
const (
	StepOK          = "ok"
	StepError       = "error"   // executed, and failed (HTTP error, timeout...)
	StepRefused     = "refused" // nothing sent: invalid arguments, missing credentials...
	StepUnknownTool = "unknown_tool"
	StepInvalidJSON = "invalid_json"
	// StepNotExecuted is a tool call past MaxToolCalls of its turn.
	StepNotExecuted = "not_executed"
)

// Step is one tool call of the run.
type Step struct {
	Index      int    `json:"index"` // 1-based, in the order the model asked
	Turn       int    `json:"turn"`  // the model call (1-based) that asked
	Tool       string `json:"tool"`
	ToolCallID string `json:"tool_call_id"`
	// Arguments as the model gave them; a JSON string when they are not
	// valid JSON.
	Arguments   json.RawMessage `json:"arguments"`
	Status      string          `json:"status"`
	HTTPStatus  int             `json:"http_status,omitempty"`
	LatencyMS   int64           `json:"latency_ms"`
	Attempts    int             `json:"attempts,omitempty"`
	ExecutionID string          `json:"execution_id,omitempty"`
	Error       string          `json:"error,omitempty"` // "code: message", masked
	// Found are the tools a search_tools step found, best first.
	Found []string `json:"found,omitempty"`
	// Decision is set on a call that waited for a person.
	Decision *StepDecision `json:"decision,omitempty"`
}

// Error codes of a RunError.
const (
	CodeInvalidRequest = "invalid_request"
	CodeLLMError       = "llm_error"
	CodeLLMTimeout     = "llm_timeout"
	CodeCancelled      = "cancelled"
	CodeInternal       = "internal_error"
	CodeBudget         = "budget_exhausted"
	// CodeTooManyPending and CodePendingTooLarge end a run whose pause
	// the pending items' bounds refused (issue 44): nothing was sent.
	CodeTooManyPending  = "too_many_pending"
	CodePendingTooLarge = "pending_too_large"
	// CodePermissionsUnavailable ends a run whose tools' permissions
	// cannot be read at a model call (Runner.Offer): its calls would be
	// refused for the same reason.
	CodePermissionsUnavailable = "permissions_unavailable"
)

// RunError is why a run failed or was cancelled.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *RunError) Error() string { return e.Code + ": " + e.Message }

// HTTPStatus is the status an API answers a failed run with: 502 for an
// upstream LLM failure, 504 for its timeout.
func (e *RunError) HTTPStatus() int {
	switch e.Code {
	case CodeInvalidRequest:
		return http.StatusBadRequest
	case CodeLLMError:
		return http.StatusBadGateway
	case CodeLLMTimeout:
		return http.StatusGatewayTimeout
	case CodeCancelled:
		return 499 // client closed request (nginx): nobody reads it anyway
	case CodeTooManyPending:
		return http.StatusTooManyRequests
	case CodePendingTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodePermissionsUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Reply is the outcome of a run, complete or partial; it is the API body.
type Reply struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	// Message is the final assistant message; with status max_steps, the
	// last one (which asks for tools). Nil when no model call succeeded.
	Message *openai.ChatCompletionMessage `json:"message"`
	// Messages are every message the run appended to the request's:
	// assistant messages and tool results.
	Messages []openai.ChatCompletionMessage `json:"messages"`
	Steps    []Step                         `json:"steps"`
	Usage    openai.Usage                   `json:"usage"` // summed over model calls
	Error    *RunError                      `json:"error,omitempty"`
	// Cut is set on a stored reply whose longest texts were cut to fit
	// the database (MarshalWithin).
	Cut bool `json:"cut,omitempty"`
	// Pending are the calls waiting for a person, with status paused.
	Pending []Pending `json:"pending,omitempty"`
	// Saved is what resuming a paused run needs, with status paused:
	// stored by the caller, never shown.
	Saved *Saved `json:"-"`
}

// Event names, in the order a run emits them.
const (
	EventRunStarted    = "run.started"    // Data: RunStarted
	EventMessageDelta  = "message.delta"  // Data: MessageDelta
	EventToolStarted   = "tool.started"   // Data: ToolStarted
	EventToolCompleted = "tool.completed" // Data: Step
	EventToolSearch    = "tool.search"    // Data: ToolSearch (a search_tools call, in place of tool.started and tool.completed)
	EventRunCompleted  = "run.completed"  // Data: *Reply (completed, max_steps)
	EventRunFailed     = "run.failed"     // Data: *Reply (failed, cancelled)
	EventRunPaused     = "run.paused"     // Data: *Reply (paused: the pending calls)
)

// Event is a progress notification of a run.
type Event struct {
	Name string `json:"name"`
	Data any    `json:"data"`
}

// RunStarted is the data of run.started.
type RunStarted struct {
	RunID string `json:"run_id"`
	Model string `json:"model"`
	// Tools are those the model is first shown: with tool search on,
	// search_tools and the pinned tools.
	Tools []string `json:"tools"`
	// Searchable is the number of tools behind search_tools; 0 when tool
	// search is off.
	Searchable int `json:"searchable,omitempty"`
}

// ToolSearch is the data of tool.search: one search_tools call.
type ToolSearch struct {
	Index      int    `json:"index"`
	Turn       int    `json:"turn"`
	ToolCallID string `json:"tool_call_id"`
	Query      string `json:"query"`
	Limit      int    `json:"limit"`
	// Results are the tools found, best first.
	Results []SearchResult `json:"results"`
	// Loaded are the tools added to the model's tools from the next
	// model call on; Dropped, those taken out to stay within the
	// threshold (the least recently used).
	Loaded    []string `json:"loaded"`
	Dropped   []string `json:"dropped"`
	LatencyMS float64  `json:"latency_ms"`
	Error     string   `json:"error,omitempty"` // invalid arguments
}

// SearchResult is one tool a search found.
type SearchResult struct {
	Name  string  `json:"name"`
	Title string  `json:"title,omitempty"`
	Score float64 `json:"score"`
}

// MessageDelta is the data of message.delta: content text as it streams.
type MessageDelta struct {
	Turn    int    `json:"turn"`
	Content string `json:"content"`
}

// ToolStarted is the data of tool.started.
type ToolStarted struct {
	Index      int             `json:"index"`
	Turn       int             `json:"turn"`
	Tool       string          `json:"tool"`
	ToolCallID string          `json:"tool_call_id"`
	Arguments  json.RawMessage `json:"arguments"`
}

// Runner runs requests against one model endpoint and executor. Its fields
// are settings: set them before the first Run and leave them afterwards.
type Runner struct {
	// Client is the operator's model endpoint. Build it with NewClient so
	// that Retry-After is honoured.
	Client   *openai.Client
	Executor ToolExecutor
	// Offer narrows a run's tools, at each model call, to those its
	// subject may use then (*engine.Executor); nil: the request's tools
	// are offered whole, as given.
	Offer        Offerer
	DefaultModel string // when the request names none
	// MaxConcurrency bounds the tool calls of one turn running at once
	// (DefaultMaxConcurrency when 0).
	MaxConcurrency int
	// LLMRetries bounds the retries of a model call answered 429 or 5xx
	// (DefaultLLMRetries when 0, none when negative).
	LLMRetries int
	// LLMTimeout bounds each model call, a stream included
	// (DefaultLLMTimeout when 0).
	LLMTimeout time.Duration
	// LLMBackoff is the first wait before a retry; it doubles each time
	// (DefaultLLMBackoff when 0). A Retry-After header replaces it.
	LLMBackoff time.Duration
	// MaxResponseBytes bounds one model answer's body, read through a
	// client built by NewClient (DefaultMaxResponseBytes when 0;
	// BLINDEXEC_LLM_MAX_RESPONSE_BYTES).
	MaxResponseBytes int64
	// MaxToolCalls bounds the tool calls executed per turn; the rest are
	// answered as not executed (DefaultMaxToolCalls when 0;
	// BLINDEXEC_LLM_MAX_TOOL_CALLS).
	MaxToolCalls int
	// ToolSearch is the operator's tool search setting: the default mode
	// and the threshold (BLINDEXEC_TOOL_SEARCH, _THRESHOLD).
	ToolSearch toolset.Config
	// NewIndex builds the search index over a run's tools when tool
	// search is on (nil: toolsearch.New).
	NewIndex func([]*plugins.Plugin) (toolset.Searcher, error)
	Logger   *slog.Logger // nil: slog.Default()
	// Confirm is the operator's confirmation policy (BLINDEXEC_CONFIRM):
	// which calls wait for a person. Empty is confirm.Never, a library's
	// default; serve's is confirm.Consequential.
	Confirm confirm.Policy
	// ConfirmTTL is how long a pending call waits (confirm.DefaultTTL
	// when 0).
	ConfirmTTL time.Duration
	// Budget holds the users' run token budgets (*quota.Keeper); nil:
	// none.
	Budget Budget
	// Connector gives a run's user a start URL when a call needs an
	// account the user has not connected (issue 34): the run pauses on
	// an authorization. nil: the model reads connection_required.
	Connector Connector
}

// Budget is the users' run token budgets.
type Budget interface {
	RunTokensLeft(ctx context.Context, user int64) (quota.RunBudget, error)
	SpendRunTokens(ctx context.Context, user, n int64)
}

// Run runs req to its end and returns the reply, whatever happened: a
// failed or cancelled run carries its partial trace. emit, which may be
// nil, receives the progress events from Run's goroutine, in order.
func (r *Runner) Run(ctx context.Context, req Request, emit func(Event)) (reply *Reply) {
	if emit == nil {
		emit = func(Event) {}
	}
	s := &state{
		r:    r,
		req:  req,
		emit: emit,
		log:  cmp.Or(r.Logger, slog.Default()),
		reply: &Reply{
			RunID:    cmp.Or(req.RunID, uuid.Must(uuid.NewV7()).String()),
			Messages: []openai.ChatCompletionMessage{},
			Steps:    []Step{},
		},
	}
	s.log = s.log.With("run", s.reply.RunID)
	ctx, span := s.startRun(ctx)
	defer func() { endRun(span, reply) }() // after the recovery below
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("run panicked", "panic", p)
			// emit itself may have panicked: the last event must not.
			emit := s.emit
			s.emit = func(e Event) {
				defer func() { recover() }()
				emit(e)
			}
			reply = s.end(StatusFailed, &RunError{Code: CodeInternal, Message: fmt.Sprint("internal error: ", p)})
		}
	}()
	if err := req.Validate(); err != nil {
		return s.end(StatusFailed, &RunError{Code: CodeInvalidRequest, Message: err.Error()})
	}
	return s.run(ctx)
}

// state is one run in progress.
type state struct {
	r       *Runner
	req     Request
	emit    func(Event)
	log     *slog.Logger
	reply   *Reply
	tools   map[string]*plugins.Plugin // bound (enabled) plugins by name
	enabled []*plugins.Plugin          // the same, in the request's order
	// offered are those of tools offered at the model call (offer):
	// what a call may name, and the model is shown.
	offered map[string]*plugins.Plugin
	// converted are the tools as the model sees them, by name (tool).
	converted map[string]openai.Tool
	// search is the deferred loading state; nil when tool search is off.
	search *deferred
	// policy is the run's confirmation policy; pending, the calls of
	// the turn that wait for a person.
	policy  confirm.Policy
	pending []Pending
}

// CheckModel says what is wrong with a request naming model (none: ""),
// nil when the run has a model: the request's, else the default.
func (r *Runner) CheckModel(model string) *plugins.FieldError {
	if model != "" || r.DefaultModel != "" {
		return nil
	}
	return &plugins.FieldError{Field: "model", Message: "required: none is given and no default model is configured (BLINDEXEC_LLM_MODEL)"}
}

func (s *state) run(ctx context.Context) *Reply {
	if fe := s.r.CheckModel(s.req.Model); fe != nil {
		return s.end(StatusFailed, &RunError{Code: CodeInvalidRequest, Message: fe.Field + ": " + fe.Message})
	}
	model := cmp.Or(s.req.Model, s.r.DefaultModel)
	if err := s.bind(); err != nil {
		return s.end(StatusFailed, err)
	}
	if err := s.setPolicy(); err != nil {
		return s.end(StatusFailed, err)
	}
	if err := s.offer(ctx); err != nil {
		return s.end(StatusFailed, err)
	}
	tools := s.visible()
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Function.Name
	}
	started := RunStarted{RunID: s.reply.RunID, Model: model, Tools: names}
	if s.search != nil {
		started.Searchable = len(s.offered)
	}
	s.emit(Event{EventRunStarted, started})
	s.log.Info("run started", "model", model, "tools", len(s.tools), "tool_search", s.search != nil, "stream", s.req.Options.Stream)

	msgs := append([]openai.ChatCompletionMessage(nil), s.req.Messages...)
	return s.turns(ctx, model, msgs, 1)
}

// turns runs the model from turn on, msgs the conversation so far.
func (s *state) turns(ctx context.Context, model string, msgs []openai.ChatCompletionMessage, first int) *Reply {
	maxSteps := cmp.Or(s.req.Options.MaxSteps, DefaultMaxSteps)
	for turn := first; ; turn++ {
		if turn > maxSteps {
			return s.end(StatusMaxSteps, nil)
		}
		if err := s.offer(ctx); err != nil {
			return s.end(StatusFailed, err)
		}
		creq := s.chatRequest(model, msgs, s.visible(), turn)
		budget, stop := s.budget(ctx)
		if stop != nil {
			if ctx.Err() != nil { // the budget went unread because the run ended
				return s.end(s.failure(ctx, ctx.Err()))
			}
			return s.end(StatusBudgetExhausted, stop)
		}
		if budget.Limited {
			// The answer may not outspend what is left; the prompt may
			// (the overshoot of one model call per concurrent run).
			// max_tokens, not max_completion_tokens: the OpenAI-compatible
			// endpoints RuoYi sites use (Qwen, vLLM, DeepSeek) read it.
			//lint:ignore SA1019 see above
			creq.MaxTokens = int(min(budget.Left, math.MaxInt32))
		}
		spent := s.reply.Usage.TotalTokens
		msg, err := s.complete(ctx, creq, turn)
		if budget.Limited && (err == nil || mayHaveSpent(err)) {
			n := int64(s.reply.Usage.TotalTokens - spent)
			if n == 0 {
				n = estimateTokens(creq, msg) // the endpoint reported no usage
			}
			s.r.Budget.SpendRunTokens(context.WithoutCancel(ctx), s.req.UserID, n)
		}
		if err != nil {
			return s.end(s.failure(ctx, err))
		}
		for i := range msg.ToolCalls {
			if msg.ToolCalls[i].ID == "" { // some servers leave it out; a tool result needs one
				msg.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", turn, i+1)
			}
			msg.ToolCalls[i].Index = nil
		}
		msgs = append(msgs, msg)
		s.reply.Messages = append(s.reply.Messages, msg)
		s.reply.Message = &msg
		if len(msg.ToolCalls) == 0 {
			return s.end(StatusCompleted, nil)
		}
		results := s.execute(ctx, turn, msg.ToolCalls)
		msgs = append(msgs, results...)
		s.reply.Messages = append(s.reply.Messages, results...)
		if ctx.Err() != nil {
			return s.end(s.failure(ctx, ctx.Err()))
		}
		if len(s.pending) > 0 {
			return s.pause(model, msgs, turn)
		}
	}
}

// budget returns the user's run token budget before a model call, and
// the error that stops the run when it is spent or cannot be read.
func (s *state) budget(ctx context.Context) (quota.RunBudget, *RunError) {
	if s.r.Budget == nil {
		return quota.RunBudget{}, nil
	}
	b, err := s.r.Budget.RunTokensLeft(ctx, s.req.UserID)
	switch {
	case err != nil:
		return b, &RunError{Code: CodeBudget, Message: err.Error()}
	case b.Limited && b.Left <= 0:
		return b, &RunError{Code: CodeBudget, Message: b.Exhausted()}
	}
	return b, nil
}

// mayHaveSpent reports whether a failed model call may have spent tokens:
// the endpoint had the request — the run cancelled (its client gone) or
// timed out while it answered, an answer too large or malformed — unless
// it answered an error status or was never reached. Such a call is
// counted (its usage, else its estimate), or a client disconnecting
// before each answer ran the model without end on a spent budget.
func mayHaveSpent(err error) bool {
	if status, _ := retryable(err); status != 0 {
		return false
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}

// estimateTokens is what a model call spent when its endpoint reports no
// usage: about 4 bytes of JSON a token, the request's messages and tools
// and the answer.
func estimateTokens(creq openai.ChatCompletionRequest, msg openai.ChatCompletionMessage) int64 {
	in, _ := json.Marshal(creq.Messages)
	tools, _ := json.Marshal(creq.Tools)
	out, _ := json.Marshal(msg)
	return int64(len(in)+len(tools)+len(out))/4 + 1
}

// chatRequest is the model call of turn: the messages, the tools and the
// options. Nothing else of the request goes into it.
func (s *state) chatRequest(model string, msgs []openai.ChatCompletionMessage, tools []openai.Tool, turn int) openai.ChatCompletionRequest {
	o := s.req.Options
	creq := openai.ChatCompletionRequest{Model: model, Messages: msgs}
	if o.Temperature != nil {
		// go-openai leaves out a zero temperature (omitempty); its
		// documented way to send 0 is the smallest non-zero float.
		creq.Temperature = max(*o.Temperature, math.SmallestNonzeroFloat32)
	}
	if len(tools) > 0 {
		creq.Tools = tools
		if turn == 1 {
			creq.ToolChoice = o.ToolChoice
		}
		if o.ParallelToolCalls != nil {
			creq.ParallelToolCalls = *o.ParallelToolCalls
		}
	}
	if o.Stream {
		creq.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	return creq
}

// bind takes the enabled plugins as the run's tools, and sets tool search
// up when they are too many to show.
func (s *state) bind() *RunError {
	s.tools = make(map[string]*plugins.Plugin, len(s.req.Plugins))
	s.converted = make(map[string]openai.Tool)
	for _, p := range s.req.Plugins {
		if p.Enabled() {
			s.tools[p.Name] = p
			s.enabled = append(s.enabled, p)
		}
	}
	s.offered = s.tools
	mode, _ := toolset.ParseMode(s.req.Options.ToolSearch) // Validate checked it
	if !s.r.ToolSearch.Search(mode, len(s.enabled)) {
		return nil
	}
	return s.deferLoading(s.enabled)
}

// offer takes the tools offered at the next model call: the run's inline
// plugins, and those of its catalog tools its subject may use now
// (Runner.Offer). A refusal of them all (the run's agent disabled, or no
// longer its user's) offers none of them; permissions that cannot be read
// end the run, as they would refuse its calls.
func (s *state) offer(ctx context.Context) *RunError {
	if s.r.Offer == nil {
		return nil
	}
	var rows []*plugins.Plugin
	offered := make(map[string]*plugins.Plugin, len(s.tools))
	for _, p := range s.enabled {
		if s.req.Inline[p] {
			offered[p.Name] = p
		} else {
			rows = append(rows, p)
		}
	}
	usable, err := s.r.Offer.Usable(ctx, s.engineCall(nil, ""), rows)
	if err != nil {
		_, denied := errors.AsType[*access.DeniedError](err)
		if _, ok := errors.AsType[*catalog.AgentError](err); !ok && !denied {
			return &RunError{Code: CodePermissionsUnavailable, Message: "the tools the run may use could not be told: " + err.Error()}
		}
		s.log.Info("run offers none of its catalog tools", "err", err)
		usable = nil
	}
	for _, p := range usable {
		offered[p.Name] = p
	}
	if maps.EqualFunc(offered, s.offered, func(a, b *plugins.Plugin) bool { return a == b }) {
		return nil
	}
	s.offered = offered
	return s.searchLanguages()
}

// tool is p as the model sees it: name, description and the parameters
// without those the fixed params bind; converted once a run.
func (s *state) tool(p *plugins.Plugin) openai.Tool {
	if t, ok := s.converted[p.Name]; ok {
		return t
	}
	t := p.Tool(s.req.FixedParams[p.Name])
	out := openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name:        t.Function.Name,
		Description: t.Function.Description,
		Parameters:  t.Function.Parameters,
		Strict:      t.Function.Strict,
	}}
	s.converted[p.Name] = out
	return out
}

// end finishes the reply with status and err and emits the last event.
func (s *state) end(status string, err *RunError) *Reply {
	s.reply.Status = status
	s.reply.Error = err
	name := EventRunCompleted
	switch status {
	case StatusFailed, StatusCancelled:
		name = EventRunFailed
	case StatusPaused:
		name = EventRunPaused
	}
	level := slog.LevelInfo
	if status == StatusFailed {
		level = slog.LevelWarn
	}
	attrs := []any{"status", status, "steps", len(s.reply.Steps), "total_tokens", s.reply.Usage.TotalTokens}
	if err != nil {
		attrs = append(attrs, "code", err.Code, "error", err.Message)
	}
	s.log.Log(context.Background(), level, "run ended", attrs...)
	s.emit(Event{name, s.reply})
	return s.reply
}

// addUsage sums u into the reply's usage.
func (s *state) addUsage(u *openai.Usage) {
	if u == nil {
		return
	}
	t := &s.reply.Usage
	t.PromptTokens += u.PromptTokens
	t.CompletionTokens += u.CompletionTokens
	t.TotalTokens += u.TotalTokens
	if d := u.PromptTokensDetails; d != nil {
		if t.PromptTokensDetails == nil {
			t.PromptTokensDetails = new(openai.PromptTokensDetails)
		}
		t.PromptTokensDetails.AudioTokens += d.AudioTokens
		t.PromptTokensDetails.CachedTokens += d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		if t.CompletionTokensDetails == nil {
			t.CompletionTokensDetails = new(openai.CompletionTokensDetails)
		}
		t.CompletionTokensDetails.AudioTokens += d.AudioTokens
		t.CompletionTokensDetails.ReasoningTokens += d.ReasoningTokens
		t.CompletionTokensDetails.AcceptedPredictionTokens += d.AcceptedPredictionTokens
		t.CompletionTokensDetails.RejectedPredictionTokens += d.RejectedPredictionTokens
	}
}
