package settings

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// The env file holds NAME=VALUE lines, as `blindexec init` writes them and
// as docker compose's env_file reads them: blank lines and lines starting
// with # are skipped, the value is the rest of the line (no quoting, no
// expansion), and only BLINDEXEC_* names and the OpenTelemetry variables
// the engine reads (OTELVariables) are allowed, so that a stray line is
// reported rather than ignored.
type envFile struct {
	path  string
	vars  map[string]envEntry
	order []string // the names, as the file lists them
}

type envEntry struct {
	value string
	line  int
}

var envName = regexp.MustCompile(`^BLINDEXEC_[A-Z0-9_]+$`)

// OTELVariables are the OpenTelemetry SDK's standard variables that
// configure the engine's tracing (package tracing reads them): the
// exception to the BLINDEXEC_ naming rule, accepted in the env file too.
// The SDK's other variables (OTEL_EXPORTER_OTLP_HEADERS...) are read
// from the process environment only.
var OTELVariables = []string{
	"OTEL_SDK_DISABLED",
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_SERVICE_NAME",
	"OTEL_TRACES_SAMPLER",
	"OTEL_TRACES_SAMPLER_ARG",
}

func isSettingName(name string) bool {
	return envName.MatchString(name) || slices.Contains(OTELVariables, name)
}

func parseEnvFile(path string, data []byte) (*envFile, error) {
	f := &envFile{path: path, vars: map[string]envEntry{}}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(strings.TrimPrefix(name, "export "))
		switch {
		case !ok:
			return nil, fmt.Errorf("%s:%d: want NAME=VALUE", path, i+1)
		case !isSettingName(name):
			return nil, fmt.Errorf("%s:%d: %q is not a BLINDEXEC_ setting (nor one of %s)", path, i+1, name, strings.Join(OTELVariables, ", "))
		case name == EnvFileVar:
			return nil, fmt.Errorf("%s:%d: %s cannot be set in the env file itself", path, i+1, name)
		}
		if v := strings.TrimSpace(value); len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			// Taken as written, the quotes would be part of the value: a
			// level "debug" in quotes is no level, a model name in quotes
			// another model. (The value is not quoted back: it may be a secret.)
			return nil, fmt.Errorf("%s:%d: %s's value is in quotes, which the env file does not take: write %s=VALUE, without them", path, i+1, name, name)
		}
		if prev, dup := f.vars[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s is already set on line %d", path, i+1, name, prev.line)
		}
		f.vars[name] = envEntry{value: strings.TrimSpace(value), line: i + 1}
		f.order = append(f.order, name)
	}
	return f, nil
}

// ErrEnvFileExists is returned by WriteEnvFile when the file exists: an env
// file may hold the only copy of a master key, so it is never overwritten.
var ErrEnvFileExists = errors.New("env file exists")

// WriteEnvFile creates path, readable and writable by its owner only
// (0600), with one NAME=VALUE line per pair after a comment header. It
// fails with ErrEnvFileExists rather than replace a file.
func WriteEnvFile(path, header string, pairs [][2]string) error {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(header), "\n") {
		b.WriteString("# " + line + "\n")
	}
	for _, kv := range pairs {
		if !envName.MatchString(kv[0]) || strings.ContainsAny(kv[1], "\r\n") {
			return fmt.Errorf("write %s: %q is not a setting line", path, kv[0])
		}
		b.WriteString(kv[0] + "=" + kv[1] + "\n")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s: %w", path, ErrEnvFileExists)
	}
	if err != nil {
		return fmt.Errorf("write env file: %w", err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
