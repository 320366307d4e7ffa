// Package console serves the administrator's console in the browser at
// /console/: a sign-in that turns a token into a session cookie, and a
// single page (embedded, no build step) that calls the JSON API with that
// cookie in place of the bearer token.
package console

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/csp"
	"github.com/blindexec/blindexec/store"
)

//go:embed assets
var assets embed.FS

// CookieName is the session cookie's name over plain HTTP; over HTTPS it
// is SecureCookieName.
const CookieName = "blindexec_session"

// SecureCookieName is the session cookie's name over HTTPS: a __Host-
// cookie, which the browser takes only Secure, for this host alone
// (no Domain) and the whole site (Path=/), so that a page of a sibling
// subdomain cannot set one in its place and sign the browser in to the
// session it chose.
const SecureCookieName = "__Host-" + CookieName

// cookieName is the session cookie's name for a request (secure).
func (c *Console) cookieName(r *http.Request) string {
	if c.secure(r) {
		return SecureCookieName
	}
	return CookieName
}

// sessionTTL bounds a session even while its token stays valid.
const sessionTTL = 8 * time.Hour

// reportPath receives the violation reports of csp.Policy, the policy of
// every console page (and of the OAuth flow's pages).
const reportPath = csp.ReportPath

// Console is the console's handler and the API's session checker.
type Console struct {
	api    *api.Server
	store  *store.Store
	log    *slog.Logger
	macKey []byte // signs session cookies
	csrf   []byte // derives each session's CSRF token

	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client of a sign-in (BLINDEXEC_TRUSTED_PROXIES); set before serving.
	TrustedProxies []netip.Prefix
	// BrowserURL is BLINDEXEC_BROWSER_URL: with https:// the session
	// cookie is Secure whatever a request came by (secure).
	BrowserURL string
	reports    *reports
	logins     *logins

	mu   sync.Mutex
	kept []json.RawMessage // the latest distinct CSP violation reports

	endMu   sync.Mutex
	endRead time.Time       // when ended was read from the database
	ended   map[string]bool // ids of the sessions signed out
}

// endedRefresh is how often a replica rereads the signed-out sessions: a
// session signed out on another replica ends here within it.
const endedRefresh = time.Second

// maxReports bounds the violation reports kept in memory.
const maxReports = 100

// New builds the console over the API server and sets it as the server's
// session checker. The keys are derived from the master key, so every
// replica accepts the sessions any of them signed.
func New(srv *api.Server, st *store.Store, masterKey string, log *slog.Logger) (*Console, error) {
	if masterKey == "" {
		return nil, errors.New("console: the master key is required to sign sessions")
	}
	if log == nil {
		log = slog.Default()
	}
	c := &Console{api: srv, store: st, log: log, reports: newReports(), logins: newLogins()}
	if srv.Registry != nil {
		if err := c.register(srv.Registry); err != nil {
			return nil, fmt.Errorf("console: %w", err)
		}
	}
	var err error
	if c.macKey, err = hkdf.Key(sha256.New, []byte(masterKey), nil, "blindexec console session v1", 32); err != nil {
		return nil, fmt.Errorf("console: derive the session key: %w", err)
	}
	if c.csrf, err = hkdf.Key(sha256.New, []byte(masterKey), nil, "blindexec console csrf v1", 32); err != nil {
		return nil, fmt.Errorf("console: derive the CSRF key: %w", err)
	}
	srv.Sessions = c
	return c, nil
}

// Handler serves the console under /console/ and everything else with
// apiHandler, recording the administrative changes made through it.
func (c *Console) Handler(apiHandler http.Handler) http.Handler {
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	mux := http.NewServeMux()
	mux.Handle("GET /console/{$}", c.page(func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/"
		files.ServeHTTP(w, r2)
	}))
	mux.Handle("GET /console/assets/", c.page(http.StripPrefix("/console/assets", files).ServeHTTP))
	mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("POST /console/login", c.login)
	mux.HandleFunc("POST /console/logout", c.logout)
	mux.HandleFunc("GET /console/api/session", c.session)
	mux.HandleFunc("POST "+reportPath, c.report)
	mux.Handle("/console/", http.NotFoundHandler())
	mux.Handle("/", c.audited(apiHandler))
	return mux
}

// page sets the headers of every console page and asset.
func (c *Console) page(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		csp.SetHeaders(hd)
		hd.Set("Referrer-Policy", "same-origin") // "no-referrer" would make the forms' Origin "null"
		hd.Set("Cache-Control", "no-cache")
		h(w, r)
	})
}

