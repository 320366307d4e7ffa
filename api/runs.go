package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/tracing"
)

// RunRequest is the runtime payload RuoYi POSTs to /v1/runs (seed 001
// §四). The model endpoint and key are the operator's (BLINDEXEC_LLM_*):
// a payload names a model, nothing else about the LLM.
type RunRequest struct {
	UserID   UserID                         `json:"user_id"`
	Messages []openai.ChatCompletionMessage `json:"messages"`
	// Plugins are full protocol v1 documents; PluginNames are loaded from
	// the catalog. Both may be given.
	Plugins     []json.RawMessage         `json:"plugins,omitempty"`
	PluginNames []string                  `json:"plugin_names,omitempty"`
	Credentials map[string]string         `json:"credentials,omitempty"`
	FixedParams map[string]map[string]any `json:"fixed_params,omitempty"`
	Model       string                    `json:"model,omitempty"`
	Options     loop.Options              `json:"options"`
	// User is RuoYi's logged-in user, from the service or admin token
	// only: its permissions narrow what the run may use (issue 46).
	User *PayloadUser `json:"user,omitempty"`
	// Agent names the agent the run is within (issue 46): the run offers
	// the agent's tools (those of plugin_names when given too) that the
	// user may use, and every call outside them is refused.
	Agent string `json:"agent,omitempty"`
}

// runTimeout bounds a whole run, whatever the model and tools do.
const runTimeout = 10 * time.Minute

