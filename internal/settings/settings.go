// Package settings reads blindexec's BLINDEXEC_* settings strictly: from
// the process environment first, then from the env file (see Load). A value
// that does not parse is never replaced by a default: it is an error naming
// the variable, where it was set and what it accepts, so that a typo stops
// the program instead of silently changing what it does.
package settings

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// EnvFileVar names the variable that points at the env file.
const EnvFileVar = "BLINDEXEC_ENV_FILE"

// DefaultEnvFile is the env file read from the working directory when
// BLINDEXEC_ENV_FILE is not set.
const DefaultEnvFile = "blindexec.env"

// Error is a setting whose value does not parse.
type Error struct {
	Name   string // the variable, e.g. BLINDEXEC_NO_MIGRATE
	Value  string
	Origin string // "the environment" or "blindexec.env:3"
	Want   string // what the variable accepts
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s=%q (from %s): want %s", e.Name, e.Value, e.Origin, e.Want)
}

// Source is where settings come from. Read every setting through its
// methods, then check Err once: it joins every bad value.
type Source struct {
	lookup func(string) (string, bool)
	file   *envFile // nil: no env file
	errs   []error
}

// Load reads the settings of a process whose environment lookup is given
// (os.LookupEnv). The env file is the one BLINDEXEC_ENV_FILE names, else
// blindexec.env in the working directory when there is one. The
// environment wins over the file: a variable set in both takes the
// environment's value. A named file that does not exist is a bad setting
// (in Err), so that `blindexec init` can still create it; a file that
// exists but does not parse is an error.
func Load(lookup func(string) (string, bool)) (*Source, error) {
	s := &Source{lookup: lookup}
	path, named := EnvFilePath(lookup)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrNotExist) && !named:
		return s, nil
	case errors.Is(err, os.ErrNotExist):
		s.fail(EnvFileVar, path, "the environment", "an existing env file (`blindexec init` creates one)")
		return s, nil
	default:
		return nil, fmt.Errorf("%s: %w", EnvFileVar, err)
	}
	f, err := parseEnvFile(path, data)
	if err != nil {
		return nil, err
	}
	s.file = f
	return s, nil
}

// EnvFilePath is the env file of a process whose environment lookup is
// given: BLINDEXEC_ENV_FILE (named is then true), else blindexec.env.
func EnvFilePath(lookup func(string) (string, bool)) (path string, named bool) {
	if p, ok := lookup(EnvFileVar); ok && p != "" {
		return p, true
	}
	return DefaultEnvFile, false
}

// FromEnv is a Source over the environment only, without an env file
// (tests, and programs that have none).
func FromEnv(lookup func(string) (string, bool)) *Source {
	return &Source{lookup: lookup}
}

// EnvFile is the path of the env file read, or "" when none was.
func (s *Source) EnvFile() string {
	if s.file == nil {
		return ""
	}
	return s.file.path
}

// Err joins the errors of every bad value read so far, or is nil.
func (s *Source) Err() error { return errors.Join(s.errs...) }

// Errs are the errors Err joins, each an *Error.
func (s *Source) Errs() []error { return s.errs }

// raw is the value of name and where it came from; an empty value counts
// as unset (as compose files write ${X:-}).
func (s *Source) raw(name string) (value, origin string, ok bool) {
	if v, ok := s.lookup(name); ok && v != "" {
		return v, "the environment", true
	}
	if s.file != nil {
		if e, ok := s.file.vars[name]; ok && e.value != "" {
			return e.value, fmt.Sprintf("%s:%d", s.file.path, e.line), true
		}
	}
	return "", "", false
}

// Lookup is name's value from the environment, else the env file; an
// empty value counts as unset. For readers with rules of their own (the
// OTEL_* variables, package tracing), who report bad values with Invalid.
func (s *Source) Lookup(name string) (string, bool) {
	v, _, ok := s.raw(name)
	return v, ok
}

// Invalid reports name's value as bad: want says what it accepts.
func (s *Source) Invalid(name, want string) {
	v, origin, _ := s.raw(name)
	s.fail(name, v, origin, want)
}

// Origin says where name was set: "the environment", "FILE:LINE", or ""
// when it is not set (or s is nil).
func (s *Source) Origin(name string) string {
	if s == nil {
		return ""
	}
	_, origin, _ := s.raw(name)
	return origin
}

func (s *Source) fail(name, value, origin, want string) {
	s.errs = append(s.errs, &Error{Name: name, Value: value, Origin: origin, Want: want})
}

// String is name's value, or def when unset.
func (s *Source) String(name, def string) string {
	if v, _, ok := s.raw(name); ok {
		return v
	}
	return def
}

// Check is name's value when valid accepts it, def when unset; want says
// what it accepts, for the error. The typed readers below cover the common
// kinds; Check is for the others (an address, a URL).
func (s *Source) Check(name, def, want string, valid func(string) bool) string {
	v, origin, ok := s.raw(name)
	if !ok {
		return def
	}
	if !valid(v) {
		s.fail(name, v, origin, want)
		return def
	}
	return v
}

// HostPort is name's value, a listen address HOST:PORT (HOST may be empty
// for every interface); def when unset.
func (s *Source) HostPort(name, def string) string {
	return s.Check(name, def, "HOST:PORT, e.g. 127.0.0.1:8080 or 0.0.0.0:8080", func(v string) bool {
		_, port, err := net.SplitHostPort(v)
		n, perr := strconv.Atoi(port)
		return err == nil && perr == nil && n >= 0 && n <= 65535
	})
}

// URL is name's value, an absolute http or https URL; def when unset.
func (s *Source) URL(name, def string) string {
	return s.Check(name, def, "an absolute http:// or https:// URL", func(v string) bool {
		u, err := url.Parse(v)
		return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
	})
}

// Bool is name's value: true, false, 1 or 0 (any case); def when unset.
func (s *Source) Bool(name string, def bool) bool {
	v, origin, ok := s.raw(name)
	if !ok {
		return def
	}
	switch strings.ToLower(v) {
	case "true", "1":
		return true
	case "false", "0":
		return false
	}
	s.fail(name, v, origin, "true or false (or 1 or 0)")
	return def
}

// Millis is name's value, a whole number of milliseconds (0 or more, no
// unit: the variable's name says it); def when unset.
func (s *Source) Millis(name string, def time.Duration) time.Duration {
	v, origin, ok := s.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > int64(time.Duration(1<<63-1)/time.Millisecond) {
		s.fail(name, v, origin, "a whole number of milliseconds, 0 or more, without a unit (e.g. 30000 for 30 s)")
		return def
	}
	return time.Duration(n) * time.Millisecond
}

// Int is name's value, an integer of at least min; def when unset.
func (s *Source) Int(name string, def, min int64) int64 {
	v, origin, ok := s.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min {
		s.fail(name, v, origin, fmt.Sprintf("an integer of at least %d", min))
		return def
	}
	return n
}

// OneOf is name's value, one of allowed (compared case-insensitively and
// returned as listed); def when unset.
func (s *Source) OneOf(name, def string, allowed ...string) string {
	v, origin, ok := s.raw(name)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a
		}
	}
	s.fail(name, v, origin, "one of "+strings.Join(allowed, ", "))
	return def
}
