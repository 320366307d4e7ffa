package toolsearch

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Requests rarely use a tool's own words ("take the label off" for
// "remove a label", "新建" for "新增"). The vocabulary below is what any API
// catalog shares: the verbs of create, read, update and delete, enabling
// and disabling, the usual abbreviations, and "me" for the REST idiom "the
// authenticated user". A request's word adds the other words of its group
// to the query at a lower weight. Nothing here names an operation of a
// particular API.
var vocabulary = []vocabGroup{
	// create
	{synonym, []string{"create", "add", "new", "make", "insert", "register", "give", "grant", "新增", "新建", "添加", "创建", "增加", "新加"}},
	// delete
	{synonym, []string{"delete", "remove", "drop", "destroy", "erase", "purge", "discard", "删除", "删掉", "移除", "去掉", "撤销", "清除"}},
	// change
	{synonym, []string{"update", "edit", "change", "modify", "alter", "set", "rename", "replace", "修改", "更改", "编辑", "变更", "更新", "改成"}},
	// read one
	{synonym, []string{"get", "fetch", "retrieve", "read", "view", "show", "see", "look", "display", "查看", "获取", "看看", "查询", "查一"}},
	// read many; a question ("who…", "which…") asks for a listing
	{synonym, []string{"list", "all", "enumerate", "browse", "show", "who", "which", "what", "列表", "列出", "所有", "哪些"}},
	// search
	{synonym, []string{"search", "find", "query", "lookup", "locate", "搜索", "查找", "查询"}},
	// switch on and off; the two-word forms are matched as phrases
	{synonym, []string{"enable", "activate", "turn on", "switch on", "allow", "启用", "开启", "打开", "恢复"}},
	{synonym, []string{"disable", "deactivate", "turn off", "switch off", "停用", "禁用", "关闭", "暂停"}},
	{synonym, []string{"cancel", "abort", "stop", "取消", "中止"}},
	{synonym, []string{"download", "export", "下载", "导出"}},
	{synonym, []string{"upload", "import", "上传", "导入"}},
	// the caller: REST APIs say "the authenticated user"
	{synonym, []string{"me", "my", "mine", "myself", "i", "logged in", "signed in", "authenticated", "current", "我的", "当前"}},
	// "who" asks for people
	{synonym, []string{"who", "people", "person", "member", "user", "谁", "人员", "成员"}},
	// who may do what
	{synonym, []string{"permission", "access", "privilege", "权限"}},
	// abbreviations and spellings: the same word; the analyzer turns each
	// into the group's first (canonical)
	{same, []string{"repo", "repository"}},
	{same, []string{"org", "organization", "organisation"}},
	{same, []string{"pr", "prs", "pull request", "pull requests"}},
	{synonym, []string{"config", "configuration", "settings", "setting", "配置", "设置"}},
	{same, []string{"info", "information", "details", "detail", "信息", "详细", "详情"}},
	{same, []string{"env", "environment"}},
	{same, []string{"admin", "administrator", "管理员"}},
	{same, []string{"auth", "authentication", "authorization"}},
	{same, []string{"password", "pwd", "passwd", "密码", "口令"}},
	{same, []string{"stats", "statistics"}},
	{same, []string{"docs", "documentation", "doc"}},
	{same, []string{"app", "application"}},
	{same, []string{"user", "account", "用户", "账号", "帐号", "账户", "帐户"}},
}

// vocabGroup is a set of words a request may use for one another.
type vocabGroup struct {
	weight float64 // of an added word, against 1 for the request's own
	words  []string
}

// Weights of added words: a synonym is a guess (a "set" is not always an
// "update"); an abbreviation is the same word.
const (
	synonym = 0.5
	same    = 1.0
)

// vocabIndex maps a key (a lowercased English word, a phrase of two words
// joined by a space, or a pair of CJK characters) to the weighted query
// terms of its groups' other members.
var vocabIndex = func() map[string][]qterm {
	m := map[string][]qterm{}
	for _, g := range vocabulary {
		if g.weight == same {
			continue
		}
		var terms [][]string
		for _, w := range g.words {
			if strings.Contains(w, " ") {
				terms = append(terms, nil) // a phrase is a key, its words no synonyms
				continue
			}
			terms = append(terms, indexTerms(w))
		}
		for i, w := range g.words {
			for j, ts := range terms {
				if i == j {
					continue
				}
				for _, t := range ts {
					m[w] = append(m[w], qterm{term: t, weight: g.weight})
				}
			}
		}
	}
	return m
}()

