package settings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestStrictValues(t *testing.T) {
	for _, tc := range []struct {
		value   string
		read    func(*Registry, *Source) any
		want    any
		wantErr string // part of the error; "" for none
	}{
		{"false", func(r *Registry, s *Source) any { return Bool(r, "BLINDEXEC_X", true, "").Get(s) }, false, ""},
		{"TRUE", func(r *Registry, s *Source) any { return Bool(r, "BLINDEXEC_X", false, "").Get(s) }, true, ""},
		{"0", func(r *Registry, s *Source) any { return Bool(r, "BLINDEXEC_X", true, "").Get(s) }, false, ""},
		{"yes", func(r *Registry, s *Source) any { return Bool(r, "BLINDEXEC_X", false, "").Get(s) }, false, `BLINDEXEC_X="yes" (from the environment): want true or false`},
		{"", func(r *Registry, s *Source) any { return Bool(r, "BLINDEXEC_X", true, "").Get(s) }, true, ""}, // empty is unset
		{"1500", func(r *Registry, s *Source) any { return Millis(r, "BLINDEXEC_X", time.Second, "").Get(s) }, 1500 * time.Millisecond, ""},
		{"0", func(r *Registry, s *Source) any { return Millis(r, "BLINDEXEC_X", time.Second, "").Get(s) }, time.Duration(0), ""},
		{"5s", func(r *Registry, s *Source) any { return Millis(r, "BLINDEXEC_X", time.Second, "").Get(s) }, time.Second, "whole number of milliseconds"},
		{"-1", func(r *Registry, s *Source) any { return Millis(r, "BLINDEXEC_X", time.Second, "").Get(s) }, time.Second, "whole number of milliseconds"},
		{"99999999999999999", func(r *Registry, s *Source) any { return Millis(r, "BLINDEXEC_X", time.Second, "").Get(s) }, time.Second, "whole number of milliseconds"},
		{"7", func(r *Registry, s *Source) any { return Int(r, "BLINDEXEC_X", 0, 1, "").Get(s) }, int64(7), ""},
		{"0", func(r *Registry, s *Source) any { return Int(r, "BLINDEXEC_X", 3, 1, "").Get(s) }, int64(3), "an integer of at least 1"},
		{"WARN", func(r *Registry, s *Source) any {
			return OneOf(r, "BLINDEXEC_X", "info", []string{"debug", "info", "warn"}, "").Get(s)
		}, "warn", ""},
		{"loud", func(r *Registry, s *Source) any {
			return OneOf(r, "BLINDEXEC_X", "info", []string{"debug", "info", "warn"}, "").Get(s)
		}, "info", "one of debug, info, warn"},
		{"anything", func(r *Registry, s *Source) any { return String(r, "BLINDEXEC_X", "d", "").Get(s) }, "anything", ""},
		{"0.0.0.0:8080", func(r *Registry, s *Source) any { return HostPort(r, "BLINDEXEC_X", "d", "").Get(s) }, "0.0.0.0:8080", ""},
		{":9000", func(r *Registry, s *Source) any { return HostPort(r, "BLINDEXEC_X", "d", "").Get(s) }, ":9000", ""},
		{"8080", func(r *Registry, s *Source) any { return HostPort(r, "BLINDEXEC_X", "d", "").Get(s) }, "d", "want HOST:PORT"},
		{"localhost:http", func(r *Registry, s *Source) any { return HostPort(r, "BLINDEXEC_X", "d", "").Get(s) }, "d", "want HOST:PORT"},
		{"https://llm.example/v1", func(r *Registry, s *Source) any { return URL(r, "BLINDEXEC_X", "").Get(s) }, "https://llm.example/v1", ""},
		{"llm.example/v1", func(r *Registry, s *Source) any { return URL(r, "BLINDEXEC_X", "").Get(s) }, "", "an absolute http:// or https:// URL"},
	} {
		s := FromEnv(env(map[string]string{"BLINDEXEC_X": tc.value}))
		got := tc.read(&Registry{}, s)
		if got != tc.want {
			t.Errorf("%q: got %v, want %v", tc.value, got, tc.want)
		}
		err := s.Err()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: unexpected error %v", tc.value, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want one containing %q", tc.value, err, tc.wantErr)
		}
		var se *Error
		if tc.wantErr != "" && !errors.As(err, &se) {
			t.Errorf("%q: error %T is not a *settings.Error", tc.value, err)
		}
	}
}

