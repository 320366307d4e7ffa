package toolsearch

import "strings"

// compoundWeight is the weight of the catalog's word that two adjacent
// words of a request make together, against 1 for the first of them: a
// spelling of the same word ("user group" is Slack's usergroups), not a
// guess at a sense, but the two words may also be two ("sign up" is not
// always signup). Measured in docs/tool-search.md's twelfth session.
const compoundWeight = 0.6

// joinCompounds adds to the concept of the first of each two adjacent
// English words of the request the term they make written as one, when
// a tool has it: people write "web hook", "user group", "time zone"
// where the APIs say webhook, usergroup, timezone, and the analyzer
// cuts only what is written as one ("usergroups" stays one term).
func (ix *Index) joinCompounds(query string, concepts []concept) {
	ask, _ := splitPayload(query)
	prev := ""
	for _, f := range strings.Fields(strings.ToLower(ask)) {
		w := strings.Trim(f, `,.;:!?()"'`)
		if len(w) < 2 || stopWords[w] || !isASCIILetters(w) {
			prev = ""
			continue
		}
		if prev != "" {
			if t := canonical(ix.an.normalize(prev + w)); t != "" {
				if _, ok := ix.terms[t]; ok {
					if i := ownConcept(concepts, canonical(ix.an.normalize(prev))); i >= 0 {
						concepts[i] = concepts[i].with(qterm{t, ix.w.Compound, scriptNone})
					}
				}
			}
		}
		prev = w
	}
}
