package connections

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/oauth2"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/csp"
	"github.com/blindexec/blindexec/internal/language"
	"github.com/blindexec/blindexec/store"
)

// The browser routes of a flow: unauthenticated, bound to the flow's
// handle, state, cookie and CSRF token instead.
const (
	StartPath    = "/oauth/start/"
	CallbackPath = "/oauth/callback"
	ConfirmPath  = "/oauth/confirm"
)

// cookiePrefix names a flow's cookie: "bx_oauth_<flow id>", so that two
// flows in one browser do not overwrite each other's.
const cookiePrefix = "bx_oauth_"

// ErrInvalidRequest is wrapped by Authorize's errors about its
// arguments.
var ErrInvalidRequest = errors.New("invalid request")

// MaxOpenFlows is how many flows a user may begin within FlowTTL: each
// is a row until it expires, and a per-user token can ask for start URLs
// at will.
const MaxOpenFlows = 20

// ErrTooManyFlows refuses a start URL past MaxOpenFlows.
var ErrTooManyFlows = fmt.Errorf("too many connection flows begun in the last %v: at most %d a user; use a start URL already given or wait", FlowTTL, MaxOpenFlows)

// ErrProviderDisabled refuses connecting to a provider the administrator
// disabled (or an import created before its client was registered).
var ErrProviderDisabled = errors.New("the OAuth provider is disabled")

// Authorize begins a flow for the user to connect their account at
// provider and returns its start URL, <BLINDEXEC_BROWSER_URL>/oauth/start/
// <handle>, single use, for FlowTTL. displayName, when given, is how the
// confirmation page names the user (so that a person handed someone
// else's link sees whose account it would be). scopes are requested with
// the provider's own and those of an existing connection.
func (s *Service) Authorize(ctx context.Context, userID int64, provider, displayName string, scopes ...string) (string, error) {
	if s.BrowserURL == "" {
		return "", ErrNoBrowserURL
	}
	if userID <= 0 {
		return "", fmt.Errorf("%w: user_id: a connection belongs to a user: a positive user id is required", ErrInvalidRequest)
	}
	// Held to what the page shows of the provider's account (printable):
	// a bidi control in the name reordered the page's warning after it.
	if utf8.RuneCountInString(displayName) > 255 || !printable(displayName) || !utf8.ValidString(displayName) {
		return "", fmt.Errorf("%w: display_name: at most 255 characters of text, without control or bidirectional control characters", ErrInvalidRequest)
	}
	for i, sc := range scopes {
		if !validScope(sc) {
			return "", fmt.Errorf("%w: scopes[%d]: %q is not a scope (printable ASCII without spaces, quotes or backslashes)", ErrInvalidRequest, i, sc)
		}
	}
	p, err := s.Provider(ctx, provider)
	if err != nil {
		return "", err
	}
	if !p.Enabled {
		return "", fmt.Errorf("%w: %s", ErrProviderDisabled, provider)
	}
	requested := slices.Clone(p.Scopes)
	if c, err := s.Store.GetOAuthConnection(ctx, userID, provider); err == nil && c.State == store.ConnectionConnected {
		requested = append(requested, scopesOf(c.Scopes)...)
	}
	requested = append(requested, scopes...)
	slices.Sort(requested)
	requested = slices.Compact(requested)
	scopeJSON, err := json.Marshal(nonNil(requested))
	if err != nil {
		return "", err
	}
	open, err := s.Store.CountOAuthFlows(ctx, userID)
	if err != nil {
		return "", err
	}
	if open >= MaxOpenFlows {
		return "", ErrTooManyFlows
	}
	handle := randomToken()
	f := &store.OAuthFlow{
		ID: randomHex(16), HandleHash: digest(handle),
		// The state is made when the start URL is opened; until then the
		// row holds the hash of a value nobody has.
		StateHash: digest(randomToken()),
		UserID:    userID, Provider: provider, DisplayName: displayName, Phase: store.FlowCreated,
		Scopes: scopeJSON, ExpiresAt: time.Now().Add(FlowTTL),
	}
	if err := s.Store.CreateOAuthFlow(ctx, f); err != nil {
		return "", err
	}
	return s.BrowserURL + StartPath + handle, nil
}

