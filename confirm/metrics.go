package confirm

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts decisions about pending items.
type Metrics struct{ decisions *prometheus.CounterVec }

// NewMetrics registers blindexec_confirmation_decisions_total on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "blindexec_confirmation_decisions_total",
		Help: "Decisions about calls that waited for a person, by outcome: approved, denied, expired, stale, continued or cancelled (an authorization).",
	}, []string{"outcome"})}
	if err := reg.Register(m.decisions); err != nil {
		return nil, err
	}
	for _, o := range []string{Approved, Denied, Expired, Stale, Continued, Cancelled} {
		m.decisions.WithLabelValues(o) // present at 0
	}
	return m, nil
}

// Count adds n decisions of outcome; a nil *Metrics counts nothing.
func (m *Metrics) Count(outcome string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.decisions.WithLabelValues(outcome).Add(float64(n))
}
