package toolsearch

// People mistype ("refnud", "cancle", "custmer"); a word of typoMin
// letters or more that no tool of the catalog has, but that is one edit
// (a letter added, dropped, changed, or two swapped) from a word of the
// catalog, matches that word's term at typoWeight. Shorter words are too
// often one edit from another real word ("lable" is, "tag" and "tap" are).
const (
	typoMin    = 5
	typoWeight = 0.6
)

// correct adds to each concept whose own word the catalog does not have
// the terms of the catalog's words one edit away.
func (ix *Index) correct(query string, concepts []concept) {
	scan(query, func(w string) {
		for _, part := range splitCamel(w) {
			part = toLowerASCII(part)
			if len(part) < typoMin || !isASCIILetters(part) {
				continue
			}
			if _, known := ix.words[part]; known {
				continue
			}
			own := canonical(ix.an.normalize(part))
			if _, ok := ix.terms[own]; ok || own == "" {
				continue
			}
			i := -1
			for j, c := range concepts {
				if c[0].term == own {
					i = j
					break
				}
			}
			if i < 0 {
				continue
			}
			oneEdit(part, func(v []byte) {
				if t, ok := ix.words[string(v)]; ok { // no allocation: a map index
					concepts[i] = concepts[i].with(qterm{term: t, weight: ix.w.Typo})
				}
			})
		}
	}, func(string) {})
}

// oneEdit calls f with every lowercase ASCII word one edit from w
// (repeats included), in a buffer f must not keep.
func oneEdit(w string, f func([]byte)) {
	b := make([]byte, 0, len(w)+1)
	for i := range len(w) {
		f(append(append(b[:0], w[:i]...), w[i+1:]...)) // dropped
		if i+1 < len(w) {
			b = append(b[:0], w...)
			b[i], b[i+1] = b[i+1], b[i]
			f(b) // swapped
		}
		b = append(b[:0], w...)
		for c := byte('a'); c <= 'z'; c++ {
			if c != w[i] {
				b[i] = c
				f(b) // changed
			}
		}
	}
	for i := 0; i <= len(w); i++ {
		b = append(append(append(b[:0], w[:i]...), 'a'), w[i:]...)
		for c := byte('a'); c <= 'z'; c++ {
			b[i] = c
			f(b) // added
		}
	}
}

func isASCIILetters(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func toLowerASCII(s string) string {
	for i := range len(s) {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