// SessionUser tells whom the console session a browser holds stands for:
// signedIn false when it holds none; userID 0 for a session of the
// administrator or the service. The API server supplies it.
type SessionUser func(r *http.Request) (userID int64, signedIn bool)

// Handler serves the flow's browser routes: the start URL, the callback
// and the confirmation. session, when set, refuses a start URL opened in a
// browser signed in to the console as someone else.
func (s *Service) Handler(session SessionUser) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+StartPath+"{handle}", func(w http.ResponseWriter, r *http.Request) { s.start(w, r, session) })
	mux.HandleFunc("GET "+CallbackPath, s.callback)
	mux.HandleFunc("POST "+ConfirmPath, s.confirm)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		csp.SetHeaders(w.Header())
		// The callback's URL holds the code and state: no page of the
		// flow sends it on as a Referer.
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

func (s *Service) start(w http.ResponseWriter, r *http.Request, session SessionUser) {
	ctx := r.Context()
	f, err := s.Store.FindOAuthFlow(ctx, "handle_hash", digest(r.PathValue("handle")))
	if err != nil {
		s.failed(w, r, err, http.StatusNotFound, "link_invalid_t", "link_invalid")
		return
	}
	if f.Phase != store.FlowCreated || !time.Now().Before(f.ExpiresAt) {
		page(w, r, http.StatusGone, pageData{Title: "link_used_t", Text: "link_used"})
		return
	}
	if session != nil {
		if uid, signedIn := session(r); signedIn && uid != f.UserID {
			page(w, r, http.StatusForbidden, pageData{Title: "other_user_t",
				Text: "other_user"})
			return
		}
	}
	p, err := s.providerRow(ctx, f.Provider)
	if err != nil || p.Status != store.StatusEnabled {
		s.failed(w, r, err, http.StatusConflict, "provider_gone_t", "provider_gone")
		return
	}
	callback, err := s.CallbackURL()
	if err != nil {
		s.failed(w, r, err, http.StatusServiceUnavailable, "not_configured_t", "not_configured")
		return
	}
	state, binding, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	sealedVerifier, _, err := s.Keys.Encrypt(f.UserID, "oauth_flow/"+f.ID+"/verifier", verifier)
	if err != nil {
		s.failed(w, r, err, http.StatusInternalServerError, "cannot_begin_t", "cannot_begin")
		return
	}
	err = s.Store.AdvanceOAuthFlow(ctx, f.ID, store.FlowCreated, store.FlowStarted, map[string]any{
		"state_hash": digest(state), "binding_hash": digest(binding), "verifier": sealedVerifier})
	if err != nil {
		s.failed(w, r, err, http.StatusGone, "link_used_t", "link_used")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookiePrefix + f.ID, Value: binding, Path: s.browserPath() + "/oauth/", MaxAge: int(time.Until(f.ExpiresAt).Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(s.BrowserURL, "https://"),
	})
	conf := s.config(p, "", callback)
	conf.Scopes = scopesOf(f.Scopes)
	opts := []oauth2.AuthCodeOption{}
	if p.PKCE != "0" {
		opts = append(opts, oauth2.S256ChallengeOption(verifier))
	}
	var extra map[string]string
	if len(p.ExtraParams) > 0 && json.Unmarshal(p.ExtraParams, &extra) == nil {
		for k, v := range extra {
			opts = append(opts, oauth2.SetAuthURLParam(k, v))
		}
	}
	http.Redirect(w, r, conf.AuthCodeURL(state, opts...), http.StatusFound)
}

// browserPath is the path BLINDEXEC_BROWSER_URL ends in ("" at the root):
// a reverse proxy may serve the engine under one, and the flow's cookie,
// form and links must stay under it.
func (s *Service) browserPath() string {
	u, err := url.Parse(s.BrowserURL)
	if err != nil {
		return ""
	}
	return strings.TrimRight(u.Path, "/")
}

// bound checks that the request carries the flow's cookie.
func bound(r *http.Request, f *store.OAuthFlow) bool {
	ck, err := r.Cookie(cookiePrefix + f.ID)
	return err == nil && f.BindingHash != "" && subtle.ConstantTimeCompare([]byte(digest(ck.Value)), []byte(f.BindingHash)) == 1
}