func TestEnvFileLookupAndPrecedence(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	// No file anywhere: fine, nothing read.
	s, err := Load(env(nil))
	if err != nil || s.EnvFile() != "" {
		t.Fatalf("no file: %v %q", err, s.EnvFile())
	}
	// ./blindexec.env is read; the environment wins over it.
	os.WriteFile(DefaultEnvFile, []byte("# comment\n\nBLINDEXEC_A=from-file\nexport BLINDEXEC_B = file-b\nBLINDEXEC_C=bad\n"), 0o600)
	s, err = Load(env(map[string]string{"BLINDEXEC_A": "from-env"}))
	if err != nil {
		t.Fatal(err)
	}
	var r Registry
	a, b, c := String(&r, "BLINDEXEC_A", "", ""), String(&r, "BLINDEXEC_B", "", ""), Bool(&r, "BLINDEXEC_C", false, "")
	if got := a.Get(s); got != "from-env" {
		t.Errorf("BLINDEXEC_A = %q: the environment must win", got)
	}
	if got := b.Get(s); got != "file-b" || s.Origin("BLINDEXEC_B") != "blindexec.env:4" {
		t.Errorf("BLINDEXEC_B = %q from %q", got, s.Origin("BLINDEXEC_B"))
	}
	c.Get(s)
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "(from blindexec.env:5)") {
		t.Errorf("a bad value from the file must say where: %v", err)
	}
	// BLINDEXEC_ENV_FILE wins over ./blindexec.env, and must exist.
	other := filepath.Join(dir, "other.env")
	os.WriteFile(other, []byte("BLINDEXEC_A=other\n"), 0o600)
	s, err = Load(env(map[string]string{EnvFileVar: other}))
	if err != nil || a.Get(s) != "other" || s.EnvFile() != other {
		t.Fatalf("BLINDEXEC_ENV_FILE: %v %q", err, s.EnvFile())
	}
	s, err = Load(env(map[string]string{EnvFileVar: filepath.Join(dir, "missing.env")}))
	if err != nil || s.Err() == nil || !strings.Contains(s.Err().Error(), EnvFileVar) {
		t.Fatalf("a missing named file must be a bad setting naming %s: %v %v", EnvFileVar, err, s.Err())
	}
	// One that exists but does not parse stops at once.
	os.WriteFile(other, []byte("nonsense\n"), 0o600)
	if _, err := Load(env(map[string]string{EnvFileVar: other})); err == nil || !strings.Contains(err.Error(), "other.env:1") {
		t.Fatalf("a broken file: %v", err)
	}
}

func TestEnvFileErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"JUST_TEXT\n", "f.env:1: want NAME=VALUE"},
		{"\nPATH=/bin\n", `f.env:2: "PATH" is not a BLINDEXEC_ setting`},
		{"BLINDEXEC_A=1\nBLINDEXEC_A=2\n", "f.env:2: BLINDEXEC_A is already set on line 1"},
		{"BLINDEXEC_ENV_FILE=x\n", "cannot be set in the env file"},
		{"OTEL_EXPORTER_OTLP_HEADERS=x\n", `"OTEL_EXPORTER_OTLP_HEADERS" is not a BLINDEXEC_ setting (nor one of OTEL_SDK_DISABLED, `},
		// Quotes as other env files take them: refused, the value not shown.
		{"BLINDEXEC_LOG_LEVEL=\"debug\"\n", `f.env:1: BLINDEXEC_LOG_LEVEL's value is in quotes, which the env file does not take: write BLINDEXEC_LOG_LEVEL=VALUE, without them`},
		{"export BLINDEXEC_ADMIN_TOKEN='s3cret-token'\n", "BLINDEXEC_ADMIN_TOKEN's value is in quotes"},
	} {
		_, err := parseEnvFile("f.env", []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: error %v, want %q", tc.data, err, tc.want)
		}
	}
	// A quote inside a value, or one side only, is the value's own.
	for _, data := range []string{`BLINDEXEC_LLM_MODEL=a"b` + "\n", `BLINDEXEC_LLM_MODEL="` + "\n", `BLINDEXEC_LLM_MODEL=x'` + "\n"} {
		if _, err := parseEnvFile("f.env", []byte(data)); err != nil {
			t.Errorf("%q: %v", data, err)
		}
	}
}

