package loop

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/plugins"
)

// outcome is what one tool call produced: its step and the tool message
// content the model reads.
type outcome struct {
	step    Step
	content string
	search  *ToolSearch // a search_tools call's event
	// pending is the item the call waits on (a person's confirmation,
	// or the user's connecting an account): no result yet.
	pending *Pending
}

// execute runs the tool calls of one turn, at most MaxConcurrency at once
// and MaxToolCalls in all, and returns their tool messages in the order
// the model asked; those past MaxToolCalls are answered as not executed.
// Once ctx is done no further call starts; those never started have no
// result.
func (s *state) execute(ctx context.Context, turn int, calls []openai.ToolCall) []openai.ChatCompletionMessage {
	maxCalls := cmp.Or(s.r.MaxToolCalls, DefaultMaxToolCalls)
	n := min(len(calls), maxCalls)
	outs := make([]outcome, len(calls))
	done := make(chan int, n)
	limit := cmp.Or(s.r.MaxConcurrency, DefaultMaxConcurrency)
	base := len(s.reply.Steps)
	started, running := 0, 0
	for started < n || running > 0 {
		for running < limit && started < n && ctx.Err() == nil {
			i, tc := started, calls[started]
			st := Step{
				Index:      base + i + 1,
				Turn:       turn,
				Tool:       tc.Function.Name,
				ToolCallID: tc.ID,
				Arguments:  rawArguments(tc.Function.Arguments),
			}
			if s.isSearch(st.Tool) {
				// No I/O, and it changes the tools shown: run it here,
				// in the order the model asked.
				outs[i] = s.searchSpan(ctx, st, func() outcome { return s.searchCall(st, tc.Function.Arguments) })
				done <- i
				started++
				running++
				continue
			}
			// Decided here, in the order the model asked; only the send
			// runs concurrently.
			out, plan := s.decide(ctx, st, tc.Function.Arguments, nil)
			if out.pending == nil || out.pending.Kind != confirm.KindConfirmation {
				s.used(st.Tool)
				s.emit(Event{EventToolStarted, ToolStarted{Index: st.Index, Turn: turn, Tool: st.Tool, ToolCallID: st.ToolCallID, Arguments: st.Arguments}})
			}
			if plan == nil {
				outs[i] = out
				done <- i
				started++
				running++
				continue
			}
			go func() {
				defer func() {
					if p := recover(); p != nil {
						s.log.Error("tool call panicked", "tool", st.Tool, "panic", p)
						outs[i] = failed(st, StepError, &engine.ToolError{Code: CodeInternal, Message: "the engine failed to execute the tool"}, 0)
					}
					done <- i
				}()
				outs[i] = s.send(ctx, st, plan)
			}()
			started++
			running++
		}
		if running == 0 {
			break // cancelled before the rest could start
		}
		i := <-done
		running--
		if ev := outs[i].search; ev != nil {
			s.emit(Event{EventToolSearch, *ev})
			continue
		}
		if outs[i].pending != nil {
			continue
		}
		st := outs[i].step
		s.log.Debug("tool call", "tool", st.Tool, "status", st.Status, "http_status", st.HTTPStatus, "latency_ms", st.LatencyMS)
		s.emit(Event{EventToolCompleted, st})
	}
	if started == n {
		for i := n; i < len(calls); i++ {
			tc := calls[i]
			st := Step{Index: base + i + 1, Turn: turn, Tool: tc.Function.Name, ToolCallID: tc.ID, Arguments: rawArguments(tc.Function.Arguments)}
			outs[i] = failed(st, StepNotExecuted, &engine.ToolError{Code: StepNotExecuted, Message: fmt.Sprintf(
				"not executed: at most %d tool calls are executed per turn (%s); call it again in the next turn if it is still needed", maxCalls, EnvMaxToolCalls)}, 0)
			s.emit(Event{EventToolCompleted, outs[i].step})
		}
		started = len(calls)
	}
	msgs := make([]openai.ChatCompletionMessage, 0, started)
	for i := range started {
		if p := outs[i].pending; p != nil {
			s.pending = append(s.pending, *p) // in the order the model asked
			continue
		}
		s.reply.Steps = append(s.reply.Steps, outs[i].step)
		msgs = append(msgs, openai.ChatCompletionMessage{
			Role:       openai.ChatMessageRoleTool,
			Content:    outs[i].content,
			ToolCallID: calls[i].ID,
		})
	}
	return msgs
}

