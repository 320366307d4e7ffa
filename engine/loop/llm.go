package loop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/httpbody"
)

// maxRetryWait caps one wait between model calls, Retry-After included.
const maxRetryWait = 30 * time.Second

// maxToolCalls bounds the tool-call index a stream may use, so that a
// broken server cannot make the assembler allocate without bound.
const maxToolCalls = 128

// errLLMTimeout is the cause of a model call that ran out of time.
var errLLMTimeout = errors.New("the model call timed out")

// NewClient returns a go-openai client for cfg that reports the
// Retry-After of the model endpoint's answers to the Runner; go-openai's
// errors do not carry headers.
func NewClient(cfg openai.ClientConfig) *openai.Client {
	next := cfg.HTTPClient
	if next == nil {
		next = http.DefaultClient
	}
	cfg.HTTPClient = hintingDoer{next}
	return openai.NewClientWithConfig(cfg)
}

type retryHintKey struct{}

// retryHint is where hintingDoer leaves the wait an answer asked for, and
// learns the most bytes the answer may have.
type retryHint struct {
	after time.Duration
	ok    bool
	// maxBytes bounds the answer's body (a stream's included); over it,
	// the read fails and tooLarge is set.
	maxBytes int64
	tooLarge bool
}

type hintingDoer struct{ next openai.HTTPDoer }

func (d hintingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.next.Do(req)
	if h, _ := req.Context().Value(retryHintKey{}).(*retryHint); h != nil && resp != nil {
		h.after, h.ok = retryAfter(resp.Header, time.Now())
		if h.maxBytes > 0 {
			// A 200 MB tool call argument is refused as it arrives
			// instead of decoded.
			resp.Body = httpbody.Capped(resp.Body, h.maxBytes, func() error {
				h.tooLarge = true
				return &ResponseTooLargeError{Max: h.maxBytes}
			})
		}
	}
	if resp != nil {
		// An endpoint echoing the key: masked before any client reads it.
		auth.MaskEcho(req, resp)
	}
	return resp, err
}

// ResponseTooLargeError is a model answer over Runner.MaxResponseBytes.
type ResponseTooLargeError struct{ Max int64 }

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("the model's answer is over the limit of %d bytes (%s)", e.Max, EnvMaxResponseBytes)
}

// retryAfter reads the wait an answer asks for: OpenAI's retry-after-ms,
// else Retry-After in seconds or as an HTTP date. A number is cut to
// maxRetryWait before it is a Duration: 1e300 ms or 10^10 s overflowed to
// a negative wait, a retry at once.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms >= 0 {
		return time.Duration(min(ms, float64(maxRetryWait/time.Millisecond)) * float64(time.Millisecond)), true
	}
	v := h.Get("Retry-After")
	if secs, err := strconv.Atoi(v); (err == nil || errors.Is(err, strconv.ErrRange)) && secs >= 0 {
		return time.Duration(min(secs, int(maxRetryWait/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// retryWait is the wait before retry number attempt+1: the server's hint,
// else base doubled per attempt with jitter (half to all of it), capped.
func retryWait(attempt int, base time.Duration, hint retryHint) time.Duration {
	if hint.ok {
		return min(hint.after, maxRetryWait)
	}
	d := max(base, 0)
	for i := 0; i < attempt && d < maxRetryWait; i++ { // not base<<attempt: it overflows
		d *= 2
	}
	d = min(d, maxRetryWait)
	return d/2 + rand.N(d/2+1)
}

// retryable reports whether a model call failed in a way worth retrying:
// rate limited, or a server error. Its HTTP status is 0 when it has none.
func retryable(err error) (status int, ok bool) {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status = apiErr.HTTPStatusCode
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
	}
	return status, status == http.StatusTooManyRequests || status >= 500
}

// complete makes the model call of turn, retrying it as Runner says, and
// returns the assistant message.
func (s *state) complete(ctx context.Context, creq openai.ChatCompletionRequest, turn int) (openai.ChatCompletionMessage, error) {
	retries := cmp.Or(s.r.LLMRetries, DefaultLLMRetries)
	for attempt := 0; ; attempt++ {
		hint := &retryHint{maxBytes: cmp.Or(s.r.MaxResponseBytes, DefaultMaxResponseBytes)}
		msg, err := s.attempt(context.WithValue(ctx, retryHintKey{}, hint), creq, turn)
		if err == nil {
			return msg, nil
		}
		if hint.tooLarge { // whatever the decoder made of the cut
			return msg, &ResponseTooLargeError{Max: hint.maxBytes}
		}
		status, ok := retryable(err)
		if !ok || attempt >= retries || ctx.Err() != nil {
			return msg, err
		}
		wait := retryWait(attempt, cmp.Or(s.r.LLMBackoff, DefaultLLMBackoff), *hint)
		s.log.Warn("model call failed, retrying", "turn", turn, "http_status", status, "attempt", attempt+1, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return msg, ctx.Err()
		case <-t.C:
		}
	}
}

// attempt makes one model call within the per-call timeout.
func (s *state) attempt(ctx context.Context, creq openai.ChatCompletionRequest, turn int) (openai.ChatCompletionMessage, error) {
	timeout := cmp.Or(s.r.LLMTimeout, DefaultLLMTimeout)
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, errLLMTimeout)
	defer cancel()
	var msg openai.ChatCompletionMessage
	var err error
	cctx, span := startChat(cctx, &creq, turn)
	defer func(before openai.Usage) { s.endChat(ctx, span, before, err) }(s.reply.Usage)
	if creq.StreamOptions != nil {
		msg, err = s.stream(cctx, creq, turn)
	} else {
		msg, err = s.once(cctx, creq)
	}
	// Whatever error the cut connection produced, say why it was cut.
	if err != nil && ctx.Err() == nil && context.Cause(cctx) == errLLMTimeout {
		err = fmt.Errorf("%w after %v", errLLMTimeout, timeout)
	}
	return msg, err
}

func (s *state) once(ctx context.Context, creq openai.ChatCompletionRequest) (openai.ChatCompletionMessage, error) {
	resp, err := s.r.Client.CreateChatCompletion(ctx, creq)
	if err != nil {
		return openai.ChatCompletionMessage{}, fmt.Errorf("model call: %w", err)
	}
	if len(resp.Choices) == 0 {
		return openai.ChatCompletionMessage{}, errors.New("model call: the response has no choices")
	}
	s.addUsage(&resp.Usage)
	msg := resp.Choices[0].Message
	msg.Role = openai.ChatMessageRoleAssistant
	return msg, nil
}

// stream makes a streaming model call, emitting content deltas, and
// assembles the message.
func (s *state) stream(ctx context.Context, creq openai.ChatCompletionRequest, turn int) (openai.ChatCompletionMessage, error) {
	st, err := s.r.Client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return openai.ChatCompletionMessage{}, fmt.Errorf("model call: %w", err)
	}
	defer st.Close()
	var a assembler
	var usage *openai.Usage
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.addUsage(usage)
			return openai.ChatCompletionMessage{}, fmt.Errorf("model stream: %w", err)
		}
		// Only the final chunk carries usage (with include_usage).
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 { // n is never more than 1 here
				continue
			}
			if err := a.add(c.Delta, c.FinishReason); err != nil {
				return openai.ChatCompletionMessage{}, fmt.Errorf("model stream: %w", err)
			}
			if c.Delta.Content != "" {
				s.emit(Event{EventMessageDelta, MessageDelta{Turn: turn, Content: c.Delta.Content}})
			}
		}
	}
	s.addUsage(usage)
	return a.message()
}

