package toolsearch

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

func tool(name, title, desc string) *plugins.Plugin {
	return &plugins.Plugin{Name: name, Title: title, Description: desc, Status: plugins.StatusEnabled}
}

func first(t *testing.T, ix *Index, q string) string {
	t.Helper()
	rs := ix.Search(q, 5)
	if len(rs) == 0 {
		return ""
	}
	return rs[0].Name
}

// TestSources: a tool's source (name, title, aliases) and its tags'
// descriptions are words of the tool; a request naming a source ranks
// that source's tools first though another's share more of its words.
func TestSources(t *testing.T) {
	hz := &plugins.Source{Name: "hetzner", Title: "Hetzner Cloud API", Aliases: []string{"赫兹纳"},
		TagDescriptions: map[string]string{"Floating IPs": "A static public address you can move between servers."}}
	do := &plugins.Source{Name: "digitalocean", Title: "DigitalOcean API"}
	ps := []*plugins.Plugin{
		{Name: "hz_list_servers", Title: "Get all Servers", Description: "Returns servers.", Source: hz, Status: plugins.StatusEnabled},
		{Name: "hz_create_fip", Title: "Create a Floating IP", Description: "Creates one.", Tags: []string{"Floating IPs"}, Source: hz, Status: plugins.StatusEnabled},
		{Name: "do_list_droplets", Title: "List all servers (droplets)", Description: "Lists every server of the account.", Source: do, Status: plugins.StatusEnabled},
	}
	ix, err := New(ps)
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"list all servers":                   "do_list_droplets",
		"list all servers on hetzner":        "hz_list_servers",
		"list all servers in Hetzner Cloud":  "hz_list_servers",
		"赫兹纳 list all servers":               "hz_list_servers",
		"a static address I can move around": "hz_create_fip", // the tag's description
	} {
		if got := first(t, ix, q); got != want {
			t.Errorf("%q: %s first, want %s", q, got, want)
		}
	}
	got := ix.Sources()
	want := []SourceInfo{{"hetzner", "Hetzner Cloud API", 2}, {"digitalocean", "DigitalOcean API", 1}}
	if !slices.Equal(got, want) {
		t.Errorf("Sources() = %v, want %v", got, want)
	}
	plain, _ := NewWith(ps, Parts{})
	if got := first(t, plain, "list all servers on hetzner"); got != "do_list_droplets" {
		t.Errorf("without sources: %s first", got)
	}
}

// TestLexicon: a request's word that no tool has finds the tools that
// say its WordNet synonym ("boot" the server: reboot) or a word of the
// definition of its first sense ("banners": a long strip of cloth or
// paper used for decoration or advertising, at lexGloss); a word the
// catalog has is not widened, and a phrasal verb brings its synonyms and
// broader words, not its definition's ("kick out": force to leave).
func TestLexicon(t *testing.T) {
	servers := []*plugins.Plugin{
		tool("reboot", "Reboot a server", "Restarts it."),
		tool("create", "Create a server", "A new one."),
		tool("kick", "Kick a member", "Removes a member from a channel."),
		tool("force_push", "Force a push", "Overwrites a branch."),
	}
	pages := []*plugins.Plugin{
		tool("list_ads", "List advertising slots", "The slots on the home page."),
		tool("list_pages", "List pages", "Every page of the site."),
	}
	noGloss := DefaultWeights()
	noGloss.Gloss = 0
	for _, tc := range []struct {
		ps          []*plugins.Plugin
		q, want     string
		without     Parts // an index where q must not find want first
		withoutWhat string
	}{
		{servers, "boot server 3 again", "reboot", Parts{}, "the lexicon"},
		{pages, "show the banners", "list_ads", Parts{Lexicon: true, Weights: &noGloss}, "the definitions' words"},
	} {
		ix, _ := New(tc.ps)
		if got := first(t, ix, tc.q); got != tc.want {
			t.Errorf("%s: %q first, want %s", tc.q, got, tc.want)
		}
		if without, _ := NewWith(tc.ps, tc.without); first(t, without, tc.q) == tc.want {
			t.Errorf("without %s, %q found %s first: the test proves nothing", tc.withoutWhat, tc.q, tc.want)
		}
	}
	ix, _ := New(servers)
	concepts := ix.an.analyzeQuery("kick the member")
	before := fmt.Sprint(concepts)
	concepts = ix.expandLexicon("kick the member", concepts)
	if after := fmt.Sprint(concepts); after != before {
		t.Errorf("a word the catalog has was widened: %s, was %s", after, before)
	}
	q := "kick Ann out of the room"
	for _, c := range ix.expandLexicon(q, ix.an.analyzeQuery(q)) {
		if slices.ContainsFunc(c, func(qt qterm) bool { return qt.term == canonical(ix.an.normalize("force")) }) {
			t.Errorf("%q: the phrasal verb brought its definition's force: %v", q, c)
		}
	}
}

