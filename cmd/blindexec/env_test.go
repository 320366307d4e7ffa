package main

import (
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/settings"
)

// fromEnv runs load on a settings source that reads env only, and returns
// what it loaded and the source's error.
func fromEnv[T any](env map[string]string, load func(*settings.Source) T) (T, error) {
	src := settings.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	got := load(src)
	return got, src.Err()
}

// expectErr reports whether the case wants an error (wantErr, a name the
// error must hold), failing t when err does not name it.
func expectErr(t *testing.T, env map[string]string, err error, wantErr string) bool {
	t.Helper()
	if wantErr == "" {
		return false
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Errorf("%v: error %v, want one naming %s", env, err, wantErr)
	}
	return true
}
