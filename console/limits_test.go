package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/console"
	"github.com/blindexec/blindexec/internal/testdb"
)

// counter is the value of a counter of e's registry with the given
// outcome label.
func (e *env) counter(name, outcome string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == name && m.GetLabel()[0].GetValue() == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func (e *env) post(path, body string, header ...string) int {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Issue 30, point 3: CSP reports cannot fill the disk: small bodies,
// identical reports counted, a few log lines a minute, the rest counted.
func TestCSPReportBounds(t *testing.T) {
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey())
	report := func(i int) string {
		return fmt.Sprintf(`{"csp-report":{"document-uri":"http://x/console/","violated-directive":"script-src","blocked-uri":"inline","line-number":%d}}`, i)
	}
	if code := e.post("/console/csp-report", `{"csp-report":{"x":"`+strings.Repeat("a", 16<<10)+`"}}`); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 16 KiB report: %d", code)
	}
	for range 1000 {
		if code := e.post("/console/csp-report", report(0)); code != http.StatusNoContent {
			t.Fatalf("a report: %d", code)
		}
	}
	for i := 1; i <= 20; i++ {
		e.post("/console/csp-report", report(i))
	}
	if n := strings.Count(e.logs.String(), "content security policy violation"); n != 5 {
		t.Errorf("%d log lines for 1,020 reports, 21 distinct: want 5", n)
	}
	if n := len(e.console.Reports()); n != 21 {
		t.Errorf("%d reports kept, want the 21 distinct", n)
	}
	for outcome, want := range map[string]float64{"logged": 5, "repeated": 999, "not_logged": 16, "too_large": 1} {
		if got := e.counter("blindexec_console_csp_reports_total", outcome); got != want {
			t.Errorf("reports %s: %v, want %v", outcome, got, want)
		}
	}
}

// Issue 30, point 3: failed sign-ins are limited per client address and
// logged at most once a minute; the address is RemoteAddr unless a
// trusted proxy forwarded the request.
func TestSignInFailuresLimited(t *testing.T) {
	for _, tc := range []struct {
		name    string
		proxies string
		// the X-Forwarded-For of the attacker's tries, and of another client
		attacker, other string
		otherOK         bool
	}{
		// No proxy trusted: X-Forwarded-For is the attacker's to write and
		// changes nothing.
		{"untrusted X-Forwarded-For", "", "203.0.113.7", "203.0.113.8", false},
		{"behind a trusted proxy", "127.0.0.1", "198.51.100.1, 203.0.113.7", "203.0.113.8", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxies, err := console.ParseProxies(tc.proxies)
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey(), func(c *console.Console) { c.TrustedProxies = proxies })
			try := func(tok, xff string) int {
				return e.post("/console/login", url.Values{"token": {tok}}.Encode(), "Origin", e.url,
					"Content-Type", "application/x-www-form-urlencoded", "X-Forwarded-For", xff)
			}
			for i := range 10 {
				if code := try(fmt.Sprint("wrong-", i), tc.attacker); code != http.StatusSeeOther {
					t.Fatalf("failure %d: %d", i, code)
				}
			}
			// The right token too: the address is refused before any check.
			if code := try(adminToken, tc.attacker); code != http.StatusTooManyRequests {
				t.Errorf("the 11th try: %d, want 429", code)
			}
			if code := try(adminToken, tc.other); (code == http.StatusSeeOther) != tc.otherOK {
				t.Errorf("another client: %d", code)
			}
			if n := strings.Count(e.logs.String(), "console sign-in refused"); n != 1 {
				t.Errorf("%d log lines for 11 refusals, want 1", n)
			}
			if e.counter("blindexec_console_sign_in_failures_total", "refused") != 10 || e.counter("blindexec_console_sign_in_failures_total", "rate_limited") < 1 {
				t.Error("failures not counted")
			}
		})
	}
}

func TestClientAddr(t *testing.T) {
	trusted, err := console.ParseProxies("10.0.0.0/8, 192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := console.ParseProxies("10.0.0.0/8,nope"); err == nil {
		t.Error("a bad entry was accepted")
	}
	for _, tc := range []struct {
		remote, xff, want string
	}{
		{"198.51.100.9:1234", "", "198.51.100.9"},
		{"198.51.100.9:1234", "203.0.113.1", "198.51.100.9"}, // not from a proxy
		{"192.0.2.1:80", "203.0.113.1", "203.0.113.1"},
		{"192.0.2.1:80", "203.0.113.66, 203.0.113.1", "203.0.113.1"},           // the last one added
		{"192.0.2.1:80", "203.0.113.66, 203.0.113.1, 10.1.2.3", "203.0.113.1"}, // through two proxies
		{"192.0.2.1:80", "", "192.0.2.1"},                                      // nothing forwarded
		{"192.0.2.1:80", "garbage", "192.0.2.1"},                               // nothing usable
		{"[::ffff:192.0.2.1]:80", "2001:db8::1", "2001:db8::1"},                // a mapped proxy address
	} {
		if got := console.ClientAddr(tc.remote, tc.xff, trusted); got != tc.want {
			t.Errorf("%s via %q = %s, want %s", tc.remote, tc.xff, got, tc.want)
		}
	}
}