// TestPhrasalVerbs: a verb and a particle up to three words after it
// are WordNet's phrasal verb ("take a track out": take_out, remove),
// though the catalog has both words, and the particle no concept of its
// own; "in" and "on" are no particles.
func TestPhrasalVerbs(t *testing.T) {
	for _, tc := range []struct {
		ask, verb, word string // word: one of the phrasal verb's WordNet words
	}{
		{"take a track out of the playlist", "take", "remove"},
		{"kick Ann out of the launch chat room", "kick", "expel"},
		{"kicking him out", "kicking", "oust"},
		{"boot a member out of the workspace", "boot", "remove"},
		{"did the checks pass on this commit", "", ""},
		{"put the song on repeat", "", ""},
		{"move the card to the done list, then out", "", ""}, // out too far
		{"show all servers", "", ""},
	} {
		pvs := phrasalVerbs(tc.ask)
		if tc.verb == "" {
			if len(pvs) != 0 {
				t.Errorf("%q: phrasal verbs %v, want none", tc.ask, pvs)
			}
			continue
		}
		if len(pvs) != 1 || pvs[0].verb != tc.verb || !slices.Contains(strings.Fields(strings.Join(pvs[0].fields, " ")), tc.word) {
			t.Errorf("%q: phrasal verbs %v, want %s with %s", tc.ask, pvs, tc.verb, tc.word)
		}
	}
	ps := []*plugins.Plugin{
		tool("add_tracks", "Add tracks to a playlist", "Adds tracks."),
		tool("get_tracks", "Get a playlist's tracks", "Lists its tracks."),
		tool("remove_tracks", "Remove tracks from a playlist", "Removes tracks."),
		tool("list_members", "List the members of a chat room", "Every member."),
		tool("remove_member", "Remove a member of a chat room", "The member leaves."),
	}
	ix, _ := New(ps)
	// the verb's concept holds the phrasal verb's words, though the
	// catalog has "take" (a word it has is not widened: TestLexicon)
	q := "take a track out of the playlist"
	concepts := ix.an.analyzeQuery(q)
	concepts = ix.expandLexicon(q, concepts)
	take := ownConcept(concepts, canonical(ix.an.normalize("take")))
	if take < 0 || !slices.ContainsFunc(concepts[take], func(qt qterm) bool {
		return qt.term == canonical(ix.an.normalize("remove")) && qt.weight == lexSynonym
	}) {
		t.Errorf("%q: concepts %v, want remove among take's", q, concepts)
	}
	// the particle is no concept of the request after a verb the hand
	// vocabulary does not know; after one it knows ("look" is get), it
	// stays
	for _, tc := range []struct {
		q, particle string
		kept        bool
	}{
		{"kick Ann out of the launch chat room", "out", false},
		{"take a track out of the playlist", "out", false},
		{"look up the user torvalds", "up", true},
	} {
		concepts := ix.an.analyzeQuery(tc.q)
		p := canonical(ix.an.normalize(tc.particle))
		if ownConcept(concepts, p) < 0 {
			t.Fatalf("%q: no concept %q to begin with: %v", tc.q, p, concepts)
		}
		concepts = ix.expandLexicon(tc.q, concepts)
		if kept := ownConcept(concepts, p) >= 0; kept != tc.kept {
			t.Errorf("%q: particle's concept kept %v, want %v: %v", tc.q, kept, tc.kept, concepts)
		}
	}
	plain, _ := NewWith(ps, Parts{})
	for q, want := range map[string]string{
		"take a track out of the playlist":     "remove_tracks",
		"kick Ann out of the launch chat room": "remove_member",
	} {
		if got := first(t, ix, q); got != want {
			t.Errorf("%q: %s first, want %s", q, got, want)
		}
		if got := first(t, plain, q); got == want {
			t.Errorf("%q: %s first without the lexicon: the test proves nothing", q, got)
		}
	}
}

