package engine

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/plugins"
)

// Metrics are the executor's Prometheus metrics, labelled by plugin and
// outcome ("ok" or the ToolError code).
//
// The plugin label has bounded cardinality: a catalog plugin is labelled
// by its name, a definition that came inline with a request "inline"
// (callers choose those names, 20,000 of them grew /metrics to 54 MB),
// and catalog names past the first MaxPluginLabels "other".
type Metrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec

	mu     sync.RWMutex
	labels map[string]bool // catalog names labelled so far
	// series are the children of both vectors by (plugin label, outcome),
	// so that a call does not hash its label values into each vector.
	series map[[2]string]series
}

type series struct {
	calls    prometheus.Counter
	duration prometheus.Observer
}

// Plugin label values besides catalog names.
const (
	LabelInline = "inline"
	LabelOther  = "other"
)

// MaxPluginLabels bounds the catalog names used as plugin label values.
const MaxPluginLabels = 1000

// NewMetrics registers the metrics on reg (never the global registry):
// blindexec_tool_calls_total and blindexec_tool_call_duration_seconds.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "blindexec_tool_calls_total",
			Help: "Tool calls executed, by plugin and outcome (ok or the error code).",
		}, []string{"plugin", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "blindexec_tool_call_duration_seconds",
			Help:    "Latency of tool calls, by plugin and outcome.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"plugin", "outcome"}),
	}
	for _, c := range []prometheus.Collector{m.calls, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe counts one call; a nil *Metrics counts nothing.
func (m *Metrics) observe(p *plugins.Plugin, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	key := [2]string{m.label(p), outcome}
	m.mu.RLock()
	s, ok := m.series[key]
	m.mu.RUnlock()
	if !ok {
		s = series{m.calls.WithLabelValues(key[0], key[1]), m.duration.WithLabelValues(key[0], key[1])}
		m.mu.Lock()
		if m.series == nil {
			m.series = make(map[[2]string]series)
		}
		m.series[key] = s
		m.mu.Unlock()
	}
	s.calls.Inc()
	s.duration.Observe(d.Seconds())
}

// label is p's plugin label value.
func (m *Metrics) label(p *plugins.Plugin) string {
	if !p.Catalog {
		return LabelInline
	}
	m.mu.RLock()
	seen := m.labels[p.Name]
	m.mu.RUnlock()
	if seen {
		return p.Name
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.labels[p.Name] {
		if len(m.labels) >= MaxPluginLabels {
			return LabelOther
		}
		if m.labels == nil {
			m.labels = make(map[string]bool)
		}
		m.labels[p.Name] = true
	}
	return p.Name
}
