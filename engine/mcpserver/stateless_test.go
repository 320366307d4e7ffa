package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/internal/logbuf"
)

// erasEnv serves a catalog on one Handler, tokens "user-N" acting for N.
type erasEnv struct {
	t   testing.TB
	url string
	cat *liveCatalog
	svc *mcpserver.Service
}

func newErasEnv(t testing.TB, opts mcpserver.Options, upstream http.HandlerFunc, tools ...string) *erasEnv {
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	cat := &liveCatalog{ps: echoTools(up.URL, tools...), version: 1}
	svc := mcpserver.NewService(cat, engine.NewExecutor(egresstest.Client(t)), opts)
	srv := httptest.NewServer(svc.Handler(userToken))
	t.Cleanup(srv.Close)
	t.Cleanup(svc.Close)
	return &erasEnv{t: t, url: srv.URL, cat: cat, svc: svc}
}

// userToken authenticates the tokens "user-N", acting for N.
func userToken(r *http.Request) (mcpserver.Identity, error) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var user int64
	if _, err := fmt.Sscanf(tok, "user-%d", &user); err != nil {
		return mcpserver.Identity{}, errors.New("unknown token")
	}
	return mcpserver.Identity{User: user, Principal: tok}, nil
}

// connect connects a go-sdk client as user at the protocol version
// ("" the client's newest, 2026-07-28).
func (e *erasEnv) connect(user int, version string, copts *sdk.ClientOptions) *sdk.ClientSession {
	e.t.Helper()
	hc := &http.Client{Transport: headers{"Authorization": fmt.Sprintf("Bearer user-%d", user)}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, copts).
		Connect(e.t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url, HTTPClient: hc}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// TestBothEras: on one endpoint, the go-sdk v1.8 client at 2026-07-28
// is served without a session, and one at 2025-11-25 in a session, each
// listing the tools in one order and calling them.
func TestBothEras(t *testing.T) {
	up := echoUpstream(t)
	e := newErasEnv(t, mcpserver.Options{}, up.Config.Handler.ServeHTTP, "zeta", "alpha", "mid")
	for _, tc := range []struct{ version, negotiated, session string }{
		{"", "2026-07-28", "none"},
		{"2025-11-25", "2025-11-25", "a session"},
	} {
		cs := e.connect(7, tc.version, nil)
		if got := cs.InitializeResult().ProtocolVersion; got != tc.negotiated {
			t.Errorf("%s: negotiated %s, want %s", tc.negotiated, got, tc.negotiated)
		}
		if (cs.ID() != "") != (tc.session != "none") {
			t.Errorf("%s: session id %q, want %s", tc.negotiated, cs.ID(), tc.session)
		}
		for range 3 {
			if got := toolNames(t, cs); !slices.Equal(got, []string{"alpha", "mid", "zeta"}) {
				t.Errorf("%s: tools = %v, want the catalog's name order every time", tc.negotiated, got)
			}
		}
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "mid", Arguments: map[string]any{"q": "x"}})
		if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != `{"tool":"mid","q":"x"}` {
			t.Errorf("%s: call = %v %+v", tc.negotiated, err, res)
		}
	}
}

// post sends body to e as user with the headers of a 2026-07-28 client
// (hdr changes them; "" deletes one): the status and body.
func (e *erasEnv) post(user int, body string, hdr map[string]string) (int, string) {
	e.t.Helper()
	return e.postContext(context.Background(), user, body, hdr)
}