// decide decides one tool call blind: the plan to send, or (nil plan)
// the outcome it ends with at once — an unknown tool, invalid JSON, a
// refusal, a wait for a person or for the user to connect. Whatever goes
// wrong becomes the tool's output, so that the model can correct itself.
// approval is a person's approval of the call, on a resume.
func (s *state) decide(ctx context.Context, st Step, args string, approval *engine.Approval) (outcome, *engine.Plan) {
	p := s.offered[st.Tool]
	if p == nil {
		msg := fmt.Sprintf("there is no tool named %q; call %s to find the tool for the task", st.Tool, plugins.SearchToolsName)
		if s.search == nil {
			msg = fmt.Sprintf("there is no tool named %q; the tools are: %s", st.Tool, strings.Join(slices.Sorted(maps.Keys(s.offered)), ", "))
		}
		return failed(st, StepUnknownTool, &engine.ToolError{Code: StepUnknownTool, Message: msg}, 0), nil
	}
	if strings.TrimSpace(args) == "" {
		args = "{}" // a call without arguments, as some models send it
	}
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return failed(st, StepInvalidJSON, &engine.ToolError{
			Code:    StepInvalidJSON,
			Message: fmt.Sprintf("the arguments are not valid JSON (%v); send one JSON object that matches the tool's parameters", err),
		}, 0), nil
	}
	c := s.engineCall(p, args)
	c.ToolCallID = st.ToolCallID
	c.Approval = approval
	plan, err := s.r.Executor.Decide(ctx, c)
	switch {
	case plan == nil: // only an executor that breaks its contract
		return s.executed(st, nil, err), nil
	case plan.Verdict() == engine.VerdictPerson:
		return s.held(st, plan), nil
	case err != nil:
		return s.sent(ctx, st, plan.Result(), err), nil
	}
	return outcome{}, plan
}

// send sends a decided call.
func (s *state) send(ctx context.Context, st Step, plan *engine.Plan) outcome {
	res, err := s.r.Executor.Send(ctx, plan)
	return s.sent(ctx, st, res, err)
}

// sent is the outcome of a call sent or refused: a refusal for want of
// the user's connection waits for the user to connect; an approval gone
// stale tells the model so.
func (s *state) sent(ctx context.Context, st Step, res *engine.Result, err error) outcome {
	if refused, ok := errors.AsType[*engine.RefusedError](err); ok && refused.Code == engine.CodeConfirmationStale && st.Decision != nil {
		st.Decision.Outcome = confirm.Stale
		st.Status, st.Error = StepRefused, "not_confirmed: "+confirm.Stale
		return outcome{step: st, content: confirm.Declined(confirm.Stale, "")}
	}
	if res != nil && !res.OK {
		if out, ok := s.connect(ctx, st, res.Error); ok {
			return out
		}
	}
	return s.executed(st, res, err)
}

// engineCall is the executor's call of p with args, for the run's user,
// decided under the run's owner and policy.
func (s *state) engineCall(p *plugins.Plugin, args string) engine.Call {
	var fixed map[string]any
	if p != nil {
		fixed = s.req.FixedParams[p.Name]
	}
	return engine.Call{
		Plugin:      p,
		Arguments:   json.RawMessage(args),
		UserID:      s.req.UserID,
		Credentials: s.req.Credentials,
		FixedParams: fixed,
		RunID:       s.reply.RunID,
		Inline:      s.req.Inline[p],
		Owner:       s.req.Owner,
		Policy:      s.policy,
		Narrow:      s.req.Narrow,
		Token:       s.req.Token,
		Agent:       s.req.Agent,
	}
}

// executed is the outcome of a call the executor ran (or refused).
func (s *state) executed(st Step, res *engine.Result, err error) outcome {
	if res == nil { // only an executor that breaks its contract
		return failed(st, StepError, &engine.ToolError{Code: CodeInternal, Message: fmt.Sprint("the tool could not be executed: ", err)}, 0)
	}
	st.HTTPStatus = res.HTTPStatus
	st.LatencyMS = res.LatencyMS
	st.Attempts = res.Attempts
	st.ExecutionID = res.ExecutionID
	if res.OK {
		st.Status = StepOK
		return outcome{step: st, content: res.Text()}
	}
	status := StepError
	if _, ok := errors.AsType[*engine.RefusedError](err); ok {
		status = StepRefused
	}
	te := res.Error
	if te == nil {
		te = &engine.ToolError{Code: CodeInternal, Message: "the tool failed without an error"}
	}
	return failed(st, status, te, res.HTTPStatus)
}

// failed is the outcome of a call that did not succeed: the content is
// the error as compact JSON, {"error":{"code","message"[,"details"]}
// [,"http_status"]}. The executor masks the error; the others hold no
// secret.
func failed(st Step, status string, te *engine.ToolError, httpStatus int) outcome {
	st.Status = status
	st.Error = te.Error()
	b, err := json.Marshal(struct {
		Error      *engine.ToolError `json:"error"`
		HTTPStatus int               `json:"http_status,omitempty"`
	}{te, httpStatus})
	if err != nil { // Details that do not marshal: leave them out
		b, _ = json.Marshal(map[string]any{"error": map[string]string{"code": te.Code, "message": te.Message}})
	}
	return outcome{step: st, content: string(b)}
}

// rawArguments is the model's argument text for the trace: itself when it
// is JSON, else as a JSON string.
func rawArguments(args string) json.RawMessage {
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(args) // a string always marshals
	return b
}
