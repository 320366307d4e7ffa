package console

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/internal/loglimit"
)

// The console's open endpoints need no credentials: what a client can
// make them keep, log or check is bounded here.
const (
	// maxReportBytes bounds a CSP report's body (a browser's is under
	// 2 KiB).
	maxReportBytes = 4 << 10
	// reportLogsPerMinute bounds the log lines of CSP reports.
	reportLogsPerMinute = 5
	// maxReportKinds bounds the distinct reports remembered for
	// counting repeats; past it they are forgotten and start over.
	maxReportKinds = 1000

	// loginFailures failed sign-ins of one client address within
	// loginWindow refuse its next ones (429) until the window ends.
	loginFailures = 10
	loginWindow   = time.Minute
	// maxLoginClients bounds the addresses followed; past it, those whose
	// window ended are forgotten, and when none has, all are.
	maxLoginClients = 10_000
	// loginLogEvery bounds the log lines of failed sign-ins.
	loginLogEvery = time.Minute
)

// EnvTrustedProxies names the setting of the proxies whose
// X-Forwarded-For the console believes.
const EnvTrustedProxies = "BLINDEXEC_TRUSTED_PROXIES"

// ParseProxies reads BLINDEXEC_TRUSTED_PROXIES: comma-separated IP
// addresses and CIDRs.
func ParseProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address or CIDR", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// clientAddr is the address a request came from: RemoteAddr, unless that
// is a trusted proxy; then, walking X-Forwarded-For from its end, the
// first address that is not one (the last one a trusted proxy added). An
// X-Forwarded-For sent past no trusted proxy is ignored.
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || !isTrusted(addr, trusted) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		a, err := netip.ParseAddr(hop)
		if err != nil {
			return host // garbage a trusted proxy passed on: its own address is what is known
		}
		if !isTrusted(a, trusted) {
			return a.Unmap().String()
		}
		host = hop
	}
	return host
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	a = a.Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// reports bounds what CSP reports cost: identical ones are counted, not
// kept or logged again; log lines are rate limited.
type reports struct {
	log loglimit.Limiter

	mu   sync.Mutex
	seen map[[32]byte]int // by the report's hash: times received

	outcomes *prometheus.CounterVec // by outcome
}

// Outcomes of a CSP report, as blindexec_console_csp_reports_total labels
// them.
const (
	reportLogged     = "logged"
	reportRepeated   = "repeated"     // identical to one received before: counted only
	reportNotLogged  = "not_logged"   // new, kept, but over the log lines' rate
	reportTooLarge   = "too_large"    // over maxReportBytes: refused
	reportMalformed  = "malformed"    // not JSON: refused
	loginRefused     = "refused"      // a wrong token
	loginRateLimited = "rate_limited" // refused unchecked: too many failures of the address
)

func newReports() *reports {
	return &reports{log: loglimit.Limiter{N: reportLogsPerMinute, Period: time.Minute}, seen: map[[32]byte]int{},
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blindexec_console_csp_reports_total",
			Help: "CSP violation reports received by the console, by outcome (logged, repeated, not_logged, too_large, malformed)."}, []string{"outcome"})}
}

// add counts a report; it reports whether the report is new, and whether
// and with how many held-back lines it may be logged.
func (rp *reports) add(body []byte, now time.Time) (isNew, log bool, suppressed int) {
	h := sha256.Sum256(body)
	rp.mu.Lock()
	n := rp.seen[h]
	if n == 0 && len(rp.seen) >= maxReportKinds {
		clear(rp.seen)
	}
	rp.seen[h] = n + 1
	rp.mu.Unlock()
	if n > 0 {
		rp.outcomes.WithLabelValues(reportRepeated).Inc()
		return false, false, 0
	}
	if log, suppressed = rp.log.Allow(now); !log {
		rp.outcomes.WithLabelValues(reportNotLogged).Inc()
		return true, false, 0
	}
	rp.outcomes.WithLabelValues(reportLogged).Inc()
	return true, true, suppressed
}

// logins limits failed sign-ins per client address and their log lines.
type logins struct {
	log loglimit.Limiter

	mu      sync.Mutex
	clients map[string]*failures

	outcomes *prometheus.CounterVec
}

type failures struct {
	start time.Time // of the window
	n     int
}

func newLogins() *logins {
	return &logins{log: loglimit.Limiter{N: 1, Period: loginLogEvery}, clients: map[string]*failures{},
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "blindexec_console_sign_in_failures_total",
			Help: "Failed console sign-ins, by outcome (refused: a wrong token; rate_limited: refused unchecked, the address failed too often)."}, []string{"outcome"})}
}

// blocked reports how long addr must wait before its token is checked
// again; 0 when it need not.
func (l *logins) blocked(addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.clients[addr]
	if f == nil || now.Sub(f.start) >= loginWindow || f.n < loginFailures {
		return 0
	}
	return f.start.Add(loginWindow).Sub(now)
}

// failed counts a failed sign-in of addr.
func (l *logins) failed(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.clients[addr]
	if f == nil {
		if len(l.clients) >= maxLoginClients {
			for a, g := range l.clients {
				if now.Sub(g.start) >= loginWindow {
					delete(l.clients, a)
				}
			}
			if len(l.clients) >= maxLoginClients {
				clear(l.clients)
			}
		}
		f = &failures{start: now}
		l.clients[addr] = f
	}
	if now.Sub(f.start) >= loginWindow {
		f.start, f.n = now, 0
	}
	f.n++
}

// succeeded forgets addr's failures.
func (l *logins) succeeded(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.clients, addr)
}

// logFailure logs a refused sign-in, at most once per loginLogEvery,
// with the number held back since the last line.
func (l *logins) logFailure(ctx context.Context, log *slog.Logger, addr, outcome string, err error) {
	l.outcomes.WithLabelValues(outcome).Inc()
	ok, suppressed := l.log.Allow(time.Now())
	if !ok {
		return
	}
	attrs := []any{"client", addr, "outcome", outcome, "not_logged_since_last", suppressed}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	log.InfoContext(ctx, "console sign-in refused", attrs...)
}

// register adds the open endpoints' metrics to reg.
func (c *Console) register(reg prometheus.Registerer) error {
	for _, col := range []prometheus.Collector{c.reports.outcomes, c.logins.outcomes} {
		if err := reg.Register(col); err != nil {
			return err
		}
	}
	return nil
}
