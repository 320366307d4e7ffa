package toolsearch

// A request that names no API, over a catalog of several, is ambiguous
// between their look-alikes ("upload my ssh public key": GitHub's or
// Hetzner's), and a BM25 sum decides it by which API's tools repeat the
// request's words most, so one API can fill the first page whole. Search
// engines diversify such a page; so does diversify, on the source axis
// only (issue 49, docs/tool-search.md: the language axis, and maximal
// marginal relevance with a per-source penalty, lost requests).
const (
	// diversityRatio: a source's best tool joins the first page only
	// when it scores this share of the first result or more (at 0.75
	// CRM's and Spotify's requests lost their tool; at 0.9 one fewer
	// was found).
	diversityRatio = 0.85
	// diversityFixed: the first results keep their places, so the best
	// match stays first and a page's head is the score's.
	diversityFixed = 2
	// diversityWindow: the candidates are the best results this deep,
	// ranked whatever the limit asked, so that every page is a slice of
	// one ranking.
	diversityWindow = 20
)

// diversify reorders hits, best first, so that the first DefaultLimit
// hold the best tool of each source that scores diversityRatio of the
// first result or more, in place of the last of that page's tools whose
// source another of them shares (never one of the first
// diversityFixed). A request that names a source is not ambiguous: its
// boost decides (sourceBoost), and no other source is pulled in. The
// tools moved keep their scores, so that the results past the page's
// head are not in the order of their scores.
func (ix *Index) diversify(hits []hit, rq *request) {
	const k = DefaultLimit
	if ix.docSource == nil || len(rq.sources) > 0 || len(hits) <= k {
		return
	}
	floor := ix.w.Diversity * hits[0].score
	for c := k; c < min(len(hits), diversityWindow) && hits[c].score >= floor; c++ {
		src := ix.docSource[hits[c].doc]
		if src < 0 || ix.sourceAt(hits[:k], src) >= 0 {
			continue
		}
		out := -1
		for i := k - 1; i >= diversityFixed && out < 0; i-- {
			if ix.sharesSource(hits[:k], i) {
				out = i
			}
		}
		if out < 0 {
			return
		}
		// hits[out] leaves the page for its first place after it; the
		// page closes up and ends with hits[c].
		h, o := hits[c], hits[out]
		copy(hits[out:k-1], hits[out+1:k])
		hits[k-1] = h
		copy(hits[k+1:c+1], hits[k:c])
		hits[k] = o
	}
}

// sourceAt is the position in hits of the first tool of source src, -1
// for none.
func (ix *Index) sourceAt(hits []hit, src int32) int {
	for i, h := range hits {
		if ix.docSource[h.doc] == src {
			return i
		}
	}
	return -1
}

// sharesSource reports whether another of hits has the source of hits[i].
func (ix *Index) sharesSource(hits []hit, i int) bool {
	src := ix.docSource[hits[i].doc]
	for j, h := range hits {
		if j != i && ix.docSource[h.doc] == src {
			return true
		}
	}
	return false
}