// postContext is post within ctx.
func (e *erasEnv) postContext(ctx context.Context, user int, body string, hdr map[string]string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", fmt.Sprintf("Bearer user-%d", user))
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", gjson.Get(body, "method").String())
	if n := gjson.Get(body, "params.name"); n.Exists() {
		req.Header.Set("Mcp-Name", n.String())
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil { // the test ended it
			return 0, ""
		}
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// meta is the _meta of a 2026-07-28 request.
const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

// TestStatelessWire: what a request of 2026-07-28 is answered, as the
// revision's transport and lifecycle pages ask.
func TestStatelessWire(t *testing.T) {
	up := echoUpstream(t)
	e := newErasEnv(t, mcpserver.Options{}, up.Config.Handler.ServeHTTP, "b", "a")
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","arguments":{"q":"y"},` + meta + `}}`
	discover := `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{` + meta + `}}`
	for _, tc := range []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
		want   []string // in the body
	}{
		{"server/discover names every version served", discover, nil, 200, []string{`"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`, `"tools":{"listChanged":true}`}},
		{"tools/list: private, with a ttl, in name order", list, nil, 200, []string{`"resultType":"complete"`, `"ttlMs":60000`, `"cacheScope":"private"`, `"tools":[{"annotations"`, `"name":"a"`}},
		{"tools/call", call, nil, 200, []string{`"result":{"resultType":"complete",`, `"text":"{\"tool\":\"a\",\"q\":\"y\"}"`}},
		{"Mcp-Method differs from the body", list, map[string]string{"Mcp-Method": "tools/call"}, 400, []string{`"code":-32020`}},
		{"Mcp-Name differs from the body", call, map[string]string{"Mcp-Name": "b"}, 400, []string{`"code":-32020`}},
		{"no Mcp-Protocol-Version header", list, map[string]string{"Mcp-Protocol-Version": ""}, 400, []string{`"code":-32020`}},
		{"the header differs from _meta", list, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, 400, []string{`"code":-32020`}},
		{"a version to come", strings.ReplaceAll(list, "2026-07-28", "2027-01-01"), map[string]string{"Mcp-Protocol-Version": "2027-01-01"}, 400,
			[]string{`"code":-32022`, `"supported":["2026-07-28","2025-11-25"`, `"requested":"2027-01-01"`}},
		{"initialize is not of this era", `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"x","version":"1"},` + meta + `}}`, nil, 404, []string{`"code":-32601`}},
		{"another Host on loopback", list, map[string]string{"Host": "evil.example"}, 403, []string{"invalid Host"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h := tc.hdr["Host"]; h != "" {
				req, _ := http.NewRequest("POST", e.url, strings.NewReader(tc.body))
				req.Host = h
				req.Header.Set("Authorization", "Bearer user-7")
				req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
				}
				return
			}
			status, body := e.post(7, tc.body, tc.hdr)
			if status != tc.status {
				t.Errorf("status %d, want %d: %s", status, tc.status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %s:\n%s", w, body)
				}
			}
		})
	}
	// No token: 401, as on the stateful path.
	req, _ := http.NewRequest("POST", e.url, strings.NewReader(list))
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
}

// The calls of slowEnv's tools.
const (
	slowCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{},` + meta + `}}`
	fastCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fast","arguments":{},` + meta + `}}`
)

// slowEnv serves two tools within limits: slow, which sends on entered
// and answers once release is received from (or closed), and fast.
func slowEnv(t *testing.T, opts mcpserver.Options) (e *erasEnv, entered, release chan struct{}) {
	release = make(chan struct{})
	entered = make(chan struct{}, 4)
	e = newErasEnv(t, opts, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/slow") {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, `{"ok":true}`)
	}, "slow", "fast")
	return e, entered, release
}

// TestInFlightPerUser: a user's stateless requests in flight are bounded
// by the per-user cap; past it a request is refused with 429, another
// user's still served.
func TestInFlightPerUser(t *testing.T) {
	e, entered, release := slowEnv(t, mcpserver.Options{Sessions: mcpserver.SessionLimits{PerUser: 1}})
	defer close(release)
	done := make(chan int, 1)
	go func() { status, _ := e.post(7, slowCall, nil); done <- status }()
	<-entered
	if status, body := e.post(7, fastCall, nil); status != http.StatusTooManyRequests || !strings.Contains(body, `"code":-32001`) || !strings.Contains(body, "requests in flight per user") {
		t.Errorf("a second request of user 7: %d %s, want 429 naming the limit", status, body)
	}
	if status, body := e.post(8, fastCall, nil); status != http.StatusOK || !strings.Contains(body, `{\"ok\":true}`) {
		t.Errorf("user 8: %d %s", status, body)
	}
	release <- struct{}{}
	if status := <-done; status != http.StatusOK {
		t.Errorf("the slow call: %d", status)
	}
	if status, _ := e.post(7, fastCall, nil); status != http.StatusOK {
		t.Errorf("user 7 once the first was answered: %d", status)
	}
}

