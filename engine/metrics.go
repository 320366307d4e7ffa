package engine

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the executor's Prometheus metrics, labelled by plugin and
// outcome ("ok" or the ToolError code).
type Metrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

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
func (m *Metrics) observe(plugin, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(plugin, outcome).Inc()
	m.duration.WithLabelValues(plugin, outcome).Observe(d.Seconds())
}
