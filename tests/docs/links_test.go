// Package docs checks the documentation statically: every relative link of
// README.md and docs/*.md leads to a file that exists and, when it names
// an anchor, to a heading of that file as GitHub renders it; the README
// stays the entry page that links every page.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

const root = "../.."

// pages are the Markdown files whose links are checked, relative to root.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

var (
	heading  = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$`)
	fence    = regexp.MustCompile("^ {0,3}(```|~~~)")
	codeSpan = regexp.MustCompile("(`+)[^`].*?`+")
	// link is an inline link or image, [text](target) or ![alt](target);
	// the text may hold one level of brackets.
	link     = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+"[^"]*")?\)`)
	scheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	inlineMD = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// prose yields the lines of a Markdown file outside fenced code blocks,
// with their numbers.
func prose(data string, each func(n int, line string)) {
	in := ""
	for i, line := range strings.Split(data, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case in == "":
				in = m[1]
			case m[1] == in:
				in = ""
			}
			continue
		}
		if in == "" {
			each(i+1, line)
		}
	}
}

// slug is the anchor GitHub gives a heading: its text lower-cased, every
// character but letters, digits, spaces, hyphens and underscores dropped,
// spaces turned into hyphens.
func slug(text string) string {
	text = inlineMD.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors of a Markdown file's headings; a repeated one
// takes -1, -2... as GitHub numbers them.
func anchors(data string) map[string]bool {
	out, seen := map[string]bool{}, map[string]int{}
	prose(data, func(_ int, line string) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		a := slug(m[2])
		if n, dup := seen[a]; dup {
			seen[a] = n + 1
			a += "-" + strconv.Itoa(n+1)
		} else {
			seen[a] = 0
		}
		out[a] = true
	})
	return out
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"The master key's home", "the-master-keys-home"},
		{"`POST /v1/execute`", "post-v1execute"},
		{"Confirmation: consequential calls wait for a person", "confirmation-consequential-calls-wait-for-a-person"},
		{"`/mcp`: sessions and the wire", "mcp-sessions-and-the-wire"},
		{"Import fidelity (issue 17)", "import-fidelity-issue-17"},
		{"The third session (2026-11-27): a fresh machine", "the-third-session-2026-11-27-a-fresh-machine"},
		{"Tool search in [runs](runs.md) and over MCP", "tool-search-in-runs-and-over-mcp"},
		{"场景 one_two", "场景-one_two"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
	got := anchors("# A\n```\n# not a heading\n```\n## A\n### B ##\n")
	for _, want := range []string{"a", "a-1", "b"} {
		if !got[want] {
			t.Errorf("anchors: %v lacks %q", got, want)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line in a code block is not a heading")
	}
}

// TestLinks: every relative link and anchor of the README and docs/
// resolves.
func TestLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := cache[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cache[path] = anchors(string(data))
		return cache[path]
	}
	checked := 0
	for _, page := range pages(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		prose(string(data), func(n int, line string) {
			line = codeSpan.ReplaceAllString(line, "")
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if target == "" || scheme.MatchString(target) {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s:%d: %s: no such file", name, n, target)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
					t.Errorf("%s:%d: %s: no heading with that anchor", name, n, target)
				}
			}
		})
	}
	if checked < 100 {
		t.Errorf("only %d links checked: the pattern misses links", checked)
	}
}

// TestREADMEIsTheEntryPage: the README stays an entry page — at most about
// 300 lines, linking every page of docs/ — and its test command is the one
// CI runs.
func TestREADMEIsTheEntryPage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	if n := strings.Count(readme, "\n"); n > 300 {
		t.Errorf("README.md has %d lines: move what is not the entry page's into docs/", n)
	}
	for _, page := range pages(t)[1:] {
		name := "docs/" + filepath.Base(page)
		if !strings.Contains(readme, "]("+name+")") && !strings.Contains(readme, "]("+name+"#") {
			t.Errorf("README.md does not link %s", name)
		}
	}
	const test = "go test -race -timeout 30m ./..."
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(readme, "\n"+test+"\n") || !strings.Contains(string(ci), "\n"+test+"\n") {
		t.Errorf("the README's test command and .ci/run's must both be %q on a line of its own", test)
	}
}