// canonicalWords maps the term of each word of a group of the same
// meaning to the term of the group's first word; canonicalPhrases maps
// its two-word members, lowercased.
var canonicalWords, canonicalPhrases = func() (map[string]string, map[string]string) {
	words, phrases := map[string]string{}, map[string]string{}
	for _, g := range vocabulary {
		if g.weight != same {
			continue
		}
		first := rawTerm(g.words[0])
		for _, w := range g.words {
			if strings.Contains(w, " ") {
				phrases[w] = first
			} else {
				words[rawTerm(w)] = first
			}
		}
	}
	return words, phrases
}()

// rawTerm is the term of one word or CJK pair before canonicalization.
func rawTerm(w string) string {
	if r, _ := utf8.DecodeRuneInString(w); isCJK(r) {
		return w
	}
	return normalizeWord(w)
}

// canonical is the canonical term of t.
func canonical(t string) string {
	if c, ok := canonicalWords[t]; ok {
		return c
	}
	return t
}

// indexTerms are the engine analyzer's terms of s, CJK pairs only for CJK
// text (single characters would add noise).
func indexTerms(s string) []string {
	var out []string
	analyzer{}.each(s, func(t string, kind int) {
		if kind != kindCJKChar {
			out = append(out, t)
		}
	})
	return out
}

// qterm is a query term and its weight.
type qterm struct {
	term   string
	weight float64
	// lang, when set, is the only script of the tools the term counts
	// for: a translation finds tools written in the other language, and
	// never lifts a tool of the request's own by its identifiers.
	lang script
}

// String shows a term as {term weight}, and the script it is kept to.
func (q qterm) String() string {
	if q.lang != scriptNone {
		return fmt.Sprintf("{%s %v %s}", q.term, q.weight, languageName[q.lang])
	}
	return fmt.Sprintf("{%s %v}", q.term, q.weight)
}

// cjkCharWeight is a request's single CJK character's weight, against 1
// for a word or a CJK pair: a pair is the unit of a Chinese word; a
// single character only breaks ties.
const cjkCharWeight = 0.3

// weights are a's weights of a request's terms.
func (a analyzer) weights() *Weights {
	if a.w == nil {
		return &defaultWeights
	}
	return a.w
}

// concept is one idea of a request with the terms that may express it,
// each weighted: a tool scores by the best of them, so that "repo" and
// "repository", or "delete" and "remove", count once.
type concept []qterm

