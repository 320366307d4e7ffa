package toolsearch

import (
	"strings"
	"unicode/utf8"

	"github.com/blindexec/blindexec/plugins"
)

// actions is a set of the vocabulary's verb groups (create, delete,
// update, read, list, …), one bit each.
type actions uint32

// actionVerbs name the vocabulary groups that are actions, by their first
// word.
var actionVerbs = setOf(`create delete update get list search enable disable cancel download upload`)

// actionIndex maps a key of the vocabulary (a lowercased word and its
// term, a phrase, a CJK word) to the actions of its groups.
var actionIndex = func() map[string]actions {
	m := map[string]actions{}
	bit := actions(1)
	for _, g := range vocabulary {
		if !actionVerbs[g.words[0]] {
			continue
		}
		for _, w := range g.words {
			m[w] |= bit
			if t := rawTerm(w); t != "" {
				m[t] |= bit
			}
		}
		bit <<= 1
	}
	return m
}()

// actionBoost multiplies the score of a tool that does what the request
// asks (a DELETE for "remove", a listing for "show all"): a rare word of
// the request the tool happens to share ("test" in "delete the old test
// repository") should not outweigh the action.
const actionBoost = 0.5

// queryActions are the actions a request asks for, by its words; a
// request starting with a verb the vocabulary does not know asks to make
// or change something (imperative).
func queryActions(q string) actions {
	var a actions
	q, _ = splitPayload(q)
	keys := vocabKeys(q)
	for _, k := range keys {
		a |= lookupAction(k.text)
	}
	if a == 0 && imperative(keys) {
		a = imperativeActions
	}
	return a
}

// imperativeActions are what a request starting with a verb the
// vocabulary does not know asks for (imperative).
var imperativeActions = actionIndex["create"] | actionIndex["update"]

// imperative: a request that names no action and starts with a word that
// is neither a function word (a question starts with one: "who", "what",
// "is") nor any word of the vocabulary, followed by a function word,
// starts with a verb of its own ("comment on issue 10", "star the repo",
// "mark the commit as passing"; not "accounting documents"): it asks to
// make or change something, not to read.
func imperative(keys []vocabKey) bool {
	if len(keys) < 2 || !stopWords[keys[1].text] {
		return false
	}
	first := keys[0].text
	if r, _ := utf8.DecodeRuneInString(first); isCJK(r) || stopWords[first] || isNumber(first) {
		return false
	}
	_, inVocab := vocabIndex[first]
	_, stemInVocab := vocabIndex[stem(first)]
	return !inVocab && !stemInVocab
}

func lookupAction(w string) actions {
	if a, ok := actionIndex[w]; ok {
		return a
	}
	if r := []rune(w); len(r) > 0 && isCJK(r[0]) {
		return 0
	}
	return actionIndex[stem(w)]
}

// toolActions are what a tool does: the verb its title (titleOf) starts with (or,
// in Chinese, any verb of its title), else a verb of its name, and what
// its HTTP method does — a GET of a collection (a path ending in a literal
// segment) lists, of one item reads.
func toolActions(p *plugins.Plugin, title string) actions {
	var a actions
	first := true
	scan(title, func(w string) {
		if first {
			a |= lookupAction(strings.ToLower(w))
		}
		first = false
	}, func(run string) {
		rs := []rune(run)
		for i := 0; i+1 < len(rs); i++ {
			a |= lookupAction(string(rs[i : i+2]))
		}
	})
	if a == 0 {
		scan(p.Name, func(w string) {
			for _, part := range splitCamel(w) {
				a |= lookupAction(strings.ToLower(part))
			}
		}, func(string) {})
	}
	return a | methodActions(p)
}

func methodActions(p *plugins.Plugin) actions {
	switch strings.ToUpper(p.Execution.Method) {
	case "GET":
		if !strings.HasSuffix(strings.TrimRight(p.Execution.BaseURL, "/"), "}") {
			return actionIndex["list"]
		}
		return actionIndex["get"]
	case "POST":
		return actionIndex["create"]
	case "PUT", "PATCH":
		return actionIndex["update"]
	case "DELETE":
		return actionIndex["delete"]
	}
	return 0
}

// addressedBoost multiplies the score of a tool that addresses one of
// the things a request gives the number of ("the discussion on issue 10"
// is under /issues/{issue_number}/, not /issues).
const addressedBoost = 0.3

// addressedTerms are the terms of the literal path segments of an HTTP
// tool that a {parameter} follows: the things it addresses one of
// (/repos/{owner}/{repo}/issues/{issue_number}/comments: repo, issue).
func addressedTerms(an analyzer, p *plugins.Plugin) []string {
	if p.ExecType() == plugins.TypeMCP {
		return nil
	}
	segs := pathSegments(p)
	var out []string
	for i := 0; i+1 < len(segs); i++ {
		if !strings.HasPrefix(segs[i], "{") && strings.HasPrefix(segs[i+1], "{") {
			an.each(segs[i], func(t string, kind int) {
				if kind == kindWord {
					out = append(out, t)
				}
			})
		}
	}
	return out
}

// numberedTerms are the terms of the words of q a number follows ("issue
// 10", "PR #9"): the request addresses one of those things.
func numberedTerms(an analyzer, q string) []string {
	fields := strings.Fields(q)
	var out []string
	for i := 1; i < len(fields); i++ {
		if n := strings.TrimLeft(strings.TrimRight(fields[i], ",.;:!?)"), "#"); n != "" && isNumber(n) {
			an.each(fields[i-1], func(t string, kind int) {
				if kind == kindWord {
					out = append(out, t)
				}
			})
		}
	}
	return out
}
