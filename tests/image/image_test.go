// Package image checks the container build statically: no Docker daemon
// or registry is reachable where the tests run, so what can be read from
// the Dockerfile, .dockerignore and docker-compose.yml is checked here,
// and docs/operations.md says what was checked by hand.
package image

import (
	"bufio"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd, args string
	line      int
}

func dockerfile(t *testing.T) []instruction {
	t.Helper()
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start})
		cur.Reset()
	}
	return out
}

// exactTag is an image reference pinned to a full version (x.y.z, an
// optional variant), optionally by digest as well.
var exactTag = regexp.MustCompile(`^[a-z0-9./-]+:\d+\.\d+\.\d+(-[a-z0-9.]+)?(@sha256:[0-9a-f]{64})?$`)

func TestBaseImagesPinned(t *testing.T) {
	goMod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(goMod)
	if goVersion == nil {
		t.Fatal("go.mod has no go directive")
	}
	froms := 0
	for _, in := range dockerfile(t) {
		if in.cmd != "FROM" {
			continue
		}
		froms++
		image := strings.Fields(in.args)[0]
		if !exactTag.MatchString(image) {
			t.Errorf("Dockerfile:%d: FROM %s is not pinned to an exact version tag", in.line, image)
		}
		if strings.HasPrefix(image, "golang:") && !strings.HasPrefix(image, "golang:"+string(goVersion[1])+"-") && image != "golang:"+string(goVersion[1]) {
			t.Errorf("Dockerfile:%d: %s builds with another Go than go.mod's %s", in.line, image, goVersion[1])
		}
	}
	if froms < 2 {
		t.Errorf("want a build stage and a runtime stage, found %d FROM", froms)
	}
	compose, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*image:\s*(\S+)`).FindAllSubmatch(compose, -1) {
		if !exactTag.Match(m[1]) {
			t.Errorf("docker-compose.yml: image %s is not pinned to an exact version tag", m[1])
		}
	}
}

// TestRuntimeStage: the final stage runs unprivileged, listens on every
// interface, and has a health check on /readyz.
func TestRuntimeStage(t *testing.T) {
	ins := dockerfile(t)
	last := 0
	for i, in := range ins {
		if in.cmd == "FROM" {
			last = i
		}
	}
	var user, addr, health bool
	for _, in := range ins[last:] {
		switch in.cmd {
		case "USER":
			user = in.args != "root" && in.args != "0"
		case "ENV":
			addr = addr || regexp.MustCompile(`BLINDEXEC_ADDR=0\.0\.0\.0:\d+`).MatchString(in.args)
		case "HEALTHCHECK":
			health = strings.Contains(in.args, "/readyz") && strings.Contains(in.args, "CMD")
		}
	}
	if !user {
		t.Error("the runtime stage does not switch to an unprivileged USER")
	}
	if !addr {
		t.Error("the runtime stage does not set BLINDEXEC_ADDR=0.0.0.0:PORT: the default 127.0.0.1 is unreachable from outside a container")
	}
	if !health {
		t.Error("the runtime stage has no HEALTHCHECK on /readyz")
	}
}

// TestDockerignore: secrets, databases, history and installed tools stay
// out of the build context.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []*regexp.Regexp
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, ignorePattern(strings.TrimPrefix(line, "/")))
		}
	}
	// A path is out when it or a directory above it matches.
	excluded := func(p string) bool {
		for _, re := range patterns {
			for q := p; q != "."; q = path.Dir(q) {
				if re.MatchString(q) {
					return true
				}
			}
		}
		return false
	}
	for _, p := range []string{".git/config", "blindexec.env", ".env", "blindexec.db", "data/x.db-wal", "tests/mcp-ts/node_modules/x/y.js", "blindexec"} {
		if !excluded(p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "cmd/blindexec/main.go", "migrations/mysql/00001_init.sql", "plugins/protocol.schema.json"} {
		if excluded(p) {
			t.Errorf(".dockerignore keeps %s, which the build needs, out", p)
		}
	}
}

// ignorePattern is a .dockerignore pattern as Docker reads it: matched from
// the context's root, * and ? within one path segment, **/ any depth.
func ignorePattern(pat string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; {
		case strings.HasPrefix(pat[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(pat[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
