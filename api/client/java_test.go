package client

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// jacksonJars are Debian's libjackson2-databind-java (with its core and
// annotations), which .ci/run installs.
var jacksonJars = []string{"/usr/share/java/jackson-databind.jar", "/usr/share/java/jackson-core.jar", "/usr/share/java/jackson-annotations.jar"}

// TestJavaTypesRoundTrip (issue 45 point 3): tests/java/genjava.py writes
// Java classes for the description's request and answer types, javac
// compiles them against Jackson, and every example of the description
// (taken from the tests' exchanges) reads into its class and writes back
// as the same JSON. Without javac or Jackson it skips, except in CI.
func TestJavaTypesRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: javac is slow")
	}
	need := func(what string, err error) {
		if err == nil {
			return
		}
		if os.Getenv("CI") == "" {
			t.Skipf("%s is missing (apt-get install openjdk-17-jdk-headless libjackson2-databind-java): %v", what, err)
		}
		t.Fatalf("%s is missing: %v", what, err)
	}
	_, err := exec.LookPath("javac")
	need("javac", err)
	for _, jar := range jacksonJars {
		_, err := os.Stat(jar)
		need(jar, err)
	}
	_, err = exec.LookPath("python3")
	need("python3", err)

	dir := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("python3", "../../tests/java/genjava.py", "../openapi.json", filepath.Join(dir, "src"))
	sources, _ := filepath.Glob(filepath.Join(dir, "src", "dev", "blindexec", "api", "*.java"))
	classpath := strings.Join(jacksonJars, string(os.PathListSeparator))
	run("javac", append([]string{"-d", filepath.Join(dir, "classes"), "-cp", classpath, "../../tests/java/RoundTrip.java"}, sources...)...)

	pairs := examples(t, func(class string) bool {
		_, err := os.Stat(filepath.Join(dir, "src", "dev", "blindexec", "api", class+".java"))
		return err == nil
	})
	if len(pairs) < 10 {
		t.Fatalf("%d examples with a class: fewer than the description has", len(pairs))
	}
	t.Logf("%d examples round-trip through %d Java classes", len(pairs), len(sources))
	file := filepath.Join(dir, "examples.json")
	b, _ := json.Marshal(pairs)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := run("java", "-cp", filepath.Join(dir, "classes")+string(os.PathListSeparator)+classpath, "dev.blindexec.api.RoundTrip", file)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(pairs) {
		t.Fatalf("%d examples, %d written back:\n%s", len(pairs), len(lines), out)
	}
	for i, p := range pairs {
		var back any
		if err := json.Unmarshal([]byte(lines[i]), &back); err != nil || !reflect.DeepEqual(back, p.Example) {
			want, _ := json.Marshal(p.Example)
			t.Errorf("%s: written back as\n%s\nwant\n%s", p.Class, lines[i], want)
		}
	}
}

type javaExample struct {
	Class   string `json:"class"`
	Example any    `json:"example"`
}

// examples are the description's examples of JSON bodies and schemas, by
// the class genjava.py writes for them (those it writes none for, such
// as a bare string, are left out).
func examples(t *testing.T, hasClass func(string) bool) []javaExample {
	raw, err := os.ReadFile("../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas   map[string]struct{ Example any } `json:"schemas"`
			Responses map[string]javaMedia             `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var out []javaExample
	add := func(class string, m javaMedia) {
		mt, ok := m.Content["application/json"]
		if !ok || mt.Example == nil {
			return
		}
		if ref, ok := strings.CutPrefix(mt.Schema.Ref, "#/components/schemas/"); ok {
			class = ref
		}
		if hasClass(class) {
			out = append(out, javaExample{class, mt.Example})
		}
	}
	for name, s := range doc.Components.Schemas {
		if s.Example != nil && hasClass(name) {
			out = append(out, javaExample{name, s.Example})
		}
	}
	for _, r := range doc.Components.Responses {
		add("", r)
	}
	for _, item := range doc.Paths {
		for _, raw := range item {
			var op struct {
				OperationID string               `json:"operationId"`
				RequestBody javaMedia            `json:"requestBody"`
				Responses   map[string]javaMedia `json:"responses"`
			}
			if json.Unmarshal(raw, &op) != nil || op.OperationID == "" {
				continue
			}
			base := string(unicode.ToUpper(rune(op.OperationID[0]))) + op.OperationID[1:]
			add(base+"Request", op.RequestBody)
			for status, r := range op.Responses {
				if strings.HasPrefix(status, "2") {
					add(base+"Response", r)
				}
			}
		}
	}
	return out
}

type javaMedia struct {
	Content map[string]struct {
		Schema struct {
			Ref string `json:"$ref"`
		} `json:"schema"`
		Example any `json:"example"`
	} `json:"content"`
}