// TestEnvFileOTEL: the OpenTelemetry variables tracing reads may be set
// in the env file, the environment winning as for the others; Invalid
// reports a bad one with where it was set.
func TestEnvFileOTEL(t *testing.T) {
	f, err := parseEnvFile("f.env", []byte("OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318\nOTEL_TRACES_SAMPLER=sometimes\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Source{lookup: env(map[string]string{"OTEL_SERVICE_NAME": "ruoyi-ai"}), file: f}
	var r Registry
	for _, name := range OTELVariables {
		Foreign(&r, name, "", "", "")
	}
	lookup := r.Lookup(s)
	if v, ok := lookup("OTEL_EXPORTER_OTLP_ENDPOINT"); !ok || v != "http://collector:4318" {
		t.Errorf("from the file: %q %v", v, ok)
	}
	if v, _ := lookup("OTEL_SERVICE_NAME"); v != "ruoyi-ai" {
		t.Errorf("from the environment: %q", v)
	}
	s.Invalid("OTEL_TRACES_SAMPLER", "always_on, ...")
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), `OTEL_TRACES_SAMPLER="sometimes" (from f.env:2)`) {
		t.Errorf("Invalid: %v", err)
	}
}

func TestWriteEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blindexec.env")
	pairs := [][2]string{{"BLINDEXEC_MASTER_KEY", "a2V5"}, {"BLINDEXEC_ADMIN_TOKEN", "tok"}}
	if err := WriteEnvFile(path, "written by a test\nsecond line", pairs); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v: want 0600", fi.Mode().Perm(), err)
	}
	data, _ := os.ReadFile(path)
	f, err := parseEnvFile(path, data)
	if err != nil || f.vars["BLINDEXEC_MASTER_KEY"].value != "a2V5" || f.vars["BLINDEXEC_ADMIN_TOKEN"].value != "tok" {
		t.Fatalf("round trip: %v %+v\n%s", err, f, data)
	}
	if err := WriteEnvFile(path, "", pairs); !errors.Is(err, ErrEnvFileExists) {
		t.Fatalf("overwrite: %v, want ErrEnvFileExists", err)
	}
	if err := WriteEnvFile(filepath.Join(t.TempDir(), "x.env"), "", [][2]string{{"BLINDEXEC_A", "two\nlines"}}); err == nil {
		t.Fatal("a value with a newline must be refused")
	}
}

func FuzzParseEnvFile(f *testing.F) {
	f.Add([]byte("BLINDEXEC_A=1\n# c\nexport BLINDEXEC_B=x=y\r\n"))
	f.Add([]byte("=\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := parseEnvFile("f", data)
		if err != nil {
			return
		}
		for name, e := range ef.vars {
			if !envName.MatchString(name) || e.line < 1 || strings.ContainsAny(e.value, "\n") {
				t.Fatalf("accepted %q=%q at line %d", name, e.value, e.line)
			}
		}
	})
}