// TestAcrossLanguages: with CC-CEDICT, a Chinese request finds English
// tools and an English request Chinese ones; in a catalog holding both,
// the request's own language comes first.
func TestAcrossLanguages(t *testing.T) {
	en := []*plugins.Plugin{
		tool("fw_delete", "Delete a firewall", "Deletes the firewall."),
		tool("fw_create", "Create a firewall", "Creates a firewall."),
		tool("meeting_create", "Create a meeting", "Schedules a meeting."),
	}
	zh := []*plugins.Plugin{
		tool("fhq_delete", "删除防火墙", "删除一个防火墙"),
		tool("fhq_add", "新增防火墙", "新增一个防火墙"),
		tool("hy_add", "新增会议", "安排一个会议"),
	}
	enIx, _ := New(en)
	zhIx, _ := New(zh)
	both, _ := New(append(append([]*plugins.Plugin{}, en...), zh...))
	for _, tc := range []struct {
		ix      *Index
		q, want string
	}{
		{enIx, "删除防火墙", "fw_delete"},
		{enIx, "安排一个视频会议", "meeting_create"},
		{zhIx, "delete the firewall", "fhq_delete"},
		{zhIx, "schedule a meeting", "hy_add"},
		{both, "删除防火墙", "fhq_delete"},
		{both, "delete the firewall", "fw_delete"},
	} {
		if got := first(t, tc.ix, tc.q); got != tc.want {
			t.Errorf("%q: %s first, want %s", tc.q, got, tc.want)
		}
	}
	if off, _ := NewWith(en, Parts{Sources: true, Lexicon: true}); len(off.Search("删除防火墙", 5)) != 0 {
		t.Error("without the dictionary a Chinese request found English tools")
	}
}

// TestECDICT: an English word whose Chinese word CC-CEDICT lacks (its
// glosses give "ad" only 广子, 公元) finds it through ECDICT's first
// translation (广告, issue 49's seventeenth session).
func TestECDICT(t *testing.T) {
	ix, _ := New([]*plugins.Plugin{
		tool("promo_list", "分页查询广告", "首页轮播广告"),
		tool("address_list", "获取所有收货地址", "会员的收货地址"),
		tool("brand_list", "分页查询品牌", "商品品牌"),
	})
	if got := first(t, ix, "list the ad banners"); got != "promo_list" {
		t.Errorf("list the ad banners: %s first, want promo_list", got)
	}
}

// TestTranslationsThroughWordNet: a Chinese word whose English words no
// tool has is translated through WordNet, as a request's own English
// word no tool has is (利润 "profits": earnings, income); the English
// words tools have are not expanded.
func TestTranslationsThroughWordNet(t *testing.T) {
	en := []*plugins.Plugin{
		tool("customers_list", "List customers", "Lists the customers."),
		tool("earnings_list", "List earnings", "Lists the earnings of a period."),
		tool("expenses_list", "List expenses", "Lists the expenses of a period."),
	}
	ix, _ := New(en)
	if got := first(t, ix, "查看利润"); got != "earnings_list" {
		t.Errorf("查看利润: %s first, want earnings_list", got)
	}
	off, _ := NewWith(en, Parts{Sources: true, Bilingual: true, Responses: true})
	if got := first(t, off, "查看利润"); got == "earnings_list" {
		t.Error("without WordNet, 利润 found the earnings")
	}
}

