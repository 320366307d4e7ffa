package settings

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Registry is every setting a program reads, each declared once with its
// name, what a value is, its default and its meaning, and read only
// through the *Var its declaration returns: the documentation's table is
// rendered from it (Table), so the two cannot drift.
type Registry struct {
	all   []*Setting
	names map[string]*Setting
}

// Setting is one entry of a Registry, as its documentation shows it.
type Setting struct {
	Name    string
	Type    string // what a value is, e.g. "milliseconds", "`true` or `false`"
	Default string // as it would be written in the env file; "" for none
	Meaning string // Markdown, one paragraph
	Flag    string // the flag that overrides it ("--db", "serve --no-migrate"), or ""
	// Secret settings come from the environment or the env file only: a
	// flag would show in ps.
	Secret bool
}

// Var is a setting of type T: Get reads it.
type Var[T any] struct {
	*Setting
	def   T
	want  string // what a value must be, for the error
	parse func(string) (T, bool)
}

// Get is v's value in src, its default when unset; a value that does not
// parse is left in src.Err() (naming the variable, where it was set and
// what it accepts) and the default returned.
func (v *Var[T]) Get(src *Source) T {
	raw, origin, ok := src.raw(v.Name)
	if !ok {
		return v.def
	}
	x, good := v.parse(raw)
	if !good {
		src.fail(v.Name, raw, origin, v.want)
		return v.def
	}
	return x
}

// WithFlag records the flag that overrides v (its declaration stays where
// the command is built); it returns v.
func (v *Var[T]) WithFlag(flag string) *Var[T] {
	v.Flag = flag
	return v
}

// All is every setting, in the order declared.
func (r *Registry) All() []*Setting { return r.all }

// Get is the setting named name, or nil.
func (r *Registry) Get(name string) *Setting { return r.names[name] }

func (r *Registry) add(s *Setting) *Setting {
	if r.names == nil {
		r.names = map[string]*Setting{}
	}
	if r.names[s.Name] != nil {
		panic("settings: " + s.Name + " is declared twice")
	}
	r.names[s.Name] = s
	r.all = append(r.all, s)
	return s
}

func declare[T any](r *Registry, s Setting, def T, want string, parse func(string) (T, bool)) *Var[T] {
	return &Var[T]{Setting: r.add(&s), def: def, want: want, parse: parse}
}

// String declares a setting whose value is any text.
func String(r *Registry, name, def, meaning string) *Var[string] {
	return declare(r, Setting{Name: name, Type: "text", Default: def, Meaning: meaning}, def, "",
		func(v string) (string, bool) { return v, true })
}

// Secret declares a secret: text, never a flag, never shown.
func Secret(r *Registry, name, meaning string) *Var[string] {
	v := String(r, name, "", meaning)
	v.Type, v.Secret = "secret", true
	return v
}

// Bool declares a setting of true, false, 1 or 0 (any case).
func Bool(r *Registry, name string, def bool, meaning string) *Var[bool] {
	return declare(r, Setting{Name: name, Type: "`true` or `false`", Default: strconv.FormatBool(def), Meaning: meaning}, def,
		"true or false (or 1 or 0)", func(v string) (bool, bool) {
			switch strings.ToLower(v) {
			case "true", "1":
				return true, true
			case "false", "0":
				return false, true
			}
			return false, false
		})
}

// Int declares a setting of an integer of at least min.
func Int(r *Registry, name string, def, min int64, meaning string) *Var[int64] {
	return declare(r, Setting{Name: name, Type: fmt.Sprintf("integer ≥ %d", min), Default: strconv.FormatInt(def, 10), Meaning: meaning}, def,
		fmt.Sprintf("an integer of at least %d", min), func(v string) (int64, bool) {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil && n >= min
		})
}

// Millis declares a duration written as whole milliseconds without a unit
// (the variable's name ends in _MS and says it).
func Millis(r *Registry, name string, def time.Duration, meaning string) *Var[time.Duration] {
	return declare(r, Setting{Name: name, Type: "milliseconds", Default: strconv.FormatInt(def.Milliseconds(), 10), Meaning: meaning}, def,
		"a whole number of milliseconds, 0 or more, without a unit (e.g. 30000 for 30 s)", func(v string) (time.Duration, bool) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || n > int64(time.Duration(1<<63-1)/time.Millisecond) {
				return 0, false
			}
			return time.Duration(n) * time.Millisecond, true
		})
}

