package toolsearch

import "strings"

// Requests rarely use a tool's own words ("take the label off" for
// "remove a label", "新建" for "新增"). The vocabulary below is what any API
// catalog shares: the verbs of create, read, update and delete, enabling
// and disabling, the usual abbreviations, and "me" for the REST idiom "the
// authenticated user". A request's word adds the other words of its group
// to the query at a lower weight. Nothing here names an operation of a
// particular API.
var vocabulary = []vocabGroup{
	// create
	{synonym, []string{"create", "add", "new", "make", "insert", "register", "新增", "新建", "添加", "创建", "增加", "新加"}},
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
	{synonym, []string{"me", "my", "mine", "myself", "logged in", "signed in", "authenticated", "current", "我的", "当前"}},
	// abbreviations and spellings: the same word
	{same, []string{"repo", "repository"}},
	{same, []string{"org", "organization", "organisation"}},
	{same, []string{"pr", "pull request"}},
	{same, []string{"config", "configuration", "settings", "setting", "配置", "设置"}},
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
		var terms [][]string
		for _, w := range g.words {
			terms = append(terms, indexTerms(w))
		}
		for i, w := range g.words {
			for j, ts := range terms {
				if i == j {
					continue
				}
				for _, t := range ts {
					m[w] = append(m[w], qterm{t, g.weight})
				}
			}
		}
	}
	return m
}()

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
}

// Weights of query terms by kind: a CJK pair is the unit of a Chinese
// word; a single character only breaks ties.
var kindWeight = [...]float64{kindWord: 1, kindCJKChar: 0.3, kindCJKPair: 1}

// analyzeQuery returns the weighted terms of a request: its own terms,
// then those the vocabulary adds; a term keeps its highest weight.
func (a analyzer) analyzeQuery(q string) []qterm {
	weights := map[string]float64{}
	var order []string
	add := func(t string, w float64) {
		if old, ok := weights[t]; !ok {
			weights[t] = w
			order = append(order, t)
		} else if w > old {
			weights[t] = w
		}
	}
	a.each(q, func(t string, kind int) { add(t, kindWeight[kind]) })
	if !a.plain {
		for _, key := range vocabKeys(q) {
			for _, qt := range vocabIndex[key] {
				add(qt.term, qt.weight)
			}
		}
	}
	out := make([]qterm, len(order))
	for i, t := range order {
		out[i] = qterm{t, weights[t]}
	}
	return out
}

// vocabKeys are the keys of q to look up in the vocabulary: each word
// lowercased, each pair of consecutive words, each CJK character pair.
func vocabKeys(q string) []string {
	var keys []string
	prev := ""
	scan(q, func(w string) {
		for _, part := range splitCamel(w) {
			part = strings.ToLower(part)
			keys = append(keys, part)
			if prev != "" {
				keys = append(keys, prev+" "+part)
			}
			prev = part
		}
	}, func(run string) {
		prev = ""
		rs := []rune(run)
		for i := 0; i+1 < len(rs); i++ {
			keys = append(keys, string(rs[i:i+2]))
		}
	})
	return keys
}