// TestChineseVerbSynonyms: a request's Chinese verb that no tool has
// finds the catalog's words whose verb glosses start with its verbs (寄出
// "to send by post": 发货 "to send out goods"); a word that is no verb
// (今天 "today", though 今日 is its synonym) and a word of the hand
// vocabulary (查看) bring none.
func TestChineseVerbSynonyms(t *testing.T) {
	ix, _ := New([]*plugins.Plugin{
		tool("order_delivery", "批量发货", "订单发货。"),
		tool("order_close", "批量关闭订单", "关闭订单。"),
		tool("order_list", "查询订单", "分页查询订单。"),
		tool("todo_today", "获取今日待办", "今日需要处理的订单。"),
		tool("apply_audit", "审批申请", "审批退货申请。"),
	})
	if got := first(t, ix, "这几单可以寄出去了"); got != "order_delivery" {
		t.Errorf("这几单可以寄出去了: %s first, want order_delivery", got)
	}
	for _, w := range []string{"今天", "查看"} {
		if c := ix.verbSynonyms(w); c != nil {
			t.Errorf("%s brings %v", w, c)
		}
	}
}

// TestDictionaryGlosses: what the generator reads of CC-CEDICT's
// glosses. A short word takes the English of the longer word it
// abbreviates (重启 of 重新启动: reboot, which 重启's own entry lacks);
// a gloss's annotations are no English words (下载 "download; Taiwan pr.
// [xia4 zai3]" would otherwise bring "pr", GitHub's pull requests).
func TestDictionaryGlosses(t *testing.T) {
	ix, _ := New([]*plugins.Plugin{
		tool("server_delete", "Delete a server", "Deletes the server."),
		tool("server_reboot", "Reboot a server", "Reboots the server."),
		tool("archive_download", "Download an archive", "Downloads the repository's archive."),
		tool("pulls_list", "List pull requests", "Lists the repository's pull requests."),
	})
	for _, tc := range []struct {
		q      string
		want   string // first
		absent string // not found at all
	}{
		{"重启服务器", "server_reboot", ""},
		{"下载", "archive_download", "pulls_list"},
	} {
		rs := ix.Search(tc.q, 5)
		if len(rs) == 0 || rs[0].Name != tc.want {
			t.Errorf("%q: %v, want %s first", tc.q, rs, tc.want)
		}
		for _, r := range rs {
			if r.Name == tc.absent {
				t.Errorf("%q found %s", tc.q, r.Name)
			}
		}
	}
}

func TestSegment(t *testing.T) {
	var got []string
	segment("删除防火墙规则", func(w string) { got = append(got, w) })
	if want := []string{"删除", "防火墙", "规则"}; !slices.Equal(got, want) {
		t.Errorf("segment = %q, want %q", got, want)
	}
	var terms []string
	analyzer{words: true}.each("防火墙", func(term string, _ int) { terms = append(terms, term) })
	if !slices.Contains(terms, "防火墙") {
		t.Errorf("a three-character word is no term: %q", terms)
	}
}

// TestTableSizes: the embedded tables add at most 8 MB to the binary
// (issue 49), and they load.
func TestTableSizes(t *testing.T) {
	if n := len(wordnetGz) + len(cedictGz) + len(ecdictGz); n > 8<<20 {
		t.Errorf("embedded tables: %d bytes, over 8 MB", n)
	}
	if wordnetTable.lookup("reboot") == nil || cedictTable.lookup("防火墙") == nil || cedictTable.lookup("firewall") == nil || ecdictChinese("ad") != "广告" {
		t.Error("a table lacks a word it has")
	}
}

// TestStraddling: a request's character pairs across a boundary of the
// dictionary's words are no terms of it; the pairs of words, and those of
// characters the dictionary has no word for, are.
func TestStraddling(t *testing.T) {
	an := analyzer{words: true}
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"查询所有用户", []string{"有用", "询所"}},
		{"删除用户", []string{"除用"}},
		{"list users", nil},
		{"用户", nil},
	} {
		got := slices.Sorted(maps.Keys(an.straddling(c.q)))
		if !slices.Equal(got, c.want) {
			t.Errorf("straddling(%q) = %v, want %v", c.q, got, c.want)
		}
		var terms []string
		for _, cp := range an.analyzeQuery(c.q) {
			terms = append(terms, cp[0].term)
		}
		for _, p := range c.want {
			if slices.Contains(terms, p) {
				t.Errorf("%q: %s is a term of the request: %v", c.q, p, terms)
			}
		}
	}
	if got := (analyzer{}).straddling("查询所有用户"); got != nil {
		t.Errorf("an analyzer that does not segment: %v", got)
	}
}
