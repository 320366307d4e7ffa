package main

import (
	"slices"
	"testing"

	"github.com/blindexec/blindexec/engine/toolset"
)

// The tool search settings: defaults, values, and values that stop the
// program naming the variable.
func TestToolSearchSettings(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		want    toolset.Config
		wantErr string
	}{
		{env: nil, want: toolset.Config{Mode: toolset.ModeAuto, Threshold: toolset.DefaultThreshold}},
		{env: map[string]string{toolset.EnvMode: "always", toolset.EnvThreshold: "12", toolset.EnvPinned: "a, b"},
			want: toolset.Config{Mode: toolset.ModeAlways, Threshold: 12, Pinned: []string{"a", "b"}}},
		{env: map[string]string{toolset.EnvMode: "sometimes"}, wantErr: toolset.EnvMode},
		{env: map[string]string{toolset.EnvThreshold: "0"}, wantErr: toolset.EnvThreshold},
		{env: map[string]string{toolset.EnvThreshold: "121"}, wantErr: toolset.EnvThreshold},
		{env: map[string]string{toolset.EnvThreshold: "many"}, wantErr: toolset.EnvThreshold},
	} {
		got, err := fromEnv(tc.env, toolSearchSettings)
		if expectErr(t, tc.env, err, tc.wantErr) {
			continue
		}
		if err != nil || got.Mode != tc.want.Mode || got.Threshold != tc.want.Threshold || !slices.Equal(got.Pinned, tc.want.Pinned) {
			t.Errorf("%v: %+v, %v; want %+v", tc.env, got, err, tc.want)
		}
	}
}