func (s *Service) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	// Read strictly: net/http's reading drops a pair it cannot parse (a
	// bad %-escape, a semicolon), so an iss written that way would be
	// read as no iss and the code beside it taken.
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		page(w, r, http.StatusBadRequest, pageData{Title: "malformed_t", Text: "malformed"})
		return
	}
	state := q.Get("state")
	if state == "" {
		page(w, r, http.StatusBadRequest, pageData{Title: "incomplete_t", Text: "no_state"})
		return
	}
	// The provider is the one the stored state names, never one the
	// query names.
	f, err := s.Store.FindOAuthFlow(ctx, "state_hash", digest(state))
	if err != nil {
		s.failed(w, r, err, http.StatusBadRequest, "answer_invalid_t", "answer_invalid")
		return
	}
	if !bound(r, f) {
		page(w, r, http.StatusForbidden, pageData{Title: "not_begun_t",
			Text: "not_begun"})
		return
	}
	if err := s.Store.AdvanceOAuthFlow(ctx, f.ID, store.FlowStarted, store.FlowExchanging, nil); err != nil {
		s.failed(w, r, err, http.StatusBadRequest, "answer_used_t", "nothing_more")
		return
	}
	done := func() {
		if err := s.Store.AdvanceOAuthFlow(context.WithoutCancel(ctx), f.ID, store.FlowExchanging, store.FlowDone, map[string]any{"verifier": nil}); err != nil {
			s.logger().WarnContext(ctx, "oauth flow not closed; it expires by itself", "err", err)
		}
	}
	p, err := s.providerRow(ctx, f.Provider)
	if err != nil || p.Status != store.StatusEnabled {
		done()
		s.failed(w, r, err, http.StatusConflict, "provider_gone_t", "provider_gone_nothing")
		return
	}
	// RFC 9207, before anything of the answer is used (its error text
	// included): a mix-up attack brings another issuer's answer.
	if why := issuerRefusal(p.Issuer, p.IssSupported == "1", q); why != "" {
		done()
		switch why {
		case "iss_missing":
			// A mix-up's answer, or the field set for a provider that does
			// not send iss: only the person sees the page otherwise.
			s.logger().WarnContext(ctx, "oauth callback refused: an answer without iss, which the provider is registered as always sending (authorization_response_iss_parameter_supported); if its metadata does not say so, clear the field",
				"provider", p.Name)
		case "issuer_unregistered":
			// Not an attack as such: the administrator left the issuer
			// out, and cannot see the refusal otherwise.
			s.logger().WarnContext(ctx, "oauth callback refused: the provider sends iss and has no issuer registered; register it as the provider's issuer if it is the provider's own",
				"provider", p.Name, "iss", clip(q.Get("iss"), 255))
			why = "issuer"
		}
		page(w, r, http.StatusBadRequest, pageData{Title: why + "_t",
			Text: why, Args: map[string]string{"provider": p.Name}})
		return
	}
	if e := q.Get("error"); e != "" {
		done()
		page(w, r, http.StatusBadRequest, pageData{Title: "denied_t",
			Text: "denied", Args: map[string]string{"provider": p.Name},
			Provider: clip(e+": "+q.Get("error_description"), 500)})
		return
	}
	code := q.Get("code")
	if code == "" {
		done()
		page(w, r, http.StatusBadRequest, pageData{Title: "incomplete_t", Text: "no_code"})
		return
	}
	tok, secret, err := s.exchange(ctx, p, f, code)
	if err != nil {
		done()
		err = auth.NewMasker(code, secret).Error(err)
		s.logger().InfoContext(ctx, "oauth code exchange failed", "provider", p.Name, "user", f.UserID, "err", err)
		page(w, r, http.StatusBadGateway, pageData{Title: "exchange_t", Text: "exchange",
			Provider: clip(err.Error(), 500)})
		return
	}
	granted := grantedScopes(tok)
	if granted == nil {
		granted = scopesOf(f.Scopes)
	}
	scopeJSON, _ := json.Marshal(nonNil(granted))
	sa, kid, err := s.Keys.Encrypt(f.UserID, "oauth_flow/"+f.ID+"/access_token", tok.AccessToken)
	sr := ""
	if err == nil && tok.RefreshToken != "" {
		sr, _, err = s.Keys.Encrypt(f.UserID, "oauth_flow/"+f.ID+"/refresh_token", tok.RefreshToken)
	}
	csrf := randomToken()
	account := clip(accountOf(tok), 255)
	if err == nil {
		err = s.Store.AdvanceOAuthFlow(ctx, f.ID, store.FlowExchanging, store.FlowObtained, map[string]any{
			"access_token": sa, "refresh_token": sr, "key_id": kid, "scopes": store.JSON(scopeJSON),
			"token_expires_at": expiry(tok), "account": account, "csrf_hash": digest(csrf), "verifier": nil})
	}
	if err != nil {
		done()
		s.revoke(ctx, p, tok.AccessToken, tok.RefreshToken)
		s.failed(w, r, err, http.StatusInternalServerError, "store_t", "store_revoked")
		return
	}
	who := f.DisplayName
	if who == "" {
		who = fmt.Sprintf(flowWords["user_n"][language.Of(r)], f.UserID)
	}
	page(w, r, http.StatusOK, pageData{Title: "confirm_t", Args: map[string]string{"provider": p.Name}, Confirm: true,
		Account: account, ProviderName: p.Name, Who: who, Scopes: strings.Join(granted, " "), FlowID: f.ID, CSRF: csrf,
		Action: s.browserPath() + ConfirmPath})
}