// TestInFlightPerReplica (mcp78): a token acting for any user it names
// (the service token's X-User-Id) held a stateless request open per user
// and per user again, without end: the sessions of the older era are
// capped per replica (BLINDEXEC_MCP_MAX_SESSIONS), the requests in
// flight of the newer one were not. Past the replica's bound a request
// is refused with 429 whatever its user.
func TestInFlightPerReplica(t *testing.T) {
	e, entered, release := slowEnv(t, mcpserver.Options{Sessions: mcpserver.SessionLimits{PerUser: 4, Total: 2}})
	done := make(chan int, 2)
	for _, user := range []int{7, 8} {
		go func() { status, _ := e.post(user, slowCall, nil); done <- status }()
		<-entered
	}
	status, body := e.post(9, fastCall, nil)
	close(release)
	if status != http.StatusTooManyRequests || !strings.Contains(body, `"code":-32001`) || !strings.Contains(body, "requests in flight of the replica") || !strings.Contains(body, mcpserver.EnvSessions) {
		t.Errorf("a third user's request with two in flight under a bound of 2: %d %s, want 429 naming the limit", status, body)
	}
	for range 2 {
		if status := <-done; status != http.StatusOK {
			t.Errorf("a slow call: %d", status)
		}
	}
	if status, _ := e.post(9, fastCall, nil); status != http.StatusOK {
		t.Errorf("user 9 once the others were answered: %d", status)
	}
}

// listenEnv is slowEnv with a clock of the listen streams' tenure moved
// by hand, and its log kept.
type listenEnv struct {
	*erasEnv
	t                *testing.T
	entered, release chan struct{}
	log              *logbuf.Buffer

	mu  sync.Mutex
	now time.Time
}

// listenBody is a subscriptions/listen request of 2026-07-28.
const listenBody = `{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta + `}}`

func newListenEnv(t *testing.T, limits mcpserver.SessionLimits) *listenEnv {
	log := &logbuf.Buffer{}
	e, entered, release := slowEnv(t, mcpserver.Options{Sessions: limits, Logger: slog.New(slog.NewTextHandler(log, nil))})
	le := &listenEnv{erasEnv: e, t: t, entered: entered, release: release, log: log, now: time.Now()}
	mcpserver.SetClock(e.svc, func() time.Time { le.mu.Lock(); defer le.mu.Unlock(); return le.now })
	return le
}

// age moves the clock past a listen stream's tenure.
func (le *listenEnv) age() {
	le.mu.Lock()
	defer le.mu.Unlock()
	le.now = le.now.Add(mcpserver.ListenTenure)
}

// open opens user's listen stream, the want-th holding a place: its body
// once it ends.
func (le *listenEnv) open(user, want int) chan string {
	le.t.Helper()
	ch := make(chan string, 1)
	go func() { _, body := le.postContext(le.t.Context(), user, listenBody, nil); ch <- body }()
	for deadline := time.Now().Add(5 * time.Second); mcpserver.Listening(le.svc) < want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			le.t.Fatalf("user %d's listen stream never held its place", user)
		}
	}
	return ch
}

// isOpen reports whether the stream ch is still open.
func isOpen(ch chan string) bool {
	select {
	case body := <-ch:
		ch <- body
		return false
	case <-time.After(50 * time.Millisecond):
		return true
	}
}

// waitEnded waits for the stream ch, named which, to end as a listen
// stream ends.
func (le *listenEnv) waitEnded(ch chan string, which string) {
	le.t.Helper()
	select {
	case body := <-ch:
		if !strings.Contains(body, "notifications/subscriptions/acknowledged") {
			le.t.Errorf("%s: %s", which, body)
		}
	case <-time.After(5 * time.Second):
		le.t.Fatalf("%s was not ended", which)
	}
}

// TestListenYieldsItsPlace (leftovers80): a subscriptions/listen stream
// holds a place in flight while it waits, as an idle session holds one.
// The service token names any user, so it could fill the replica's bound
// (BLINDEXEC_MCP_MAX_SESSIONS) with listen streams of distinct users, and
// every other user was refused 429 until one ended; a user's own streams
// filled the user's bound alike. Past a bound a request now ends the
// oldest listen stream under it (the user's own for the per-user bound,
// another's once it held its place ListenTenure: listen81) and is
// served; a request at work is never ended for another.
func TestListenYieldsItsPlace(t *testing.T) {
	le := newListenEnv(t, mcpserver.SessionLimits{PerUser: 2, Total: 3})
	defer close(le.release)
	// The service token's three users fill the replica's bound of 3.
	s7, s8, s9 := le.open(7, 1), le.open(8, 2), le.open(9, 3)
	le.age()
	if status, body := le.post(10, fastCall, nil); status != http.StatusOK || !strings.Contains(body, `{\"ok\":true}`) {
		t.Fatalf("user 10 with the replica's places held by listen streams: %d %s, want served", status, body)
	}
	le.waitEnded(s7, "the oldest listen stream, user 7's")
	if !isOpen(s8) || !isOpen(s9) {
		t.Error("a listen stream other than the oldest was ended")
	}
	// The per-user bound of 2: user 9's second stream, then a call of
	// its own ends user 9's oldest, not user 8's, older still; a young
	// stream of its own is no matter.
	s9b := le.open(9, 3)
	if status, _ := le.post(9, fastCall, nil); status != http.StatusOK {
		t.Fatalf("user 9 with its places held by its listen streams: %d, want served", status)
	}
	le.waitEnded(s9, "user 9's oldest listen stream")
	if !isOpen(s8) || !isOpen(s9b) {
		t.Error("the per-user bound ended another user's stream, or the newer")
	}
	// Requests at work are not ended: three slow calls take the places
	// of the two streams left, and a fourth request is refused.
	le.age()
	done := make(chan int, 3)
	for _, user := range []int{11, 12, 13} {
		go func() { status, _ := le.post(user, slowCall, nil); done <- status }()
		<-le.entered
	}
	le.waitEnded(s8, "user 8's listen stream")
	le.waitEnded(s9b, "user 9's second listen stream")
	if status, body := le.post(14, fastCall, nil); status != http.StatusTooManyRequests || !strings.Contains(body, "requests in flight of the replica") {
		t.Errorf("with three calls at work: %d %s, want 429", status, body)
	}
	for range 3 {
		le.release <- struct{}{}
		if status := <-done; status != http.StatusOK {
			t.Errorf("a slow call: %d", status)
		}
	}
}

