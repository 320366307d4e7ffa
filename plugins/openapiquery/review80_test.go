package openapiquery

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/internal/logbuf"
)

// TestSpecPathSecretsNeverShown (review80): review79 took the secrets of
// a spec_path out of a failed fetch's error, but the server's log line of
// the failure quoted the spec_path whole ("source"), and the server read a
// URL whose scheme is in capitals (HTTPS://…, which Go's client fetches)
// as a file — isURL, a case-sensitive twin of openapi.IsURL (review78) —
// where files are served: os.Open's error quoted it whole, to the caller
// and the log.
func TestSpecPathSecretsNeverShown(t *testing.T) {
	for _, c := range []struct {
		name, loc  string
		allowFiles bool
	}{
		{"a failed fetch", "http://user:pw-Secret1@127.0.0.1:1/spec.json?access_token=qtok-Secret2", false},
		{"a scheme in capitals", "HTTP://user:pw-Secret1@127.0.0.1:1/spec.json?access_token=qtok-Secret2", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := new(logbuf.Buffer)
			cs := connect(t, false, ServerOptions{Client: egresstest.Client(t), AllowFiles: c.allowFiles,
				Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			text, _, isError := callTool(t, cs, "get_api_info", map[string]any{"spec_path": c.loc})
			if !isError {
				t.Fatalf("a document on a closed port: %s", text)
			}
			if strings.Contains(text, "no such file") {
				t.Errorf("an http URL read as a file: %s", text)
			}
			for _, s := range []string{"the answer: " + text, "the log: " + log.String()} {
				if !strings.Contains(s, "127.0.0.1:1") || strings.Contains(s, "Secret") {
					t.Errorf("%.600s", s)
				}
			}
		})
	}
}