// issuerRefusal is why an authorization response q is refused under
// RFC 9207, "" when it is not: "issuer" for an iss other than the
// provider's issuer (sent more than once included: which one a reader
// takes is not defined), "issuer_unregistered" for an iss where no
// issuer is registered (the engine cannot tell the provider's own from
// a mix-up's), "iss_missing" for no iss where the provider's metadata
// says it always sends one (issSupported).
func issuerRefusal(issuer string, issSupported bool, q url.Values) string {
	iss, sent := q["iss"]
	switch {
	case !sent && issSupported:
		return "iss_missing"
	case !sent:
		return ""
	case issuer == "":
		return "issuer_unregistered"
	case len(iss) != 1 || iss[0] != issuer:
		return "issuer"
	}
	return ""
}

// exchange trades the code for tokens with the stored PKCE verifier.
func (s *Service) exchange(ctx context.Context, p *store.OAuthProvider, f *store.OAuthFlow, code string) (*oauth2.Token, string, error) {
	secret, err := s.clientSecret(p)
	if err != nil {
		return nil, "", err
	}
	verifier, err := s.Keys.Decrypt(f.UserID, "oauth_flow/"+f.ID+"/verifier", f.Verifier)
	if err != nil {
		return nil, secret, err
	}
	callback, err := s.CallbackURL()
	if err != nil {
		return nil, secret, err
	}
	var opts []oauth2.AuthCodeOption
	if p.PKCE != "0" {
		opts = append(opts, oauth2.VerifierOption(verifier))
	}
	ctx, cancel := s.providerContext(ctx)
	defer cancel()
	tok, err := s.config(p, secret, callback).Exchange(ctx, code, opts...)
	if err != nil {
		return nil, secret, auth.NewMasker(verifier).Error(err)
	}
	if tok.AccessToken == "" || strings.ContainsAny(tok.AccessToken+tok.RefreshToken, "\r\n\x00") {
		return nil, secret, errors.New("the token response holds no usable access token")
	}
	return tok, secret, nil
}

