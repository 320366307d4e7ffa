package engine

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/egress"
	field "github.com/blindexec/blindexec/internal/header"
	"github.com/blindexec/blindexec/internal/httpbody"
	"github.com/blindexec/blindexec/plugins"
)

// Retry defaults, for plugins without execution.retry.
const (
	DefaultRetryAttempts   = 3
	DefaultRetryBackoff    = 100 * time.Millisecond
	DefaultRetryMaxBackoff = 2 * time.Second
)

// HTTPInvoker performs execution.type "http".
//
// It sends with net/http directly rather than through go-resty: the
// executor must hand an *http.Request to auth.Apply and must keep the URL
// it built byte for byte (resty re-parses and re-serializes it), and
// resty's per-request pipeline (URL re-parse, header and body copies)
// measured 3–6 µs of a 29 µs loopback GET, half the executor's whole
// overhead budget (1.3× a direct call).
type HTTPInvoker struct {
	Client *http.Client // the egress-guarded client
	Auth   *auth.Authenticator
	// Untrusted, when set, sends the calls no operator vouched for (a
	// per-user token's inline plugin left unbound): its client under the
	// default egress policy, so that BLINDEXEC_EGRESS_ALLOW opens internal
	// addresses to the catalog's plugins and the service's and
	// administrator's only; its own connections, so that none a trusted
	// call opened to an internal address is reused. serve sets it.
	Untrusted *HTTPInvoker
}

// Invoke sends the request, with retries, and reads the answer.
func (h *HTTPInvoker) Invoke(ctx context.Context, p *Prepared) (*Response, error) {
	if p.untrusted && h.Untrusted != nil {
		return h.Untrusted.Invoke(ctx, p)
	}
	// The request the decision built (and a person approved) is the one
	// sent; prepared here only when the decision needed none.
	out, err := p.built, error(nil)
	if out == nil {
		if out, err = buildRequest(p.Plugin, p.Arguments, p.schema); err != nil {
			return nil, err
		}
	}
	e := &p.Plugin.Execution
	policy := retryOf(e.Retry)
	if p.Once {
		policy.attempts = 1
	}
	idempotent := plugins.IdempotentMethod(out.method)
	provider := p.Plugin.AuthConfig.ConnectionProvider()
	reauth := provider != "" || p.Plugin.AuthConfig.Type == plugins.AuthOAuth2 && p.Plugin.AuthConfig.OAuth2 != nil &&
		p.Plugin.AuthConfig.OAuth2.EffectiveGrant() == plugins.GrantClientCredentials

	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			// Sending consumed the last one; the build succeeded once, it
			// is deterministic.
			if out, err = buildRequest(p.Plugin, p.Arguments, p.schema); err != nil {
				return &Response{Attempts: attempt - 1}, err
			}
		}
		resp, err := h.send(ctx, p, out, attempt)
		if err != nil {
			if attempt == 1 && isRefused(err) {
				return nil, err
			}
			if idempotent && attempt < policy.attempts && retryable(ctx, err) && policy.wait(ctx, attempt, 0) {
				continue
			}
			return &Response{Attempts: attempt}, err
		}
		switch {
		case resp.StatusCode == http.StatusUnauthorized && reauth && credentialsReached(resp):
			// A cached token the API no longer accepts: the request was
			// rejected before any processing, so one retry is safe for
			// every method.
			reauth = false
			if provider != "" {
				retry, err := h.rejected(ctx, p, provider, resp)
				if err != nil || !retry {
					if err == nil {
						return readResponse(resp, p.MaxResponseBytes, attempt)
					}
					discard(resp)
					return &Response{Attempts: attempt, StatusCode: resp.StatusCode}, err
				}
				discard(resp)
				continue
			}
			discard(resp)
			h.Auth.Invalidate(p.Plugin.AuthConfig, p.Credentials)
			continue
		case idempotent && attempt < policy.attempts && retryableStatus(resp.StatusCode):
			if policy.wait(ctx, attempt, retryAfter(resp.Header.Get("Retry-After"))) {
				discard(resp)
				continue
			}
		}
		return readResponse(resp, p.MaxResponseBytes, attempt)
	}
}

