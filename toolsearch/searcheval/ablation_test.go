package searcheval

import (
	"fmt"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/toolsearch"
)

// groups of sets the ablation reports together.
var groups = []struct {
	name string
	sets []string
}{
	{"English held out (Zoom, Hetzner, Xero)", []string{"zoom-heldout.json", "hetzner-heldout.json", "xero-heldout.json"}},
	{"English tuned on (Zoom, Hetzner, Xero)", []string{"zoom-queries.json", "hetzner-queries.json", "xero-queries.json"}},
	{"Chinese held out (mall)", []string{"mall-heldout.json"}},
	{"Chinese tuned on (mall)", []string{"mall-queries.json"}},
	{"across languages held out", []string{"cross-heldout.json"}},
	{"across languages tuned on", []string{"cross-queries.json"}},
	{"paraphrases, all new sets", nil},
	{"GitHub (119 + 40)", []string{"github-queries.json", "github-heldout.json"}},
	{"Slack, Spotify (81)", []string{"slack-queries.json", "slack-heldout.json", "spotify-queries.json", "spotify-heldout.json"}},
	{"RuoYi, CRM (96)", []string{"ruoyi-queries.json", "ruoyi-heldout.json", "crm-queries.json", "crm-heldout.json"}},
}

var newSets = []string{"zoom-queries.json", "zoom-heldout.json", "hetzner-queries.json", "hetzner-heldout.json",
	"xero-queries.json", "xero-heldout.json", "mall-queries.json", "mall-heldout.json"}

// TestAblation ranks every set in the catalog of all of them with each
// part of issue 49 alone and together, and prints the table of
// docs/tool-search.md (go test ./toolsearch/searcheval -run Ablation -v).
func TestAblation(t *testing.T) {
	e := loadEvaluation(t)
	configs := []config{
		{"before (no part)", toolsearch.Parts{}},
		{"1 sources", toolsearch.Parts{Sources: true}},
		{"2 lexicon", toolsearch.Parts{Lexicon: true}},
		{"3 across languages", toolsearch.Parts{Bilingual: true}},
		{"5 response words", toolsearch.Parts{Responses: true}},
		{"all", toolsearch.AllParts},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| requests (n) | %s |\n|---|", strings.Join(configNames(configs), " | "))
	for range configs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	rows := make([][]string, len(groups))
	for _, c := range configs {
		ix, err := toolsearch.NewWith(e.all.Plugins, c.parts)
		if err != nil {
			t.Fatal(err)
		}
		for g, gr := range groups {
			var cases []Case
			if gr.sets == nil {
				for _, set := range newSets {
					for _, cs := range e.cases[set] {
						if cs.Paraphrase {
							cases = append(cases, cs)
						}
					}
				}
			}
			for _, set := range gr.sets {
				cases = append(cases, e.cases[set]...)
			}
			f := Evaluate(ix.Search, cases)
			if len(rows[g]) == 0 {
				rows[g] = append(rows[g], fmt.Sprintf("%s (%d)", gr.name, f.N))
			}
			rows[g] = append(rows[g], fmt.Sprintf("%.3f / %.3f / %.3f", f.Recall1, f.Recall5, f.MRR10))
		}
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
	}
	t.Logf("every set in one catalog of %d tools; recall@1 / recall@5 / MRR@10%s", e.together.Len(), b.String())
}

type config struct {
	name  string
	parts toolsearch.Parts
}

func configNames(cs []config) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}