func (s *Service) confirm(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		page(w, r, http.StatusBadRequest, pageData{Title: "confirm_invalid_t", Text: "nothing"})
		return
	}
	f, err := s.Store.FindOAuthFlow(ctx, "flow_id", r.PostForm.Get("flow"))
	if err != nil {
		s.failed(w, r, err, http.StatusBadRequest, "confirm_invalid2_t", "confirm_used")
		return
	}
	if !bound(r, f) || f.CSRFHash == "" || subtle.ConstantTimeCompare([]byte(digest(r.PostForm.Get("csrf"))), []byte(f.CSRFHash)) != 1 {
		page(w, r, http.StatusForbidden, pageData{Title: "not_from_page_t",
			Text: "not_from_page"})
		return
	}
	connect := r.PostForm.Get("decision") == "connect"
	// Spent once, whatever is decided; the tokens leave the flow's row.
	err = s.Store.AdvanceOAuthFlow(ctx, f.ID, store.FlowObtained, store.FlowDone, map[string]any{"access_token": nil, "refresh_token": nil, "csrf_hash": nil})
	if err != nil {
		s.failed(w, r, err, http.StatusBadRequest, "confirm_used_t", "nothing_more")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookiePrefix + f.ID, Value: "", Path: s.browserPath() + "/oauth/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	access, refresh, err := s.flowTokens(f)
	if err != nil {
		s.failed(w, r, err, http.StatusInternalServerError, "store_t", "nothing")
		return
	}
	p, err := s.providerRow(ctx, f.Provider)
	if err != nil {
		s.failed(w, r, err, http.StatusConflict, "provider_gone_t", "removed_nothing")
		return
	}
	if p.Status != store.StatusEnabled {
		s.revoke(ctx, p, access, refresh)
		page(w, r, http.StatusConflict, pageData{Title: "provider_gone_t", Text: "disabled_revoked"})
		return
	}
	if !connect {
		s.revoke(ctx, p, access, refresh)
		page(w, r, http.StatusOK, pageData{Title: "declined_t", Text: "declined", Args: map[string]string{"provider": p.Name}})
		return
	}
	// A reconnect replaces the connection: the grant it held is revoked
	// once the new one is stored.
	previous, _ := s.Store.GetOAuthConnection(ctx, f.UserID, f.Provider)
	sa, sr, kid, err := s.sealTokens(f.UserID, f.Provider, access, refresh)
	if err == nil {
		err = s.Store.PutOAuthConnection(ctx, &store.OAuthConnection{UserID: f.UserID, Provider: f.Provider, AccessToken: sa, RefreshToken: sr,
			KeyID: kid, Scopes: f.Scopes, ExpiresAt: f.TokenExpiresAt, Account: f.Account})
	}
	if err != nil {
		s.revoke(ctx, p, access, refresh)
		s.failed(w, r, err, http.StatusInternalServerError, "store_t", "store_revoked")
		return
	}
	if previous != nil {
		if oldAccess, oldRefresh, err := s.connectionTokens(previous); err == nil && oldAccess != access {
			s.revoke(ctx, p, oldAccess, oldRefresh)
		}
	}
	s.logger().InfoContext(ctx, "account connected", "provider", f.Provider, "user", f.UserID)
	s.recordConnected(ctx, f)
	page(w, r, http.StatusOK, pageData{Title: "connected_t", Text: "connected", Args: map[string]string{"provider": p.Name}, Back: s.browserPath() + "/console/#/connections"})
}

// OpConnected is the administrators' log's op of a user connecting an
// account (api's vocabulary says it in words).
const OpConnected = "connection.connected"

// recordConnected writes the connection into the administrators' log: a
// change made in a browser, by the user, without a token (issue 51 point
// 4). A failure is logged: the connection was made.
func (s *Service) recordConnected(ctx context.Context, f *store.OAuthFlow) {
	user := strconv.FormatInt(f.UserID, 10)
	e := &store.AdminEvent{Actor: "user " + user, Via: "browser", Action: "CONNECT", Kind: "connection", Target: f.Provider, HTTPStatus: http.StatusOK}
	args := map[string]string{"user": user, "provider": f.Provider}
	if f.Account != "" {
		args["account"] = f.Account
	}
	e.SetDetail(store.AdminDetail{Op: OpConnected, Args: args})
	if err := s.Store.InsertAdminEvent(context.WithoutCancel(ctx), e); err != nil {
		s.logger().WarnContext(ctx, "a connection not recorded in the administrators' log", "provider", f.Provider, "user", f.UserID, "err", err)
	}
}

func (s *Service) flowTokens(f *store.OAuthFlow) (access, refresh string, err error) {
	if access, err = s.Keys.Decrypt(f.UserID, "oauth_flow/"+f.ID+"/access_token", f.AccessToken); err != nil {
		return "", "", err
	}
	if f.RefreshToken != "" {
		refresh, err = s.Keys.Decrypt(f.UserID, "oauth_flow/"+f.ID+"/refresh_token", f.RefreshToken)
	}
	return access, refresh, err
}

