// Package language is the one rule for the language of what the engine
// writes for people (the administrators' log, the OAuth flow's pages):
// English or Chinese, as a request's Accept-Language ranks them.
package language

import (
	"net/http"
	"strconv"
	"strings"
)

// The languages the engine speaks; an index into a [2]string of words.
const (
	EN = 0
	ZH = 1
)

// Tags are the languages' tags, by index.
var Tags = [2]string{"en", "zh-CN"}

// Of is the language r's Accept-Language ranks first of the two (any zh
// tag is Chinese, any en tag English); English when it names neither.
func Of(r *http.Request) int {
	best, bestQ := EN, -1.0
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		lang := -1
		switch t := strings.ToLower(tag); {
		case t == "zh" || strings.HasPrefix(t, "zh-"):
			lang = ZH
		case t == "en" || strings.HasPrefix(t, "en-"):
			lang = EN
		}
		if lang >= 0 && q > bestQ {
			best, bestQ = lang, q
		}
	}
	return best
}