// TestListenTenure (listen81): leftovers80's bound is checked before the
// request is read, so a loop of cheap requests of one user past the
// replica's bound ended a listen stream of anyone each, without end, and
// a stream ended, listening again while the replica was full, ended the
// next: a cascade through every user's streams (review81). Another
// user's stream is now ended only once it held its place ListenTenure:
// the loop ends the old streams once each, then is refused 429, and the
// requesting user is logged, once a tenure.
func TestListenTenure(t *testing.T) {
	le := newListenEnv(t, mcpserver.SessionLimits{PerUser: 2, Total: 3})
	streams := map[int]chan string{7: le.open(7, 1), 8: le.open(8, 2)}
	le.age()
	streams[9] = le.open(9, 3)
	// User 1's loop of requests answered at once (a malformed body), each
	// ended stream's client listening again at once.
	var ended []int
	status, body := 0, ""
	for range 6 {
		if status, body = le.post(1, `{"jsonrpc":`, nil); status == http.StatusTooManyRequests {
			break
		}
		user := le.endedOf(streams)
		ended = append(ended, user)
		streams[user] = le.open(user, 3)
	}
	if !slices.Equal(ended, []int{7, 8}) || status != http.StatusTooManyRequests || !strings.Contains(body, "requests in flight of the replica") {
		t.Errorf("user 1's loop ended the streams of %v, then %d %s; want 7's and 8's (older than the tenure), then 429", ended, status, body)
	}
	if lines := strings.Count(le.log.String(), "ended to serve a request"); lines != 1 || !strings.Contains(le.log.String(), "user=1 ended_user=7") {
		t.Errorf("log, want one line naming user 1 and user 7 (once a tenure):\n%s", le.log)
	}
	// No cascade: the young streams hold; once old, the loop is served
	// again, and logged again.
	for user, ch := range streams {
		if !isOpen(ch) {
			t.Errorf("user %d's young stream was ended", user)
		}
	}
	le.age()
	if status, _ := le.post(1, `{"jsonrpc":`, nil); status == http.StatusTooManyRequests {
		t.Errorf("user 1 once the streams held their places a tenure: %d, want served", status)
	}
	if lines := strings.Count(le.log.String(), "ended to serve a request"); lines != 2 {
		t.Errorf("%d log lines after a tenure, want 2:\n%s", lines, le.log)
	}
}

