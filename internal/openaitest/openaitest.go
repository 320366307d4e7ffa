// Package openaitest is a scripted OpenAI-compatible chat completions
// server for tests: each request takes the next scripted Turn and answers it
// in the wire format of the real API, streaming or not. Like the real API,
// it refuses a request with more than MaxTools tools.
//
// Streaming follows what OpenAI and OneAPI send: a role-only first chunk,
// content deltas, tool calls whose first delta for an index carries id,
// type and name and whose later deltas carry argument pieces, parallel tool
// calls interleaved by index, finish_reason on the last choice chunk, a
// usage chunk with empty choices when stream_options.include_usage is set,
// then "data: [DONE]" (with include_usage, the chunks before it carry
// "usage": null).
//
// Splitting "anywhere" happens at two levels, because a JSON string cannot
// carry part of a UTF-8 sequence (encoding/json, like every decoder,
// turns an invalid byte into U+FFFD, so no real server can send one):
//
//   - Deltas split the content and the argument text every Chunk runes:
//     between any two characters of the text, which includes the inside of
//     the arguments' own JSON escapes (`\"`, `\\`, `\u00e9`) but never the
//     inside of a character. This is what tokenizing servers do: they hold
//     back an incomplete character until the next token completes it.
//   - The wire splits the event stream every WireChunk bytes, flushing each
//     piece: inside "data: ", inside the chunk JSON, and inside multi-byte
//     UTF-8 characters. EscapeNonASCII instead sends non-ASCII as \uXXXX
//     (surrogate pairs beyond the BMP), as Python servers do by default.
package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/blindexec/blindexec/egress/egresstest"
	openai "github.com/sashabaranov/go-openai"
)

// Turn is one scripted model response, or a fault.
type Turn struct {
	Content   string
	ToolCalls []ToolCall
	Usage     openai.Usage
	// FinishReason defaults to "tool_calls" when there are tool calls and
	// "stop" otherwise.
	FinishReason string

	// Chunk is the number of runes per content or argument delta when
	// streaming; 0 sends each text in one delta.
	Chunk int
	// WireChunk is the number of bytes per write (each flushed) of the
	// event stream; 0 writes one event at a time.
	WireChunk int
	// EscapeNonASCII sends non-ASCII characters as \uXXXX escapes.
	EscapeNonASCII bool

	// Status, when not 0 or 200, answers with an OpenAI error body and
	// this status (429, 500, 503...), with a Retry-After header when
	// RetryAfter is set.
	Status     int
	RetryAfter string
	// Hang holds the request without answering until the client gives up
	// or the test ends.
	Hang bool
	// Raw, when set, is sent verbatim as a 200 body instead of a response
	// built from the fields above: a malformed response.
	Raw string
}

// ToolCall is one tool call the model makes. Arguments is the raw
// argument text, sent as is, valid JSON or not.
type ToolCall struct {
	ID        string // defaults to call_<request>_<index>
	Name      string
	Arguments string
}

// Server is the scripted server. Its zero value is not usable; call New.
type Server struct {
	// URL is the base URL for go-openai: the server's root plus "/v1".
	URL string

	t       testing.TB
	srv     *httptest.Server
	release chan struct{}

	mu       sync.Mutex
	turns    []Turn
	requests [][]byte
}

// New starts a server on 127.0.0.1, stopped when t ends (hanging requests
// are released first).
func New(t testing.TB) *Server {
	s := &Server{t: t, release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serve)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(func() {
		close(s.release)
		s.srv.Close()
	})
	return s
}

// Config is a go-openai configuration for the server, with an HTTP client
// that can only reach loopback.
func (s *Server) Config() openai.ClientConfig {
	cfg := openai.DefaultConfig("sk-openaitest")
	cfg.BaseURL = s.URL
	cfg.HTTPClient = egresstest.Client(s.t)
	return cfg
}

// Script queues turns; requests take them in order.
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Pending is the number of scripted turns not yet taken.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns)
}

// Requests returns the raw bodies of every request received, in order.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, len(s.requests))
	for i, b := range s.requests {
		out[i] = bytes.Clone(b)
	}
	return out
}

// MaxTools is the most tools OpenAI accepts in one request; beyond it the
// server answers 400 as OpenAI does, without taking a scripted turn.
const MaxTools = 128