// credentialsReached reports whether the request answered by resp still
// carried the credentials: not when a redirect took the chain through
// another origin (egress.CheckRedirect drops them for the rest of it), so
// that its 401 says nothing about the token sent.
func credentialsReached(resp *http.Response) bool {
	origin := egress.OriginOf(resp.Request.URL)
	for r := resp.Request; r != nil; r = r.Response.Request {
		if egress.OriginOf(r.URL) != origin {
			return false
		}
		if r.Response == nil {
			return true
		}
	}
	return true
}

func isRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// send makes one attempt: the request from out, credentials applied.
func (h *HTTPInvoker) send(ctx context.Context, p *Prepared, out *outbound, attempt int) (*http.Response, error) {
	req, err := out.newRequest(ctx)
	if err != nil {
		return nil, err
	}
	applied, err := h.Auth.Apply(ctx, p.Plugin.AuthConfig, p.Credentials, req)
	if err != nil {
		var missing *auth.MissingCredentialsError
		if errors.As(err, &missing) {
			return nil, refuse(CodeMissingCredentials, "%s", missingCredentialsMessage(missing.Keys, p.UserID))
		}
		if errors.Is(err, auth.ErrCredentialValue) || errors.Is(err, auth.ErrCookieValue) || errors.Is(err, auth.ErrSecretTooShort) {
			return nil, &RefusedError{ToolError{Code: CodeAuthError, Message: "a credential cannot be sent: " + err.Error()}}
		}
		return nil, authError{err}
	}
	p.AddSecrets(applied.Secrets...)
	if provider := p.Plugin.AuthConfig.ConnectionProvider(); provider != "" {
		tok, err := p.connections.Token(ctx, p.UserID, provider, p.Plugin.AuthConfig.OAuth2.Scopes, auth.Origin(req.URL.String()))
		if err != nil {
			return nil, connectionError(provider, err)
		}
		p.AddSecrets(tok.Value)
		p.token = tok
		req.Header.Set("Authorization", "Bearer "+tok.Value)
		applied.Headers = append(applied.Headers, "Authorization")
	}
	span := startAttempt(ctx, p, req, attempt)
	if p.Trace {
		p.Sent(httpSent(req, applied.Headers, out.body))
	}
	sensitive := applied.Headers
	if len(p.Plugin.Execution.Headers) > 0 {
		// An administrator's static header may hold a secret pasted there
		// rather than stored as a credential: it stays on its origin too.
		sensitive = slices.AppendSeq(slices.Clip(sensitive), maps.Keys(p.Plugin.Execution.Headers))
	}
	if len(applied.Secrets) > 0 || p.token.Value != "" {
		// Not in plain text past loopback and the operator's list: the
		// guarded transport decides (egress.PlaintextError).
		req = req.WithContext(egress.WithCredentials(ctx, sensitive))
	} else if len(sensitive) > 0 {
		req = req.WithContext(egress.WithSensitiveHeaders(ctx, sensitive))
	}
	resp, err := h.Client.Do(req)
	endAttempt(span, p, resp, err)
	return resp, err
}

// rejected asks the connection for a token after the API answered 401
// to the one sent: retry reports whether there is a new one to send.
func (h *HTTPInvoker) rejected(ctx context.Context, p *Prepared, provider string, resp *http.Response) (retry bool, err error) {
	_, retry, err = p.connections.Rejected(ctx, p.UserID, provider, p.Plugin.AuthConfig.OAuth2.Scopes, auth.Origin(resp.Request.URL.String()), p.token)
	if err != nil {
		var refused *RefusedError
		if errors.As(connectionError(provider, err), &refused) {
			// Sent once already: an error of the call, not a refusal.
			te := refused.ToolError
			return false, &te
		}
		return false, authError{err}
	}
	return retry, nil
}