// assembler rebuilds a message from stream deltas. Deltas are decoded JSON
// strings, hence whole characters: concatenating them per tool-call index
// restores the content and every call's argument text exactly.
type assembler struct {
	content strings.Builder
	calls   []*callParts // by index; nil for an index never seen
	finish  openai.FinishReason
}

type callParts struct {
	id, typ, name string
	args          strings.Builder
}

func (a *assembler) add(d openai.ChatCompletionStreamChoiceDelta, finish openai.FinishReason) error {
	a.content.WriteString(d.Content)
	for i, tc := range d.ToolCalls {
		idx := i // servers that leave out index send one call per position
		if tc.Index != nil {
			idx = *tc.Index
		}
		if idx < 0 || idx >= maxToolCalls {
			return fmt.Errorf("tool call index %d out of range", idx)
		}
		for len(a.calls) <= idx {
			a.calls = append(a.calls, nil)
		}
		c := a.calls[idx]
		if c == nil {
			c = new(callParts)
			a.calls[idx] = c
		}
		c.id = cmp.Or(tc.ID, c.id)
		c.typ = cmp.Or(string(tc.Type), c.typ)
		// The name comes whole in the first delta; some relays repeat it.
		c.name = cmp.Or(c.name, tc.Function.Name)
		c.args.WriteString(tc.Function.Arguments)
	}
	if finish != "" {
		a.finish = finish
	}
	return nil
}

func (a *assembler) message() (openai.ChatCompletionMessage, error) {
	if a.finish == "" {
		return openai.ChatCompletionMessage{}, errors.New("model stream: ended without a finish_reason (truncated)")
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: a.content.String()}
	for _, c := range a.calls {
		if c == nil {
			continue
		}
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{
			ID:       c.id,
			Type:     openai.ToolType(cmp.Or(c.typ, string(openai.ToolTypeFunction))),
			Function: openai.FunctionCall{Name: c.name, Arguments: c.args.String()},
		})
	}
	return msg, nil
}

// failure classifies the error that ended a run.
func (s *state) failure(ctx context.Context, err error) (string, *RunError) {
	switch {
	case ctx.Err() != nil:
		return StatusCancelled, &RunError{Code: CodeCancelled, Message: "the run was cancelled: " + context.Cause(ctx).Error()}
	case errors.Is(err, errLLMTimeout):
		return StatusFailed, &RunError{Code: CodeLLMTimeout, Message: err.Error()}
	}
	return StatusFailed, &RunError{Code: CodeLLMError, Message: err.Error()}
}
