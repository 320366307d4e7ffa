package toolsearch

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts searches; the empty ones show what the catalog, or its
// keywords, lack.
type Metrics struct {
	searches *prometheus.CounterVec
}

// NewMetrics registers the search counters on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{searches: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "blindexec_tool_searches_total",
		Help: "Tool searches, by result: found (at least one tool) or empty.",
	}, []string{"result"})}
	if err := reg.Register(m.searches); err != nil {
		return nil, err
	}
	return m, nil
}

// Observe counts one search of n results; a nil *Metrics counts nothing.
func (m *Metrics) Observe(n int) {
	if m == nil {
		return
	}
	result := "found"
	if n == 0 {
		result = "empty"
	}
	m.searches.WithLabelValues(result).Inc()
}
