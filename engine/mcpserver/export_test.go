package mcpserver

import (
	"context"
	"io"
)

// ServeLines is serveLines, for the benchmarks beside the bare relay.
var ServeLines = (*Service).serveLines

// ServeSDK is serveSDK: the SDK's stateless handler, which the engine's
// own answers to the stateless era are compared with.
var ServeSDK = (*Service).serveSDK

// ServeLinesSDK is serveLines with every request left to the SDK's
// server: what the engine's own answers over stdio are compared with.
func ServeLinesSDK(s *Service, ctx context.Context, userID int64, r io.ReadCloser, w io.Writer) error {
	return s.serverFor(sessionOptions{user: userID, endpoint: endpointStdio, direct: true}).Run(ctx, &lineTransport{r: r, w: w})
}