// TestRegistry: a registry renders its table from what was declared, and
// refuses a name declared twice or read without a declaration.
func TestRegistry(t *testing.T) {
	var r Registry
	Millis(&r, "BLINDEXEC_WAIT_MS", 90*time.Second, "how long to wait").WithFlag("serve --wait")
	Millis(&r, "BLINDEXEC_TICK_MS", 20*time.Millisecond, "a tick")
	OneOf(&r, "BLINDEXEC_MODE", "a", []string{"a", "b"}, "a | b, as `x|y`")
	Secret(&r, "BLINDEXEC_KEY", "the key")
	Foreign(&r, "OTEL_SERVICE_NAME", "text", "blindexec", "the name")
	want := "| variable | flag | type | default | meaning |\n| --- | --- | --- | --- | --- |\n" +
		"| `BLINDEXEC_WAIT_MS` | `serve --wait` | milliseconds | `90000` (90 s) | how long to wait |\n" +
		"| `BLINDEXEC_TICK_MS` | — | milliseconds | `20` | a tick |\n" +
		"| `BLINDEXEC_MODE` | — | `a`, `b` | `a` | a \\| b, as `x\\|y` |\n" +
		"| `BLINDEXEC_KEY` | — | secret | — | the key |\n" +
		"| `OTEL_SERVICE_NAME` | — | text | `blindexec` | the name |\n"
	if got := r.Table(); got != want {
		t.Errorf("Table:\n%s\nwant:\n%s", got, want)
	}
	if s := r.Get("BLINDEXEC_KEY"); s == nil || !s.Secret {
		t.Errorf("Get(BLINDEXEC_KEY) = %+v", s)
	}
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", what)
			}
		}()
		f()
	}
	mustPanic("a second declaration", func() { String(&r, "BLINDEXEC_MODE", "", "again") })
	lookup := r.Lookup(FromEnv(env(map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_OTHER": "y"})))
	if v, ok := lookup("OTEL_SERVICE_NAME"); v != "x" || !ok {
		t.Errorf("Lookup of a declared name: %q %v", v, ok)
	}
	mustPanic("a read of an undeclared name", func() { lookup("OTEL_OTHER") })

	// A name the env file sets that no declaration has is a bad setting;
	// the environment may hold anything.
	f, err := parseEnvFile("f.env", []byte("BLINDEXEC_KEY=k\nBLINDEXEC_MODDE=b\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Source{lookup: env(map[string]string{"BLINDEXEC_TEST_MYSQL_DSN": "x"}), file: f}
	r.CheckFile(s)
	if err := s.Err(); err == nil || len(s.Errs()) != 1 || !strings.Contains(err.Error(), `BLINDEXEC_MODDE="b" (from f.env:2): want the name of a setting`) {
		t.Errorf("CheckFile: %v", err)
	}
}

// FuzzErrorValue: a value a setting refuses is quoted in its error, which
// `blindexec` prints when it starts (to a terminal, a container's log),
// without what comes before its last @: there a DSN or a URL holds its
// user and password (BLINDEXEC_DB=root:pw@tcp(db:3306)/ry, written
// without its mysql: prefix, printed its password).
// (The same values as import locations: internal/redact's FuzzLocation.)
func FuzzErrorValue(f *testing.F) {
	f.Add("root:", "@tcp(db:3306)/ry")
	f.Add("https://user:", "@api.example/v1")
	f.Add("", "@")
	f.Add("a@b:", "@c")
	const pw = "S3cr3tPw"
	f.Fuzz(func(t *testing.T, before, after string) {
		if strings.Contains(after, pw) {
			return // the part shown names it itself
		}
		var r Registry
		db := Check(&r, "BLINDEXEC_DB", "", "DSN", "sqlite:PATH or mysql:DSN", func(string) bool { return false }, "the database")
		value := before + pw + after
		src := FromEnv(env(map[string]string{"BLINDEXEC_DB": value}))
		db.Get(src)
		err := src.Err()
		if err == nil {
			t.Fatalf("%q: refused without an error", value)
		}
		if strings.Contains(after, "@") && strings.Contains(err.Error(), pw) {
			t.Fatalf("%q: the error shows what comes before its last @: %v", value, err)
		}
		if !strings.HasPrefix(err.Error(), "BLINDEXEC_DB=") {
			t.Fatalf("%q: the error does not name the variable: %v", value, err)
		}
	})
}