// analyzeQuery returns the concepts of a request: one per term of its own,
// which the vocabulary widens with the other words of the term's groups.
// A vocabulary word that is no term of its own (a stop word such as "who"
// or "my", a phrase such as "turn off") brings a concept of its group's
// words instead; a phrase's own words then drop out ("logged in" says
// "authenticated", not "log").
//
// The words that name the thing a request makes or says ("called notes",
// "saying the login page is broken", quoted text) are values, not what the
// tool does: they count at payloadWeight and bring no vocabulary. A
// value's shape says what it is, though: "docs/setup.md" brings the idea
// of a file, "v3.1.0" of a version (valueKinds).
func (a analyzer) analyzeQuery(q string) []concept {
	var concepts []concept
	own := map[string]int{} // own term → its concept
	add := func(factor float64) func(string, int) {
		return func(t string, kind int) {
			w := factor
			if kind == kindCJKChar {
				w *= a.weights().CJKChar
			}
			if i, ok := own[t]; ok {
				concepts[i][0].weight = max(concepts[i][0].weight, w)
				return
			}
			own[t] = len(concepts)
			concepts = append(concepts, concept{{term: t, weight: w}})
		}
	}
	if a.plain {
		a.each(q, add(1))
		return concepts
	}
	for _, words := range valueKinds(q) {
		var c concept
		for _, w := range words {
			c = c.with(qterm{term: normalizeWord(w), weight: a.weights().Vocabulary})
		}
		concepts = append(concepts, c)
	}
	q, payload := splitPayload(q)
	own1 := add(1)
	if skip := a.straddling(q); len(skip) > 0 {
		a.each(q, func(t string, kind int) {
			if kind != kindCJKPair || !skip[t] {
				own1(t, kind)
			}
		})
	} else {
		a.each(q, own1)
	}
	a.each(payload, add(a.weights().Payload))
	dropped := map[int]bool{}
	for _, key := range vocabKeys(q) {
		adds, ok := vocabIndex[key.text]
		if !ok {
			adds = vocabIndex[stem(key.text)]
		}
		if len(adds) == 0 {
			continue
		}
		i := -1
		keyTerms := indexTerms(key.text)
		if key.phrase {
			for _, t := range keyTerms {
				if j, ok := own[t]; ok {
					dropped[j] = true
				}
			}
		} else if len(keyTerms) == 1 {
			if j, ok := own[keyTerms[0]]; ok {
				i = j
			}
		}
		if i < 0 {
			i = len(concepts)
			concepts = append(concepts, nil)
		}
		for _, qt := range adds {
			if _, isOwn := own[qt.term]; !isOwn {
				qt.weight = a.weights().Vocabulary // every group of vocabIndex weighs synonym
				concepts[i] = concepts[i].with(qt)
			}
		}
	}
	out := concepts[:0]
	for i, c := range concepts {
		if !dropped[i] && len(c) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// with adds qt to c; a term already there keeps its higher weight.
func (c concept) with(qt qterm) concept {
	for i := range c {
		if c[i].term == qt.term {
			c[i].weight = max(c[i].weight, qt.weight)
			return c
		}
	}
	return append(c, qt)
}

// vocabKey is a key of a request to look up in the vocabulary.
type vocabKey struct {
	text   string
	phrase bool // two words
}

// vocabKeys are the keys of q: each word lowercased, each pair of
// consecutive words, each CJK character pair.
func vocabKeys(q string) []vocabKey {
	var keys []vocabKey
	prev := ""
	scan(q, func(w string) {
		for _, part := range splitCamel(w) {
			part = strings.ToLower(part)
			keys = append(keys, vocabKey{part, false})
			if prev != "" {
				keys = append(keys, vocabKey{prev + " " + part, true})
			}
			prev = part
		}
	}, func(run string) {
		prev = ""
		rs := []rune(run)
		for i := 0; i+1 < len(rs); i++ {
			keys = append(keys, vocabKey{string(rs[i : i+2]), false})
		}
	})
	return keys
}

// payloadWeight is the weight of a request's words that are values.
const payloadWeight = 0.2

// payloadMarkers introduce a value: the name or text of what a request
// makes ("a repo called notes", "an issue saying …").
var payloadMarkers = setOf(`called named titled entitled saying says`)

// splitPayload cuts q into what it asks and the values it gives: quoted
// text, and the words after a payload marker up to the end of the clause.
func splitPayload(q string) (ask, payload string) {
	var a, p strings.Builder
	inQuote, inValue := false, false
	word := strings.Builder{}
	flush := func() {
		w := word.String()
		word.Reset()
		switch {
		case inQuote || inValue:
			p.WriteString(w)
		case payloadMarkers[strings.ToLower(w)]:
			inValue = true
		default:
			a.WriteString(w)
		}
	}
	rs := []rune(q)
	for i, r := range rs {
		switch {
		case r == '"' || r == '“' || r == '”' || r == '「' || r == '」':
			flush()
			inQuote = !inQuote
			a.WriteByte(' ')
			p.WriteByte(' ')
		case isWordRune(r):
			word.WriteRune(r)
		default:
			flush()
			if strings.ContainsRune(",;!?。，；！？", r) || (r == '.' && (i+1 == len(rs) || rs[i+1] == ' ')) {
				inValue = false
			}
			a.WriteRune(r)
			p.WriteRune(' ')
		}
	}
	flush()
	return a.String(), p.String()
}

// valueShapes name what a value of a request is by its shape: a file's
// path ("docs/setup.md"), a version ("v3.1.0"), an e-mail address, a link.
var valueShapes = []struct {
	re    *regexp.Regexp
	words []string
}{
	{regexp.MustCompile(`^https?://\S+$`), []string{"url", "link"}},
	{regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[a-zA-Z]{2,}$`), []string{"email"}},
	{regexp.MustCompile(`^v?\d+(\.\d+){1,3}([-+][\w.]+)?$`), []string{"version", "tag", "release"}},
	{regexp.MustCompile(`^[\w.-]*(/[\w.-]+)*\.[a-zA-Z][a-zA-Z0-9]{0,4}$`), []string{"file", "path"}},
}

// valueKinds are the words of the values of q, by their shape.
func valueKinds(q string) [][]string {
	var out [][]string
	for _, tok := range strings.Fields(q) {
		tok = strings.TrimRight(tok, ",;:!?)\"'")
		tok = strings.TrimLeft(tok, "(\"'")
		for _, s := range valueShapes {
			if s.re.MatchString(tok) {
				out = append(out, s.words)
				break
			}
		}
	}
	return out
}