// connectionError turns a connection's refusal into the call's: the user
// must connect (CodeConnectionRequired), or the token may not go where
// the call goes (CodeCredentialNotBound); anything else is an auth error.
func connectionError(provider string, err error) error {
	if re, ok := errors.AsType[*connections.RequiredError](err); ok {
		return connectionRequired(re)
	}
	if errors.Is(err, connections.ErrOriginNotAllowed) {
		return &RefusedError{ToolError{Code: CodeCredentialNotBound, Message: err.Error(), Details: map[string]any{"provider": provider}}}
	}
	return authError{fmt.Errorf("the connection to %s: %w", provider, err)}
}

// authError marks a failure to obtain credentials (the oauth2 token
// endpoint) rather than to reach the API.
type authError struct{ err error }

func (e authError) Error() string { return e.err.Error() }
func (e authError) Unwrap() error { return e.err }

type retryPolicy struct {
	attempts            int
	backoff, maxBackoff time.Duration
}

func retryOf(r *plugins.Retry) retryPolicy {
	p := retryPolicy{DefaultRetryAttempts, DefaultRetryBackoff, DefaultRetryMaxBackoff}
	if r != nil {
		if r.MaxAttempts > 0 {
			p.attempts = r.MaxAttempts
		}
		if r.BackoffMS > 0 {
			p.backoff = time.Duration(r.BackoffMS) * time.Millisecond
		}
		if r.MaxBackoffMS > 0 {
			p.maxBackoff = time.Duration(r.MaxBackoffMS) * time.Millisecond
		}
	}
	return p
}