// request is the part of a chat completion request the server reads.
type request struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools []json.RawMessage `json:"tools"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body := new(bytes.Buffer)
	if _, err := body.ReadFrom(r.Body); err != nil {
		return // the client went away
	}
	var req request
	jsonErr := json.Unmarshal(body.Bytes(), &req)
	refused := jsonErr == nil && len(req.Tools) > MaxTools
	s.mu.Lock()
	s.requests = append(s.requests, body.Bytes())
	n := len(s.requests)
	var turn Turn
	ok := len(s.turns) > 0
	if ok && jsonErr == nil && !refused {
		turn, s.turns = s.turns[0], s.turns[1:]
	}
	s.mu.Unlock()

	if jsonErr != nil {
		s.t.Errorf("openaitest: request %d is not JSON: %v", n, jsonErr)
		writeError(w, http.StatusBadRequest, "", "invalid JSON body")
		return
	}
	if refused {
		// OpenAI's answer, word for word.
		writeAPIError(w, http.StatusBadRequest, apiError{
			Message: fmt.Sprintf("Invalid 'tools': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", MaxTools, len(req.Tools)),
			Type:    "invalid_request_error", Param: "tools", Code: "array_above_max_length",
		})
		return
	}
	if !ok {
		s.t.Errorf("openaitest: request %d has no scripted turn", n)
		writeError(w, http.StatusInternalServerError, "", "openaitest: no scripted turn left")
		return
	}
	switch {
	case turn.Hang:
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return
	case turn.Status != 0 && turn.Status != http.StatusOK:
		writeError(w, turn.Status, turn.RetryAfter, fmt.Sprintf("scripted failure %d", turn.Status))
		return
	case turn.Raw != "":
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.Write([]byte(turn.Raw))
		return
	}
	resp := response{turn: turn, n: n, model: req.Model}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp.encode(resp.completion()))
		return
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	var events [][]byte
	for _, c := range resp.chunks(includeUsage) {
		events = append(events, fmt.Appendf(nil, "data: %s\n\n", resp.encode(c)))
	}
	events = append(events, []byte("data: [DONE]\n\n"))
	writeSSE(w, events, turn.WireChunk)
}

// writeSSE writes the events, one write each or, when size is not 0, in
// pieces of size bytes cut anywhere; it flushes every write so that the
// client reads them separately.
func writeSSE(w http.ResponseWriter, events [][]byte, size int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f := w.(http.Flusher)
	pieces := events
	if size > 0 {
		b := bytes.Join(events, nil)
		pieces = nil
		for len(b) > size {
			pieces, b = append(pieces, b[:size]), b[size:]
		}
		pieces = append(pieces, b)
	}
	for _, p := range pieces {
		if _, err := w.Write(p); err != nil {
			return
		}
		f.Flush()
	}
}

func writeError(w http.ResponseWriter, status int, retryAfter, msg string) {
	e := apiError{Message: msg, Type: "server_error"}
	if status == http.StatusTooManyRequests {
		e.Type, e.Code = "requests", "rate_limit_exceeded"
	}
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	writeAPIError(w, status, e)
}

// apiError is OpenAI's error object; param and code are null when empty.
type apiError struct {
	Message, Type, Param, Code string
}

func writeAPIError(w http.ResponseWriter, status int, e apiError) {
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": e.Message, "type": e.Type, "param": orNull(e.Param), "code": orNull(e.Code),
	}})
}

// response builds the answer to request n from turn.
type response struct {
	turn  Turn
	n     int
	model string
}

func (r response) id() string { return fmt.Sprintf("chatcmpl-openaitest-%d", r.n) }

func (r response) callID(i int) string {
	if id := r.turn.ToolCalls[i].ID; id != "" {
		return id
	}
	return fmt.Sprintf("call_%d_%d", r.n, i)
}

func (r response) finishReason() string {
	switch {
	case r.turn.FinishReason != "":
		return r.turn.FinishReason
	case len(r.turn.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func (r response) encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the types below always marshal
	}
	if r.turn.EscapeNonASCII {
		b = escapeNonASCII(b)
	}
	return b
}

// Wire types, with the fields and nulls of the real API.
type (
	completion struct {
		ID                string          `json:"id"`
		Object            string          `json:"object"`
		Created           int64           `json:"created"`
		Model             string          `json:"model"`
		Choices           []choice        `json:"choices"`
		Usage             json.RawMessage `json:"usage,omitempty"`
		SystemFingerprint string          `json:"system_fingerprint"`
	}
	choice struct {
		Index        int      `json:"index"`
		Message      *message `json:"message,omitempty"`
		Delta        *message `json:"delta,omitempty"`
		Logprobs     any      `json:"logprobs"`
		FinishReason *string  `json:"finish_reason"`
	}
	message struct {
		Role      string     `json:"role,omitempty"`
		Content   *string    `json:"content,omitempty"`
		ToolCalls []toolCall `json:"tool_calls,omitempty"`
	}
	toolCall struct {
		Index    *int     `json:"index,omitempty"`
		ID       string   `json:"id,omitempty"`
		Type     string   `json:"type,omitempty"`
		Function function `json:"function"`
	}
	function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
)

const created = 1700000000

var null = json.RawMessage("null")

func (r response) usage() json.RawMessage {
	b, err := json.Marshal(r.turn.Usage)
	if err != nil {
		panic(err)
	}
	return b
}

func (r response) completion() completion {
	m := &message{Role: "assistant"}
	// content is left out, not "", when the model only calls tools.
	if r.turn.Content != "" || len(r.turn.ToolCalls) == 0 {
		m.Content = &r.turn.Content
	}
	for i, tc := range r.turn.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, toolCall{
			ID: r.callID(i), Type: "function",
			Function: function{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	fr := r.finishReason()
	return completion{
		ID: r.id(), Object: "chat.completion", Created: created, Model: r.model,
		Choices:           []choice{{Message: m, FinishReason: &fr}},
		Usage:             r.usage(),
		SystemFingerprint: "fp_openaitest",
	}
}

func (r response) chunks(includeUsage bool) []completion {
	var out []completion
	add := func(ch []choice) {
		c := completion{
			ID: r.id(), Object: "chat.completion.chunk", Created: created, Model: r.model,
			Choices: ch, SystemFingerprint: "fp_openaitest",
		}
		if includeUsage {
			c.Usage = null
		}
		out = append(out, c)
	}
	delta := func(m message) { add([]choice{{Delta: &m}}) }

	empty := ""
	delta(message{Role: "assistant", Content: &empty})
	for _, piece := range split(r.turn.Content, r.turn.Chunk) {
		delta(message{Content: &piece})
	}
	// Per index: the header delta, then the argument pieces; emitted
	// round-robin so that parallel calls interleave.
	queues := make([][]toolCall, len(r.turn.ToolCalls))
	for i, tc := range r.turn.ToolCalls {
		queues[i] = append(queues[i], toolCall{
			Index: &i, ID: r.callID(i), Type: "function",
			Function: function{Name: tc.Name},
		})
		for _, piece := range split(tc.Arguments, r.turn.Chunk) {
			queues[i] = append(queues[i], toolCall{Index: &i, Function: function{Arguments: piece}})
		}
	}
	for more := true; more; {
		more = false
		for i := range queues {
			if len(queues[i]) > 0 {
				delta(message{ToolCalls: queues[i][:1]})
				queues[i] = queues[i][1:]
				more = true
			}
		}
	}
	fr := r.finishReason()
	add([]choice{{Delta: &message{}, FinishReason: &fr}})
	if includeUsage {
		out = append(out, completion{
			ID: r.id(), Object: "chat.completion.chunk", Created: created, Model: r.model,
			Choices: []choice{}, Usage: r.usage(), SystemFingerprint: "fp_openaitest",
		})
	}
	return out
}

// split cuts s every n runes (n <= 0: not at all). The empty string has no
// pieces.
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	if n <= 0 {
		return []string{s}
	}
	var out []string
	for s != "" {
		i, k := 0, 0
		for i < len(s) && k < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			k++
		}
		out, s = append(out, s[:i]), s[i:]
	}
	return out
}

// escapeNonASCII rewrites the non-ASCII characters of a JSON text as
// \uXXXX escapes. Outside strings JSON has only ASCII, so every such
// character is inside a string.
func escapeNonASCII(b []byte) []byte {
	var sb strings.Builder
	for _, r := range string(b) {
		switch {
		case r < utf8.RuneSelf:
			sb.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&sb, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
	}
	return []byte(sb.String())
}