// sameOrigin reports whether a form post comes from the console itself:
// the sign-in has no session yet to carry a CSRF token, so it is guarded
// by the Origin (or Referer) the browser sends.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		o = r.Header.Get("Referer")
	}
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "sign-in refused: the form was not posted from this console", http.StatusForbidden)
		return
	}
	// Failures are limited per client address before the token is read:
	// guessing tokens costs a minute per loginFailures guesses.
	addr := clientAddr(r, c.TrustedProxies)
	if wait := c.logins.blocked(addr, time.Now()); wait > 0 {
		c.logins.logFailure(r.Context(), c.log, addr, loginRateLimited, nil)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)+1))
		http.Error(w, fmt.Sprintf("sign-in refused: %d failed sign-ins from this address within %v; wait", loginFailures, loginWindow), http.StatusTooManyRequests)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	tok := strings.TrimSpace(r.PostFormValue("token"))
	if tok == "" {
		http.Redirect(w, r, "/console/?error=token_required", http.StatusSeeOther)
		return
	}
	who, err := c.api.WhoIsToken(r.Context(), tok)
	if errors.Is(err, api.ErrTokenUnchecked) {
		// Neither valid nor invalid: no failure counted against the
		// person's address, and the page says why.
		c.log.WarnContext(r.Context(), "console: a sign-in could not be checked", "err", err)
		http.Redirect(w, r, "/console/?error=database_unavailable", http.StatusSeeOther)
		return
	}
	if err != nil {
		c.logins.failed(addr, time.Now())
		c.logins.logFailure(r.Context(), c.log, addr, loginRefused, err)
		http.Redirect(w, r, "/console/?error=token_invalid", http.StatusSeeOther)
		return
	}
	c.logins.succeeded(addr)
	sid := make([]byte, 16)
	rand.Read(sid)
	http.SetCookie(w, &http.Cookie{
		Name: c.cookieName(r), Value: c.sign(auth.HashToken(tok), hex.EncodeToString(sid), time.Now().Add(sessionTTL)),
		Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secure(r),
		MaxAge: int(sessionTTL / time.Second),
	})
	in := &store.AdminEvent{Actor: actorOf(who), Via: "console", Action: store.AdminSignIn,
		Kind: store.AdminKindSession, Target: hex.EncodeToString(sid), HTTPStatus: http.StatusSeeOther}
	in.SetDetail(store.AdminDetail{Op: api.OpSignIn})
	c.record(r.Context(), in)
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "sign-out refused: the form was not posted from this console", http.StatusForbidden)
		return
	}
	// The session ends for every copy of its cookie, on every replica:
	// its id joins the signed-out ones.
	if s, err := c.parse(r); err == nil {
		actor := "unknown"
		if who, err := c.api.WhoIs(r); err == nil {
			actor = actorOf(who)
		}
		out := &store.AdminEvent{Actor: actor, Via: "console", Action: store.AdminSignOut,
			Kind: store.AdminKindSession, Target: s.sid, HTTPStatus: http.StatusSeeOther}
		out.SetDetail(store.AdminDetail{Op: api.OpSignOut})
		c.record(r.Context(), out)
		c.endMu.Lock()
		c.endRead = time.Time{} // reread, with this one
		c.endMu.Unlock()
		// Every replica ends the session's MCP sessions and streams
		// (api.SessionEnds) when it sees the token counter move.
		if err := c.store.BumpCounters(context.WithoutCancel(r.Context()), "token"); err != nil {
			c.log.WarnContext(r.Context(), "a signed-out session's MCP streams end at the next token change", "err", err)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(r), Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secure(r), MaxAge: -1})
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// secure reports whether the browser reached the console over HTTPS, so
// that the session cookie is Secure and never sent over plain HTTP: the
// engine serves no TLS itself, so r.TLS alone is never set behind the
// reverse proxy that terminates it. HTTPS is known from the proxy's
// X-Forwarded-Proto when the connection comes from a trusted proxy
// (BLINDEXEC_TRUSTED_PROXIES), or from BrowserURL.
func (c *Console) secure(r *http.Request) bool {
	if r.TLS != nil || strings.HasPrefix(strings.ToLower(c.BrowserURL), "https://") {
		return true
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || !isTrusted(addr, c.TrustedProxies) {
		return false
	}
	// Any hop saying https: a Secure cookie wrongly set over HTTP costs
	// that browser its sign-in, never the cookie.
	for _, p := range strings.Split(strings.Join(r.Header.Values("X-Forwarded-Proto"), ","), ",") {
		if strings.EqualFold(strings.TrimSpace(p), "https") {
			return true
		}
	}
	return false
}

// session tells the page who is signed in and the CSRF token its
// state-changing requests carry.
func (c *Console) session(w http.ResponseWriter, r *http.Request) {
	who, err := c.api.WhoIs(r)
	if errors.Is(err, api.ErrTokenUnchecked) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]string{"code": "database_unavailable", "message": api.ErrTokenUnchecked.Error()}})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]string{"code": "unauthorized", "message": err.Error()}})
		return
	}
	out := map[string]any{"role": who.Role, "user_id": who.UserID}
	if s, err := c.parse(r); err == nil {
		out["csrf"] = c.csrfToken(s.sid)
	}
	writeJSON(w, http.StatusOK, out)
}

