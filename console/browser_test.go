package console_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

var update = flag.Bool("update", false, "write the console's screenshots into docs/console/")

// The one browser of this test binary, started by the first test that
// needs it when Debian's chromium is installed; browserErr says why not.
var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserCancel func()
	browserErr    error
	proxy         *loopbackProxy
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if browserCancel != nil {
		browserCancel()
	}
	os.Exit(code)
}

// needBrowser starts the browser, or skips a test without chromium (fails
// it under CI, where .ci/run installs it).
func needBrowser(t *testing.T) {
	t.Helper()
	browserOnce.Do(func() { browserCtx, browserCancel, browserErr = startBrowser() })
	if browserErr == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and the browser is missing: %v", browserErr)
	}
	t.Skipf("no browser: %v (apt-get install chromium)", browserErr)
}

func startBrowser() (context.Context, func(), error) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		return nil, nil, err
	}
	proxy = newLoopbackProxy()
	dir, err := os.MkdirTemp("", "console-chromium-")
	if err != nil {
		return nil, nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.UserDataDir(dir),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("metrics-recording-only", true),
		// No name resolves but loopback, and everything, loopback included
		// (<-loopback>), goes through the test's proxy, which refuses any
		// other target: no packet leaves the machine, even from hostile markup.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
		chromedp.ProxyServer(proxy.url),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.WindowSize(1280, 800),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		return nil, nil, fmt.Errorf("start chromium: %w", err)
	}
	return ctx, func() { cancelCtx(); cancelAlloc(); proxy.close(); os.RemoveAll(dir) }, nil
}

// loopbackProxy forwards the browser's requests to loopback addresses only,
// records every other target it refused, and keeps what it passed back.
type loopbackProxy struct {
	srv      *httptest.Server
	url      string
	mu       sync.Mutex
	refused  []string
	received []received
}

// received is an answer the proxy passed to the browser.
type received struct{ target, what, body string }

func newLoopbackProxy() *loopbackProxy {
	p := &loopbackProxy{}
	p.srv = httptest.NewServer(p)
	p.url = p.srv.URL
	return p
}

func (p *loopbackProxy) close() { p.srv.Close() }

func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (p *loopbackProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	if r.Method != http.MethodConnect {
		target = r.URL.Host
	}
	if !isLoopback(target) {
		p.mu.Lock()
		p.refused = append(p.refused, r.Method+" "+target)
		p.mu.Unlock()
		http.Error(w, "the test proxy refuses non-loopback targets", http.StatusForbidden)
		return
	}
	if r.Method == http.MethodConnect {
		up, err := net.Dial("tcp", target)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		go func() { io.Copy(up, conn); up.Close() }()
		io.Copy(conn, up)
		conn.Close()
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	// The transport asks for gzip itself and hands back the plain body,
	// which the proxy keeps to read what the browser received.
	out.Header.Del("Accept-Encoding")
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	body, _ := io.ReadAll(resp.Body)
	p.mu.Lock()
	p.received = append(p.received, received{target: target, what: r.Method + " " + r.URL.RequestURI(), body: string(body)})
	p.mu.Unlock()
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

// receivedFrom returns every answer the browser received from host.
func (p *loopbackProxy) receivedFrom(host string) []received {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []received
	for _, r := range p.received {
		if r.target == host {
			out = append(out, r)
		}
	}
	return out
}

func (p *loopbackProxy) refusedTargets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

// tab is a browser tab in a context of its own (cookies and storage apart
// from the other tabs).
type tab struct {
	t   *testing.T
	ctx context.Context
}

func newTab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first run opens the tab, on the tab's own context: one with a
	// timeout would close the tab when it ends.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	return &tab{t: t, ctx: ctx}
}

func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatal(err)
	}
}

// eval returns the value of a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAsValue, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// wait polls until an element matches the CSS selector.
func (tb *tab) wait(sel string) {
	tb.t.Helper()
	q, _ := json.Marshal(sel)
	deadline := time.Now().Add(20 * time.Second)
	for {
		found, err := chromedp.Run(tb.ctx, chromedp.Evaluate[bool](`document.querySelector(`+string(q)+`) !== null`, chromedp.EvalAsValue))
		if err == nil && found {
			return
		}
		// A click that leaves the page (a link, a form posted) may still
		// be navigating: the evaluation then fails, and the next page is
		// what is waited for.
		if err != nil && !strings.Contains(err.Error(), "navigated or closed") {
			tb.t.Fatalf("waiting for %s: %v", sel, err)
		}
		if time.Now().After(deadline) {
			html := eval[string](tb, `document.body.outerHTML.slice(0, 2000)`)
			tb.t.Fatalf("no %s in the page after 20s: %s", sel, html)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// waitPage waits for a console page to be drawn.
func (tb *tab) waitPage(page string) {
	tb.t.Helper()
	tb.wait(`#page[data-ready="true"][data-page="` + page + `"]`)
}

// open goes to a console route and waits for its page to be drawn.
func (tb *tab) open(base, route, page string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(base + "/console/#/" + route))
	tb.waitPage(page)
}

func (tb *tab) signIn(base, token string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(base + "/console/"))
	tb.wait(`body[data-ready="signin"]`)
	tb.do(chromedp.SendKeys(chromedp.CSS(`#token`), token), chromedp.Submit(chromedp.CSS(`#token`)))
	tb.wait(`body[data-ready="app"]`)
}

func (tb *tab) text(sel string) string {
	tb.t.Helper()
	var s string
	var err error
	// A page that redraws (a language or a time filled in after it was
	// ready) replaces the node between its lookup and the read: read the
	// new one.
	for range 5 {
		if s, err = chromedp.Run(tb.ctx, chromedp.TextContent(chromedp.CSS(sel))); err == nil || !strings.Contains(err.Error(), "No node with given id found") {
			break
		}
	}
	if err != nil {
		tb.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// viewports are the sizes the console is drawn at: a desktop window and
// a phone; suffix names a screenshot's file.
var viewports = []struct {
	name, suffix string
	w, h         int64
	mobile       bool
}{{"1280 px", "", 1280, 800, false}, {"phone", "-phone", 390, 844, true}}

// viewport sets the page's size, a phone's with mobile.
func (tb *tab) viewport(w, h int64, mobile bool) {
	tb.t.Helper()
	if _, err := chromedp.Call(tb.ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: w, Height: h, DeviceScaleFactor: 1, Mobile: mobile}); err != nil {
		tb.t.Fatal(err)
	}
}

// screenshot writes the page at desktop and phone width into docs/console
// (with -update only).
func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	if !*update {
		return
	}
	for _, size := range viewports {
		tb.viewport(size.w, size.h, size.mobile)
		tb.do(chromedp.Sleep(100 * time.Millisecond))
		png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			tb.t.Fatal(err)
		}
		path := filepath.Join("..", "docs", "console", name+size.suffix+".png")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			tb.t.Fatal(err)
		}
	}
	if _, err := chromedp.Call(tb.ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{}); err != nil {
		tb.t.Fatal(err)
	}
}

// apiGet reads the JSON API with the admin bearer token (the test's own
// view, not the browser's).
func apiGet(t *testing.T, base, path string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return out
}
