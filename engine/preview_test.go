package engine

import (
	"slices"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

// TestSetAtSend: what a person approves names each part the auth config
// adds at send time once, and only what is sent. A bearer whose single
// mapping entry names its token sends one Authorization header; the
// preview listed the entry's target besides (a second Authorization, or a
// header never sent), as a newcomer saw on a paused run (newcomer74).
func TestSetAtSend(t *testing.T) {
	entry := func(source, target, location string) plugins.AuthMapping {
		return plugins.AuthMapping{Source: source, Target: target, Location: location}
	}
	for _, tc := range []struct {
		name string
		cfg  plugins.AuthConfig
		want []string
	}{
		{"bearer from its mapping", plugins.AuthConfig{Type: plugins.AuthBearer,
			Mapping: []plugins.AuthMapping{entry("DESK_TOKEN", "Authorization", "header")}}, []string{"Authorization"}},
		{"bearer from a mapping naming another header", plugins.AuthConfig{Type: plugins.AuthBearer,
			Mapping: []plugins.AuthMapping{entry("DESK_TOKEN", "X-Desk", "header")}}, []string{"Authorization"}},
		{"bearer token with an extra header", plugins.AuthConfig{Type: plugins.AuthBearer, Token: "T",
			Mapping: []plugins.AuthMapping{entry("TENANT", "X-Tenant", "")}}, []string{"Authorization", "X-Tenant"}},
		{"api key in a header, a query and a cookie", plugins.AuthConfig{Type: plugins.AuthAPIKey,
			Mapping: []plugins.AuthMapping{entry("A", "Token", "header"), entry("B", "key", plugins.InQuery), entry("C", "sid", plugins.InCookie)}},
			[]string{"Token", "?key", "Cookie: sid"}},
		{"basic", plugins.AuthConfig{Type: plugins.AuthBasic, Username: "U", Password: "P"}, []string{"Authorization"}},
		{"none", plugins.AuthConfig{Type: plugins.AuthNone}, nil},
	} {
		var got []string
		for _, h := range setAtSend(tc.cfg) {
			if h.Value != SetAtSend || !h.Credential {
				t.Errorf("%s: %+v is not marked set at send", tc.name, h)
			}
			got = append(got, h.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