// failed shows a page for a failure: a flow not found, or the store
// failing (logged; the page says only what the user can act on).
func (s *Service) failed(w http.ResponseWriter, r *http.Request, err error, status int, title, text string) {
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, ErrNoProvider) {
		// The route, not the path: a start URL's path is its handle.
		s.logger().WarnContext(r.Context(), "oauth flow", "route", r.Pattern, "err", err)
		status, text = http.StatusServiceUnavailable, "unavailable"
	}
	page(w, r, status, pageData{Title: title, Text: text})
}

// accountOf is the provider account the tokens are of, when the answer
// tells it: an id_token's email, preferred_username, name or sub, shown
// on the confirmation page (display only: nothing is decided on it).
func accountOf(tok *oauth2.Token) string {
	idt, _ := tok.Extra("id_token").(string)
	parts := strings.Split(idt, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims map[string]any
	if json.Unmarshal(raw, &claims) != nil {
		return ""
	}
	for _, k := range []string{"email", "preferred_username", "name", "sub"} {
		if v, ok := claims[k].(string); ok && v != "" && printable(v) {
			return v
		}
	}
	return ""
}

// printable reports whether provider text may be shown as a name:
// without control characters (a terminal listing connections would obey
// an escape sequence) or bidirectional controls (which would show another
// name than the one stored).
func printable(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
	})
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// randomToken is 32 random bytes, base64url: a handle, state, cookie
// binding or CSRF token.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// digest is the hex SHA-256 kept of a handle, state, binding or CSRF
// token.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// flowWords are the flow pages' sentences: key → English, Chinese; a
// {name} is one of the page's Args. The page speaks the language the
// browser's Accept-Language ranks first of the two.
var flowWords = map[string][2]string{
	"link_invalid_t":        {"This sign-in link is not valid", "登录链接无效"},
	"link_invalid":          {"It was used already, has expired, or was never issued. Ask for a new one.", "它已被使用、已过期或从未签发。请重新获取。"},
	"link_used_t":           {"This sign-in link was used already or has expired", "该登录链接已被使用或已过期"},
	"link_used":             {"A sign-in link works once, for ten minutes. Ask for a new one.", "登录链接只能使用一次，有效期十分钟。请重新获取。"},
	"other_user_t":          {"This sign-in link is for another user", "该登录链接属于另一个用户"},
	"other_user":            {"This browser is signed in to the console as another user than the one this link connects an account for. Nothing was connected. Open the link in the browser of the user it was made for, or sign out of the console first.", "此浏览器登录控制台的用户不是该链接要为其连接账号的用户。未连接任何账号。请在该用户的浏览器中打开链接，或先退出控制台。"},
	"provider_gone_t":       {"The provider is not available", "提供方不可用"},
	"provider_gone":         {"The administrator removed or disabled it.", "管理员已移除或停用它。"},
	"not_configured_t":      {"Connections are not configured", "未配置账号连接"},
	"not_configured":        {"The engine's browser address (BLINDEXEC_BROWSER_URL) is not set.", "引擎的浏览器地址（BLINDEXEC_BROWSER_URL）未设置。"},
	"cannot_begin_t":        {"The sign-in cannot begin", "无法开始登录"},
	"cannot_begin":          {"The engine cannot store it.", "引擎无法保存它。"},
	"incomplete_t":          {"The sign-in answer is incomplete", "登录应答不完整"},
	"malformed_t":           {"The sign-in answer cannot be read", "无法读取登录应答"},
	"malformed":             {"A parameter of its address is malformed (a bad %-escape or a semicolon). Nothing was connected. Start again.", "其地址中有参数格式错误（错误的 % 转义或分号）。未连接任何账号。请重新开始。"},
	"no_state":              {"It carries no state. Nothing was connected.", "它没有 state 参数。未连接任何账号。"},
	"answer_invalid_t":      {"This sign-in answer is not valid", "该登录应答无效"},
	"answer_invalid":        {"Its state is unknown, was used already, or has expired. Nothing was connected. Start again.", "其 state 未知、已被使用或已过期。未连接任何账号。请重新开始。"},
	"not_begun_t":           {"This browser did not begin this sign-in", "该登录不是在此浏览器中开始的"},
	"not_begun":             {"The sign-in's cookie is missing. Nothing was connected. Start again from the link you were given, in this browser.", "缺少登录的 Cookie。未连接任何账号。请在此浏览器中从给你的链接重新开始。"},
	"answer_used_t":         {"This sign-in answer was used already or has expired", "该登录应答已被使用或已过期"},
	"nothing_more":          {"Nothing more was connected. Start again.", "没有再连接任何账号。请重新开始。"},
	"provider_gone_nothing": {"The administrator removed or disabled it. Nothing was connected.", "管理员已移除或停用它。未连接任何账号。"},
	"denied_t":              {"The provider did not grant access", "提供方未授予访问权限"},
	"iss_missing_t":         {"The sign-in answer does not say who issued it", "登录应答未注明签发者"},
	"issuer_t":              {"The sign-in answer came from another issuer", "登录应答来自其他签发者"},
	"no_code":               {"It carries no code. Nothing was connected.", "它没有 code 参数。未连接任何账号。"},
	"exchange_t":            {"The provider did not give access", "提供方未给予访问权限"},
	"exchange":              {"Nothing was connected. The token request failed:", "未连接任何账号。令牌请求失败："},
	"store_t":               {"The connection cannot be stored", "无法保存连接"},
	"store_revoked":         {"The tokens were revoked. Nothing was connected.", "令牌已吊销。未连接任何账号。"},
	"confirm_invalid_t":     {"The confirmation is not valid", "确认无效"},
	"nothing":               {"Nothing was connected.", "未连接任何账号。"},
	"confirm_invalid2_t":    {"This confirmation is not valid", "该确认无效"},
	"confirm_used":          {"It was used already or has expired. Nothing was connected.", "它已被使用或已过期。未连接任何账号。"},
	"not_from_page_t":       {"This confirmation did not come from the sign-in page", "该确认不是来自登录页面"},
	"not_from_page":         {"Its cookie or form token is missing or wrong. Nothing was connected.", "其 Cookie 或表单令牌缺失或有误。未连接任何账号。"},
	"confirm_used_t":        {"This confirmation was used already or has expired", "该确认已被使用或已过期"},
	"removed_nothing":       {"The administrator removed it. Nothing was connected.", "管理员已移除它。未连接任何账号。"},
	"disabled_revoked":      {"The administrator disabled it. The access just granted was revoked. Nothing was connected.", "管理员已停用它。刚授予的访问权限已吊销。未连接任何账号。"},
	"declined_t":            {"Not connected", "未连接"},
	"connected_t":           {"Connected", "已连接"},
	"unavailable":           {"The engine cannot read or store the sign-in at the moment. Nothing was connected. Try again later.", "引擎暂时无法读取或保存登录。未连接任何账号。请稍后再试。"},
	"denied":                {"Nothing was connected. The provider {provider} answered:", "未连接任何账号。提供方 {provider} 的应答："},
	"iss_missing":           {"Its answer carries no iss parameter, which {provider} is registered as always sending (RFC 9207). Nothing was connected.", "其应答没有 iss 参数，而 {provider} 注册为总会发送它（RFC 9207）。未连接任何账号。"},
	"issuer":                {"Its iss parameter is not the issuer registered for {provider}. Nothing was connected.", "其 iss 参数不是为 {provider} 注册的签发者。未连接任何账号。"},
	"confirm_t":             {"Connect your {provider} account?", "连接你的 {provider} 账号？"},
	"declined":              {"The access the provider {provider} just granted was revoked. You may close this window.", "提供方 {provider} 刚授予的访问权限已吊销。你可以关闭此窗口。"},
	"connected":             {"Your {provider} account is connected. You may close this window and go back to the assistant.", "你的 {provider} 账号已连接。你可以关闭此窗口，回到助手。"},
	"connect_q":             {"Connect the {provider} account {account} to {who}?", "把 {provider} 账号 {account} 连接到{who}？"},
	"connect_q_this":        {"Connect this {provider} account to {who}?", "把这个 {provider} 账号连接到{who}？"},
	"granted":               {"Access granted:", "授予的权限："},
	"only_if":               {"Connect only if you are {who} and you started this yourself. If someone sent you this link, decline.", "只有当你就是{who}、并且是你自己发起的，才连接。如果这个链接是别人发给你的，请拒绝。"},
	"connect":               {"Connect", "连接"},
	"decline":               {"Decline", "拒绝"},
	"back":                  {"Back to your connections in the console", "返回控制台的账号连接页"},
	"user_n":                {"user %d", "用户 %d"},
}

