// Package settings reads blindexec's BLINDEXEC_* settings strictly: from
// the process environment first, then from the env file (see Load). A value
// that does not parse is never replaced by a default: it is an error naming
// the variable, where it was set and what it accepts, so that a typo stops
// the program instead of silently changing what it does.
package settings

import (
	"errors"
	"fmt"
	"os"

	"github.com/blindexec/blindexec/internal/redact"
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
	return fmt.Sprintf("%s=%q (from %s): want %s", e.Name, redact.Value(e.Value), e.Origin, e.Want)
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