// wait sleeps before the retry following attempt: the Retry-After the
// server asked for (ra > 0), else the backoff delay; either capped by
// maxBackoff. It reports false, without sleeping, when the wait (or the
// server's Retry-After) would outlast the call's timeout, or when ctx ends
// while sleeping.
func (p retryPolicy) wait(ctx context.Context, attempt int, ra time.Duration) bool {
	d := ra
	if d <= 0 {
		d = p.delay(attempt)
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < max(d, ra) {
		return false
	}
	t := time.NewTimer(min(d, p.maxBackoff))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// delay is the exponential backoff after attempt, capped, with "equal
// jitter": spread over [d/2, d] so that clients retrying together drift
// apart while keeping a floor.
func (p retryPolicy) delay(attempt int) time.Duration {
	d := min(p.backoff<<min(attempt-1, 20), p.maxBackoff)
	return d/2 + rand.N(d/2+1)
}

// retryAfter parses a Retry-After header: delay seconds or an HTTP date.
// Seconds past what a Duration holds are the longest wait, beyond any
// call's deadline (wait gives up), not an overflow to a short one.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil || errors.Is(err, strconv.ErrRange) {
		switch { // out of range, s is the int nearest: the sign is kept
		case s <= 0:
			return 0
		case s > math.MaxInt64/int(time.Second):
			return math.MaxInt64
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusBadGateway ||
		code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// retryable reports a connection failure worth another attempt: not a
// policy denial, not an auth failure, not a redirect refused (each attempt
// would be), not the call's own deadline.
func retryable(ctx context.Context, err error) bool {
	var denied *egress.DeniedError
	var ae authError
	return ctx.Err() == nil && !errors.As(err, &denied) && !errors.As(err, &ae) && !errors.As(err, new(*egress.PlaintextError)) &&
		!errors.Is(err, egress.ErrTooManyRedirects) && !errors.Is(err, egress.ErrBodyToAnotherOrigin)
}

// discard drains a little of a body we will not use, so that the
// connection can be reused, and closes it.
func discard(resp *http.Response) {
	io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
}

// readResponse reads the body, decoded, up to limit bytes for a success
// and a few KiB for anything else (only an excerpt is shown).
func readResponse(resp *http.Response, limit int64, attempts int) (*Response, error) {
	defer resp.Body.Close()
	r := &Response{StatusCode: resp.StatusCode, ContentType: field.Get(resp.Header, "Content-Type"), Attempts: attempts}
	ok := resp.StatusCode >= 200 && resp.StatusCode <= 299
	if !ok {
		// Twice the excerpt, so that masking before the cut sees whole
		// secrets.
		limit = 2 * ErrorExcerptBytes
	}
	body, err := decoded(resp)
	if err != nil {
		return r, &ToolError{Code: CodeTransportError, Message: "the API's response could not be decoded: " + err.Error()}
	}
	// The declared length sizes the read only when the body read is the
	// one it describes (no content coding undone) and within the limit.
	declared := int64(-1)
	if body == io.Reader(resp.Body) && resp.ContentLength <= limit {
		declared = resp.ContentLength
	}
	if declared < 0 {
		// A body of a declared length within the limit is bounded
		// already: net/http ends it there (HTTP/1.1) or fails it past it
		// (HTTP/2). Any other is read to the limit and a byte.
		body = io.LimitReader(body, limit+1)
	}
	r.Body, err = httpbody.ReadAll(body, declared)
	// Cut before the read's error too: a coding that fails past the
	// limit (a corrupt deflate stream) has read a byte more.
	over := int64(len(r.Body)) > limit
	if over {
		r.Body, r.Truncated = r.Body[:limit], true
	}
	if err != nil {
		return r, fmt.Errorf("reading the response: %w", err)
	}
	if over && ok {
		return r, &ToolError{
			Code:    CodeResponseTooLarge,
			Message: fmt.Sprintf("the API's response is larger than %d bytes; ask for less (a filter, a smaller page)", limit),
		}
	}
	return r, nil
}

// decoded undoes gzip or deflate content coding. The transport does not
// (egress.NewTransport disables it), so that the read cap counts decoded
// bytes and a compression bomb stops at the cap. An empty body is empty
// whatever coding is named (a HEAD's, a 204's). A compression the engine
// did not ask for is refused: its bytes read as text would be the
// model's, where no masking can see into them. Another token (identity,
// or a server's mistake such as "utf-8") leaves the body as it is.
func decoded(resp *http.Response) (io.Reader, error) {
	// Every line of the field: a list sent on two lines is one (RFC 9110
	// 5.3), and its first line alone would leave the second coding undone.
	coding := strings.ToLower(strings.TrimSpace(strings.Join(field.Values(resp.Header, "Content-Encoding"), ", ")))
	if coding == "" || coding == "identity" {
		return resp.Body, nil
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.Peek(1); err == io.EOF {
		return br, nil
	}
	switch coding {
	case "gzip", "x-gzip":
		return gzip.NewReader(br)
	case "deflate":
		// HTTP's deflate is zlib-wrapped, but some servers send raw
		// deflate: tell them apart by the zlib header.
		if h, err := br.Peek(2); err == nil && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
			return zlib.NewReader(br)
		}
		return flate.NewReader(br), nil
	case "br", "zstd", "compress", "x-compress":
	default:
		if !strings.Contains(coding, ",") {
			return br, nil
		}
	}
	return nil, fmt.Errorf("its content coding %q is not one the engine asked for (%s)", coding, acceptEncodingValue[0])
}

// classify turns an invoker's error into the ToolError the LLM sees. The
// message never quotes a URL: Go's *url.Error would print the query, and
// a credential may travel there.
func classify(err error) *ToolError {
	var te *ToolError
	if errors.As(err, &te) {
		return te
	}
	var refused *RefusedError // after an attempt was sent: no longer a refusal
	if errors.As(err, &refused) {
		return &refused.ToolError
	}
	var denied *egress.DeniedError
	switch {
	case errors.As(err, new(*egress.PlaintextError)):
		// Before authError: a token request refused so is this too.
		return &ToolError{Code: CodeEgressDenied, Message: innermost(err)}
	case errors.As(err, &denied):
		return &ToolError{Code: CodeEgressDenied, Message: "the API's address is not allowed: " + denied.Error()}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return &ToolError{Code: CodeTimeout, Message: "the API did not answer in time"}
	case errors.As(err, new(authError)):
		return &ToolError{Code: CodeAuthError, Message: "the credentials could not be applied: " + innermost(err)}
	case errors.Is(err, context.Canceled):
		return &ToolError{Code: CodeTransportError, Message: "the call was canceled"}
	}
	return &ToolError{Code: CodeTransportError, Message: "the call failed: " + innermost(err)}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// innermost is the message of the error a *url.Error wraps (the failure
// without the URL), else the error's own message.
func innermost(err error) string {
	var ue *url.Error
	for errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
