package openapiquery

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFetchErrorWithoutSecrets (review79): a location's userinfo and
// query credentials were quoted whole by a failed fetch's error (the CLI's
// `openapi fetch`, the /mcp/openapi server's tools), and again by Go's
// url.Error, or net/url's refusal of a password holding a /.
func TestFetchErrorWithoutSecrets(t *testing.T) {
	c := NewCache(http.DefaultClient, time.Minute)
	for _, loc := range []string{
		"http://user:pw-Secret1@127.0.0.1:1/spec.json?access_token=qtok-Secret2",
		"http://user:pw/Secret3@127.0.0.1:1/spec.json",
	} {
		_, _, err := c.Get(t.Context(), loc)
		if err == nil || strings.Contains(err.Error(), "Secret") || strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: %v", loc, err)
		}
	}
}