// report receives the browser's CSP violation reports. It needs no
// credentials, so what one costs is bounded: a small body; a report
// identical to one received before is counted, not kept or logged again;
// at most reportLogsPerMinute log lines a minute; the rest counted in
// blindexec_console_csp_reports_total.
func (c *Console) report(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReportBytes))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		c.reports.outcomes.WithLabelValues(reportTooLarge).Inc()
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	if err != nil || !json.Valid(b) {
		c.reports.outcomes.WithLabelValues(reportMalformed).Inc()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	isNew, log, suppressed := c.reports.add(b, time.Now())
	if log {
		c.log.WarnContext(r.Context(), "console content security policy violation", "report", json.RawMessage(b), "not_logged_since_last", suppressed)
	}
	if isNew {
		c.mu.Lock()
		c.kept = append(c.kept, b)
		if len(c.kept) > maxReports {
			c.kept = c.kept[len(c.kept)-maxReports:]
		}
		c.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

// Reports returns the latest distinct CSP violation reports received.
func (c *Console) Reports() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]json.RawMessage(nil), c.kept...)
}

// sessionData is what a cookie carries: the hash of the token signed in
// with (never the token), the session's id and its end.
type sessionData struct {
	hash, sid string
	expires   time.Time
}

// sign returns the cookie value "v1.hash.sid.expiry.mac".
func (c *Console) sign(hash, sid string, exp time.Time) string {
	payload := strings.Join([]string{"v1", hash, sid, strconv.FormatInt(exp.Unix(), 10)}, ".")
	return payload + "." + c.mac(payload)
}

func (c *Console) mac(payload string) string {
	m := hmac.New(sha256.New, c.macKey)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

var errBadSession = errors.New("the console session is not valid or has ended: sign in again")

// parse checks the request's session cookie.
func (c *Console) parse(r *http.Request) (sessionData, error) {
	ck, err := r.Cookie(c.cookieName(r))
	if err != nil || ck.Value == "" {
		return sessionData{}, api.ErrNoSession
	}
	i := strings.LastIndexByte(ck.Value, '.')
	if i < 0 || !hmac.Equal([]byte(ck.Value[i+1:]), []byte(c.mac(ck.Value[:i]))) {
		return sessionData{}, errBadSession
	}
	parts := strings.Split(ck.Value[:i], ".")
	if len(parts) != 4 || parts[0] != "v1" {
		return sessionData{}, errBadSession
	}
	exp, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil || time.Now().Unix() >= exp {
		return sessionData{}, errBadSession
	}
	if c.signedOut(r.Context(), parts[2]) {
		return sessionData{}, errBadSession
	}
	return sessionData{hash: parts[1], sid: parts[2], expires: time.Unix(exp, 0)}, nil
}

// signedOut reports whether the session was signed out, rereading the
// signed-out sessions at most once per endedRefresh. When they cannot be
// read (the database is down), the last ones read stand.
func (c *Console) signedOut(ctx context.Context, sid string) bool {
	c.endMu.Lock()
	defer c.endMu.Unlock()
	if time.Since(c.endRead) >= endedRefresh {
		ended, err := c.Ended(ctx)
		if err != nil {
			c.log.WarnContext(ctx, "signed-out console sessions not reread", "err", err)
		} else {
			c.ended = ended
		}
		c.endRead = time.Now()
	}
	return c.ended[sid]
}

// SessionID implements api.SessionEnds: the id of the request's valid
// session.
func (c *Console) SessionID(r *http.Request) string {
	s, err := c.parse(r)
	if err != nil {
		return ""
	}
	return s.sid
}

// Ended implements api.SessionEnds: the sessions signed out, read now
// (not the copy signedOut rereads once per endedRefresh).
func (c *Console) Ended(ctx context.Context) (map[string]bool, error) {
	ids, err := c.store.EndedSessions(ctx, time.Now().Add(-sessionTTL))
	if err != nil {
		return nil, err
	}
	ended := make(map[string]bool, len(ids))
	for _, id := range ids {
		ended[id] = true
	}
	return ended, nil
}

func actorOf(who api.Who) string {
	if who.Role == "user" {
		return "user " + strconv.FormatInt(who.UserID, 10)
	}
	return who.Role
}

func (c *Console) csrfToken(sid string) string {
	m := hmac.New(sha256.New, c.csrf)
	m.Write([]byte(sid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CSRFHeader carries a session's CSRF token on state-changing requests.
const CSRFHeader = "X-CSRF-Token"

// TokenHash implements api.Sessions: a valid, unexpired session, and on
// a state-changing request its CSRF token in CSRFHeader.
func (c *Console) TokenHash(r *http.Request) (string, error) {
	s, err := c.parse(r)
	if err != nil {
		return "", err
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if !hmac.Equal([]byte(r.Header.Get(CSRFHeader)), []byte(c.csrfToken(s.sid))) {
			return "", fmt.Errorf("a console request that changes something needs the session's %s header", CSRFHeader)
		}
	}
	return s.hash, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// record stores an administrative change; a failure is logged, not the
// caller's: the change itself was made.
func (c *Console) record(ctx context.Context, e *store.AdminEvent) {
	if err := c.store.InsertAdminEvent(context.WithoutCancel(ctx), e); err != nil {
		c.log.WarnContext(ctx, "administrative change not recorded", "err", err, "action", e.Action, "target", e.Target)
	}
}