// TestListenNoCascade (listen81): a stream ended for another user's
// request listens again while the replica is full; it is refused 429,
// not served by ending another young stream, which would listen again
// and end the next (review81).
func TestListenNoCascade(t *testing.T) {
	le := newListenEnv(t, mcpserver.SessionLimits{PerUser: 2, Total: 3})
	s7 := le.open(7, 1)
	le.age()
	s8, s9 := le.open(8, 2), le.open(9, 3)
	done := make(chan int, 1)
	go func() { status, _ := le.post(10, slowCall, nil); done <- status }() // at work, in user 7's place
	<-le.entered
	defer func() {
		close(le.release)
		if status := <-done; status != http.StatusOK {
			t.Errorf("the slow call: %d", status)
		}
	}()
	le.waitEnded(s7, "user 7's stream, older than the tenure")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if status, body := le.postContext(ctx, 7, listenBody, nil); status != http.StatusTooManyRequests || !strings.Contains(body, "requests in flight of the replica") {
		t.Errorf("user 7 listening again with the replica full of young streams: %d %s, want 429", status, body)
	}
	if !isOpen(s8) || !isOpen(s9) {
		t.Error("a young stream was ended for user 7's stream listening again")
	}
}

// endedOf waits for one of streams to end: its user.
func (le *listenEnv) endedOf(streams map[int]chan string) int {
	le.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for user, ch := range streams {
			select {
			case <-ch:
				return user
			default:
			}
		}
	}
	le.t.Fatal("no listen stream ended")
	return 0
}

// TestListenCatalogChange: the go-sdk client at 2026-07-28 with a
// ToolListChangedHandler holds subscriptions/listen open; a catalog
// change reaches it within a poll.
func TestListenCatalogChange(t *testing.T) {
	up := echoUpstream(t)
	e := newErasEnv(t, mcpserver.Options{ListenPoll: 20 * time.Millisecond}, up.Config.Handler.ServeHTTP, "a")
	changed := make(chan struct{}, 4)
	cs := e.connect(7, "", &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} }})
	if got := toolNames(t, cs); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("tools = %v", got)
	}
	time.Sleep(100 * time.Millisecond) // the listen's first poll
	e.cat.set(echoTools(up.URL, "a", "b"))
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the catalog changed")
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("tools after the change = %v", got)
	}
}

// TestStatelessSearch: with tool search on, a 2026-07-28 client lists
// the meta-tools, finds a tool with search_tools (told to call it by
// name, since nothing is remembered between requests) and calls it by
// name and through call_tool.
func TestStatelessSearch(t *testing.T) {
	up := echoUpstream(t)
	e := newErasEnv(t, mcpserver.Options{Search: toolset.Config{Mode: toolset.ModeAlways}}, up.Config.Handler.ServeHTTP, "weather", "stocks")
	cs := e.connect(7, "", nil)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"search_tools", "call_tool"}) {
		t.Fatalf("tools = %v", got)
	}
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "weather"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"note":"Call one of these tools by name, or through call_tool."`) {
		t.Fatalf("search: %v %+v", err, res)
	}
	for _, p := range []*sdk.CallToolParams{
		{Name: "weather", Arguments: map[string]any{"q": "x"}},
		{Name: "call_tool", Arguments: map[string]any{"name": "weather", "arguments": map[string]any{"q": "x"}}},
	} {
		res, err := cs.CallTool(t.Context(), p)
		if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != `{"tool":"weather","q":"x"}` {
			t.Errorf("%s: %v %+v", p.Name, err, res)
		}
	}
}

// TestListenEndsOnClose: Close (at shutdown) ends the subscriptions/listen
// streams, which would otherwise hold http.Server.Shutdown.
func TestListenEndsOnClose(t *testing.T) {
	up := echoUpstream(t)
	e := newErasEnv(t, mcpserver.Options{}, up.Config.Handler.ServeHTTP, "a")
	ended := make(chan string, 1)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel) // before the server's Close, which waits for the stream
	go func() {
		_, body := e.postContext(ctx, 7, `{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+meta+`}}`, nil)
		ended <- body
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case body := <-ended:
		t.Fatalf("the stream ended by itself: %s", body)
	default:
	}
	e.svc.Close()
	select {
	case body := <-ended:
		if !strings.Contains(body, "notifications/subscriptions/acknowledged") {
			t.Errorf("the stream: %s", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the listen stream outlived Close")
	}
}