func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	var req RunRequest
	if !decodeStrict(w, r, &req) {
		return
	}
	user, ok := actingUser(w, r, req.UserID)
	if !ok || !fixedParamsAllowed(w, r, len(req.FixedParams) > 0) || !payloadUserAllowed(w, r, req.UserID, req.User) {
		return
	}
	started := startedBy(principalFrom(r.Context()))
	lreq, fields, err := s.loopRequest(r.Context(), &req, user, started)
	if err != nil {
		if unavailable(w, err) || refusedAgent(w, err) {
			return
		}
		s.internal(w, r, err)
		return
	}
	if len(fields) == 0 {
		var ve *loop.ValidationError
		if errors.As(lreq.Validate(), &ve) {
			fields = ve.Fields
		}
	}
	var policy confirm.Policy
	if s.Runner != nil {
		policy = s.Runner.Confirm
		if fe := s.Runner.CheckModel(req.Model); fe != nil {
			fields = append(fields, *fe)
		}
	}
	if _, err := cmp.Or(policy, confirm.Never).Stricter(req.Options.Confirm); err != nil {
		fields = append(fields, plugins.FieldError{Field: "options.confirm", Message: err.Error()})
	}
	if len(fields) > 0 {
		writeError(w, http.StatusBadRequest, "invalid_payload", (&loop.ValidationError{Fields: fields}).Error(), map[string]any{"fields": fields})
		return
	}
	// Checked after the payload, so that a caller wiring its payloads up
	// before an LLM is configured is told what is wrong with them.
	if s.Runner == nil {
		writeError(w, http.StatusServiceUnavailable, "llm_not_configured", "no LLM endpoint is configured (BLINDEXEC_LLM_BASE_URL)", nil)
		return
	}
	release, err := s.Executor.Limiter.AcquireRun(user)
	var le *engine.LimitError
	if errors.As(err, &le) {
		tooMany(w, le.Error(), le.RetryAfter, map[string]any{"limit": "concurrent runs per user", "max": le.Max})
		return
	}
	defer release()
	stream := req.Options.Stream || strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	lreq.Options.Stream = stream
	lreq.RunID = uuid.Must(uuid.NewV7()).String()

	var uid *int64
	if user != 0 {
		uid = &user
	}
	run := &store.Run{ID: lreq.RunID, UserID: uid, Status: store.RunRunning, Model: lreq.Model, TraceID: tracing.TraceID(r.Context())}
	if p := principalFrom(r.Context()); p.tokenID != 0 {
		run.TokenID = &p.tokenID
	}
	kept := loop.StoredMessages(req.Messages)
	run.Messages, run.FirstMessage, run.Asked = kept.Messages, kept.First, kept.Asked
	if err := s.Store.SaveRun(r.Context(), run); err != nil {
		s.internal(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(s.asking(r.Context(), principalFrom(r.Context()), nil), runTimeout)
	defer cancel()

	var reply *loop.Reply
	if stream {
		reply = s.stream(w, func(emit func(loop.Event)) *loop.Reply { return s.Runner.Run(ctx, *lreq, emit) })
	} else {
		reply = s.Runner.Run(ctx, *lreq, nil)
	}
	// The client may be gone (a cancelled run): store it all the same.
	s.finishRun(context.WithoutCancel(r.Context()), run, req, started, reply)
	if !stream {
		writeJSON(w, runStatus(reply), reply)
	}
}

// loopRequest builds the loop's request from the payload, for the run
// started by started, whose token's perms and payload's user narrow it
// (never the perms of whoever resumes it): inline plugins parsed and
// marked so, named ones loaded, within the payload's agent. Field errors
// name the payload's field; an agent the run may not use is the access
// rule's error.
func (s *Server) loopRequest(ctx context.Context, req *RunRequest, user int64, started runPrincipal) (*loop.Request, []plugins.FieldError, error) {
	var fields []plugins.FieldError
	out := &loop.Request{UserID: user, Messages: req.Messages, Credentials: req.Credentials,
		FixedParams: req.FixedParams, Model: req.Model, Options: req.Options, Owner: started.owner(),
		Narrow: sources(started.Perms, req.User), Agent: req.Agent}
	// The run's calls name its token, decided with its perms as they are
	// at each call, and each model call is offered what they allow then
	// (loop.Runner.Offer): the run's tools are those its user may use,
	// whatever the token's perms, so that a token widened during the run
	// is offered what it now may.
	offered := out.Narrow
	if started.Token != 0 {
		out.Token, out.Narrow = started.Token, sources(nil, req.User)
	}
	for i, raw := range req.Plugins {
		p, errs, err := parseInline(raw, fmt.Sprintf("plugins[%d]", i), "plugin_names")
		switch {
		case errs != nil:
			fields = append(fields, errs...)
		case err != nil:
			fields = append(fields, plugins.FieldError{Field: fmt.Sprintf("plugins[%d]", i), Message: err.Error()})
		default:
			out.Plugins = append(out.Plugins, p)
			if out.Inline == nil {
				out.Inline = map[*plugins.Plugin]bool{}
			}
			out.Inline[p] = true
		}
	}
	// From the parsed catalog: no query, and the catalog's own plugins, so
	// that a run bound to all of them searches the catalog's index.
	named := make([]*plugins.Plugin, 0, len(req.PluginNames))
	if req.Agent != "" && len(req.PluginNames) == 0 {
		// The agent's tools: narrowed to it below.
		enabled, err := s.Catalog.EnabledPlugins(ctx)
		if err != nil {
			return nil, nil, err
		}
		named = append(named, enabled...)
	}
	for i, name := range req.PluginNames {
		field := fmt.Sprintf("plugin_names[%d]", i)
		p, err := s.Catalog.Plugin(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			fields = append(fields, plugins.FieldError{Field: field, Message: fmt.Sprintf("no plugin named %q", name)})
			continue
		case err != nil:
			return nil, nil, err
		}
		if !p.Enabled() {
			fields = append(fields, plugins.FieldError{Field: field, Message: fmt.Sprintf("plugin %q is disabled", name)})
			continue
		}
		named = append(named, p)
	}
	if s.Access == nil && req.Agent != "" {
		return nil, nil, &access.UnavailableError{Source: "agents", Err: access.ErrNoAgents}
	}
	if s.Access != nil {
		// The model is offered only what the user may use, within the
		// agent: a tool it names anyway is one it was not offered, and
		// the executor refuses it (an inline plugin is judged when
		// called, as the row of its name).
		sub := access.Subject{User: user, Narrow: offered, Agent: req.Agent}
		if req.Agent != "" {
			if _, err := s.Access.UseAgent(ctx, sub); err != nil {
				return nil, nil, err // an agent the token may not use now
			}
		}
		var err error
		if named, err = s.Access.Usable(ctx, access.Subject{User: user, Narrow: out.Narrow, Agent: req.Agent}, named); err != nil {
			return nil, nil, err
		}
		if req.Agent != "" && len(out.Plugins) > 0 {
			// Inline plugins within the agent: those named like one of
			// its tools the user may use; any other is refused here,
			// rather than offered to be refused when called.
			kept, err := s.Access.Usable(ctx, sub, out.Plugins)
			if err != nil {
				return nil, nil, err
			}
			for i, p := range out.Plugins {
				if !slices.Contains(kept, p) {
					fields = append(fields, plugins.FieldError{Field: fmt.Sprintf("plugins[%d]", i),
						Message: fmt.Sprintf("%q is not among the tools of agent %q this user may use", p.Name, req.Agent)})
				}
			}
		}
	}
	out.Plugins = append(out.Plugins, named...)
	return out, fields, nil
}

// stream answers with server-sent events: one per loop event of run, the
// last (run.completed, run.failed or run.paused) carrying the reply.
func (s *Server) stream(w http.ResponseWriter, run func(emit func(loop.Event)) *loop.Reply) *loop.Reply {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	rc.Flush()
	return run(func(ev loop.Event) {
		data, err := json.Marshal(ev.Data)
		if err != nil {
			data, _ = json.Marshal(map[string]string{"error": err.Error()})
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Name, data)
		rc.Flush()
	})
}

// saveReply stores the run's reply, its longest texts cut to fit the
// database when they must.
func (s *Server) saveReply(ctx context.Context, run *store.Run, reply *loop.Reply) {
	body, err := loop.MarshalWithin(reply, store.MaxRunReply)
	if err == nil {
		run.Reply = body
	}
	run.Status = reply.Status
	if reply.Error != nil {
		run.ErrorCode = reply.Error.Code
	}
	if err := s.Store.SaveRun(ctx, run); err != nil {
		s.Logger.ErrorContext(ctx, "store run", "run", run.ID, "err", err)
	}
}

// getRun answers a stored run: the reply body it answered with, or
// {run_id, status: running} while it goes on, with what the run keeps of
// its request (request_messages) and its user, trace and times.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	sn, ok := s.seenOf(w, r)
	if !ok {
		return
	}
	run, err := s.Store.GetRun(r.Context(), r.PathValue("run_id"))
	if errors.Is(err, store.ErrNotFound) || err == nil && !sn.run(run) {
		writeError(w, http.StatusNotFound, "run_not_found", fmt.Sprintf("no run %q", r.PathValue("run_id")), nil)
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := map[string]json.RawMessage{}
	if len(run.Reply) > 0 {
		if err := json.Unmarshal(run.Reply, &out); err != nil {
			s.internal(w, r, fmt.Errorf("run %s: stored reply: %w", run.ID, err))
			return
		}
	} else {
		out["run_id"], _ = json.Marshal(run.ID)
		out["status"], _ = json.Marshal(run.Status)
	}
	if len(run.Messages) > 0 {
		out["request_messages"] = json.RawMessage(run.Messages)
	}
	if run.UserID != nil {
		out["user_id"], _ = json.Marshal(*run.UserID)
		if n := s.userNames(r.Context(), []int64{*run.UserID})[*run.UserID]; n != "" {
			out["user_name"], _ = json.Marshal(n)
		}
	}
	if run.TraceID != "" {
		out["trace_id"], _ = json.Marshal(run.TraceID)
	}
	out["create_time"], _ = json.Marshal(run.CreateTime)
	out["update_time"], _ = json.Marshal(run.UpdateTime)
	writeJSON(w, http.StatusOK, out)
}