// OneOf declares a setting whose value is one of allowed (compared
// case-insensitively, read as listed).
func OneOf(r *Registry, name, def string, allowed []string, meaning string) *Var[string] {
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = "`" + a + "`"
	}
	return declare(r, Setting{Name: name, Type: strings.Join(quoted, ", "), Default: def, Meaning: meaning}, def,
		"one of "+strings.Join(allowed, ", "), func(v string) (string, bool) {
			for _, a := range allowed {
				if strings.EqualFold(v, a) {
					return a, true
				}
			}
			return "", false
		})
}

// Check declares a setting of text that valid accepts: typ says what it is
// in the documentation, want in the error.
func Check(r *Registry, name, def, typ, want string, valid func(string) bool, meaning string) *Var[string] {
	return declare(r, Setting{Name: name, Type: typ, Default: def, Meaning: meaning}, def, want,
		func(v string) (string, bool) { return v, valid(v) })
}

// HostPort declares a listen address HOST:PORT (HOST empty for every
// interface).
func HostPort(r *Registry, name, def, meaning string) *Var[string] {
	return Check(r, name, def, "`HOST:PORT`", "HOST:PORT, e.g. 127.0.0.1:8080 or 0.0.0.0:8080", func(v string) bool {
		_, port, err := net.SplitHostPort(v)
		n, perr := strconv.Atoi(port)
		return err == nil && perr == nil && n >= 0 && n <= 65535
	}, meaning)
}

// URL declares an absolute http or https URL, unset by default.
func URL(r *Registry, name, meaning string) *Var[string] {
	return Check(r, name, "", "http(s) URL", "an absolute http:// or https:// URL", func(v string) bool {
		u, err := url.Parse(v)
		return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
	}, meaning)
}

// Foreign declares a setting a package reads with rules of its own (the
// OTEL_* variables, package tracing), through Lookup.
func Foreign(r *Registry, name, typ, def, meaning string) *Setting {
	return r.add(&Setting{Name: name, Type: typ, Default: def, Meaning: meaning})
}

// Lookup reads src's value of a Foreign setting (an empty value counts as
// unset), for a package that parses it itself and reports a bad value with
// src.Invalid. Reading a name r does not declare is a programming error:
// it panics, so that no read escapes the registry.
func (r *Registry) Lookup(src *Source) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if r.names[name] == nil {
			panic("settings: " + name + " is read but not declared in the registry")
		}
		v, _, ok := src.raw(name)
		return v, ok
	}
}

// CheckFile reports, in src.Err(), each name src's env file sets that r
// does not declare: a misspelt setting stops the program rather than
// leave the default silently in force. (The environment holds other
// programs' variables too, so only the file, which holds blindexec's
// alone, is checked.)
func (r *Registry) CheckFile(src *Source) {
	if src.file == nil {
		return
	}
	for _, name := range src.file.order {
		if r.names[name] == nil {
			e := src.file.vars[name]
			src.fail(name, e.value, fmt.Sprintf("%s:%d", src.file.path, e.line), "the name of a setting (docs/configuration.md lists them); this one is unknown")
		}
	}
}

// Table is the Markdown table of r's settings, the configuration page's
// reference: variable, flag, type, default, meaning.
func (r *Registry) Table() string {
	var b strings.Builder
	b.WriteString("| variable | flag | type | default | meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, s := range r.all {
		flag := "—"
		if s.Flag != "" {
			flag = "`" + s.Flag + "`"
		}
		def := "—"
		if s.Default != "" {
			def = "`" + s.Default + "`"
			if s.Type == "milliseconds" {
				def += readableMillis(s.Default)
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", s.Name, flag, s.Type, def, strings.ReplaceAll(s.Meaning, "|", `\|`))
	}
	return b.String()
}

// readableMillis is " (30 s)" for "30000": the default as a person reads
// it, "" when milliseconds are the clearest.
func readableMillis(ms string) string {
	n, _ := strconv.ParseInt(ms, 10, 64)
	switch {
	case n == 0 || n%1000 != 0:
		return ""
	case n%3_600_000 == 0:
		return fmt.Sprintf(" (%d h)", n/3_600_000)
	case n%60_000 == 0:
		return fmt.Sprintf(" (%d min)", n/60_000)
	}
	return fmt.Sprintf(" (%d s)", n/1000)
}
