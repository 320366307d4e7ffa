package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMENewcomerStumbles (issue 45 point 4): what a newcomer tripped
// on stays fixed in the entry page. Its two commands are `init; serve`,
// and no text speaks of a `migrate` step they do not have; the
// five-minute tour reaches the console and the service token (how RuoYi
// calls). The fourth stumble, the commit in a build, is
// cmd/blindexec's TestREADMEBuildStampsTheCommit.
func TestREADMENewcomerStumbles(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	const commands = "go run ./cmd/blindexec init; go run ./cmd/blindexec serve"
	if !strings.Contains(readme, "\n"+commands+"\n") {
		t.Errorf("README.md: the two commands %q are not on a line of their own", commands)
	}
	if m := regexp.MustCompile("(?i)after `?init`? and `?migrate").FindString(readme); m != "" {
		t.Errorf("README.md: %q, but the two commands are init and serve (serve migrates)", m)
	}
	_, tour, ok := strings.Cut(readme, "\n## Five minutes")
	if !ok {
		t.Fatal("README.md has no five-minute tour (## Five minutes ...)")
	}
	tour, _, _ = strings.Cut(tour, "\n## ")
	for _, want := range []string{"/console/", "BLINDEXEC_SERVICE_TOKEN", "Authorization: Bearer $BLINDEXEC_SERVICE_TOKEN"} {
		if !strings.Contains(tour, want) {
			t.Errorf("README.md's five-minute tour does not show %q", want)
		}
	}
}
