package mcpserver

import (
	"context"
	"io"
	"net/http"
	"time"
)

// ServeLines is serveLines, for the benchmarks beside the bare relay.
var ServeLines = (*Service).serveLines

// ServeSDK is serveSDK outside the bound on requests in flight: the
// SDK's stateless handler, which the engine's own answers to the
// stateless era are compared with.
func ServeSDK(s *Service, w http.ResponseWriter, r *http.Request, id Identity) {
	s.serveSDK(w, r, id, nil)
}

// Listening is the number of subscriptions/listen streams holding a place
// in flight.
func Listening(s *Service) int {
	s.inflight.mu.Lock()
	defer s.inflight.mu.Unlock()
	return s.inflight.listens.Len()
}

// SetClock makes now the clock a listen stream's tenure is read on.
func SetClock(s *Service, now func() time.Time) {
	s.inflight.mu.Lock()
	defer s.inflight.mu.Unlock()
	s.inflight.now = now
}

// ServeLinesSDK is serveLines with every request left to the SDK's
// server: what the engine's own answers over stdio are compared with.
func ServeLinesSDK(s *Service, ctx context.Context, userID int64, r io.ReadCloser, w io.Writer) error {
	return s.serverFor(sessionOptions{user: userID, endpoint: endpointStdio, direct: true}).Run(ctx, &lineTransport{r: r, w: w})
}