// say is the sentence key in language i, its {names} filled from args.
func say(i int, key string, args map[string]string) string {
	w, ok := flowWords[key]
	if !ok {
		return key
	}
	s := w[i]
	for k, v := range args {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// pageData fills the flow's one page template. Title and Text are keys of
// flowWords, their {names} from Args. Everything in it is text:
// html/template escapes it, and Provider holds what the provider said.
type pageData struct {
	Title, Text, Provider                            string
	Args                                             map[string]string
	Confirm                                          bool
	Account, ProviderName, Who, Scopes, FlowID, CSRF string
	Action                                           string
	// Back links the console's connections page: a connect begun there
	// ends there.
	Back string
}

// shown is what the template shows: pageData in words of one language.
type shown struct {
	pageData
	Lang, Title, Text, Granted, OnlyIf, Connect, Decline, BackText, CSS string
	// Question names the account and the user in bold.
	Question template.HTML
}

// The flow's pages are styled as the console: its stylesheet, under the
// policy every page has (style-src 'self').
var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title><link rel="stylesheet" href="{{.CSS}}"></head>
<body>
<header class="top"><span class="brand">blindexec</span></header>
<main id="main" class="oauth">
<h1>{{.Title}}</h1>
{{if .Text}}<p class="purpose">{{.Text}}</p>{{end}}
{{if .Provider}}<pre>{{.Provider}}</pre>{{end}}
{{if .Confirm}}
<p>{{.Question}}</p>
{{if .Scopes}}<p>{{.Granted}} <code>{{.Scopes}}</code></p>{{end}}
<p class="warning">{{.OnlyIf}}</p>
<form method="post" action="{{.Action}}" class="row">
<input type="hidden" name="flow" value="{{.FlowID}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<button type="submit" name="decision" value="connect">{{.Connect}}</button>
<button type="submit" name="decision" value="decline" class="secondary">{{.Decline}}</button>
</form>
{{end}}
{{if .Back}}<p><a href="{{.Back}}">{{.BackText}}</a></p>{{end}}
</main>
</body></html>
`))

// bold fills s's {names} from args, escaped, the values of names in
// <strong>: the sentence's words are the engine's, the values are not.
func bold(s string, args map[string]string, names ...string) template.HTML {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			b.WriteString(html.EscapeString(s))
			return template.HTML(b.String())
		}
		j := strings.IndexByte(s[i:], '}') + i
		if j < i {
			b.WriteString(html.EscapeString(s))
			return template.HTML(b.String())
		}
		b.WriteString(html.EscapeString(s[:i]))
		name, v := s[i+1:j], html.EscapeString(args[s[i+1:j]])
		if slices.Contains(names, name) {
			v = "<strong>" + v + "</strong>"
		}
		b.WriteString(v)
		s = s[j+1:]
	}
}

// consoleCSS is the console's stylesheet relative to the page: under
// the path BLINDEXEC_BROWSER_URL ends in, as the page is, whether or not
// a proxy strips it.
func consoleCSS(r *http.Request) string {
	return strings.Repeat("../", strings.Count(strings.TrimPrefix(r.URL.Path, "/"), "/")) + "console/assets/app.css"
}

// page writes a flow page in the language the browser asks for.
func page(w http.ResponseWriter, r *http.Request, status int, d pageData) {
	i := language.Of(r)
	args := map[string]string{"provider": d.ProviderName, "account": d.Account, "who": d.Who}
	for k, v := range d.Args {
		args[k] = v
	}
	out := shown{pageData: d, Lang: language.Tags[i], Title: say(i, d.Title, args), Text: say(i, d.Text, args),
		Granted: say(i, "granted", nil), OnlyIf: say(i, "only_if", args), Connect: say(i, "connect", nil), Decline: say(i, "decline", nil),
		BackText: say(i, "back", nil), CSS: consoleCSS(r)}
	q := "connect_q_this"
	if d.Account != "" {
		q = "connect_q"
	}
	out.Question = bold(flowWords[q][i], args, "account", "who")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Language", out.Lang)
	w.Header().Add("Vary", "Accept-Language")
	w.WriteHeader(status)
	pageTemplate.Execute(w, out)
}
