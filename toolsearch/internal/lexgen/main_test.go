package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestGlossWords(t *testing.T) {
	for g, want := range map[string][]string{
		"to restart (a machine etc)":                           {"restart"},
		"invoice":                                              {"invoice"},
		"(computing) snapshot":                                 {"snapshot"},
		"variant of 發票|发票[fa1 piao4]":                          nil,
		"to submit an expense account":                         {"submit", "expense", "account"},
		"a long explanation of what the word means in context": nil,
		// the dictionary's annotations, and a gloss of how it is read
		"fig. beginning":          {"beginning"},
		"lit. to cut all at once": {"cut", "all", "once"},
		"Taiwan pr. [xia4 zai3]":  nil,
		"esp. sb's smile":         {"smile"},
	} {
		if got := glossWords(g); !slices.Equal(got, want) {
			t.Errorf("glossWords(%q) = %q, want %q", g, got, want)
		}
	}
}

// TestCedict: a Chinese word's English words, and an English gloss's
// Chinese words, the most specific entry first.
func TestCedict(t *testing.T) {
	lines := cedict([]cedictEntry{
		{"防火墙", []string{"firewall"}},
		{"火墙", []string{"firewall", "fire wall", "wall of fire"}},
		{"作废", []string{"to become invalid", "to cancel"}},
		{"重新启动", []string{"to reboot", "to restart"}},
		{"重启", []string{"to restart (a machine etc)", "to reactivate"}}, // abbreviates 重新启动
		{"启事", []string{"announcement"}},
		{"新启", []string{"to restart"}},                       // not from 重新启动's first character
		{"的", []string{"of"}},                                // one character: no line of its own
		{"A型", []string{"type A"}},                           // not all Han
		{"寄出", []string{"to mail", " to send by post"}},      // verbs: the verb each gloss starts with
		{"今天", []string{"today", " at the present", " now"}}, // no verb
	})
	for _, want := range []string{"防火墙\tfirewall", "firewall\t防火墙 火墙", "作废\tbecome invalid cancel\tbecome cancel", "cancel\t作废",
		"重启\trestart reactivate reboot\trestart reactivate", "新启\trestart\trestart", "启事\tannouncement",
		"寄出\tmail send post\tmail send", "今天\ttoday present now"} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line %q in %q", want, lines)
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "的\t") || strings.HasPrefix(l, "A型") {
			t.Errorf("line %q", l)
		}
	}
}

// TestWordnet reads a small WordNet in the files' format: a word's or
// phrasal verb's synonyms and its synsets' hypernyms' words.
func TestWordnet(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"data.verb": "  1 This software and database is being provided\n" +
			"00000001 32 v 02 reboot 0 boot 0 001 @ 00000002 v 0000 | to restart a computer; \"boot the PC\"\n" +
			"00000002 32 v 01 restart 0 000 | start again\n" +
			"00000003 32 v 03 expel 0 kick_out 0 take_care 0 001 @ 00000004 v 0000 | force to leave\n" +
			"00000004 32 v 01 remove 0 000 | take away\n",
		"index.verb": "  1 licence\nreboot v 1 1 @ 1 0 00000001  \nboot v 1 1 @ 1 0 00000001  \nrestart v 1 0 1 0 00000002  \n" +
			"kick_out v 1 1 @ 1 0 00000003  \ntake_care v 1 1 @ 1 0 00000003  \n",
	}
	for _, pos := range []string{"noun", "adj"} {
		files["data."+pos], files["index."+pos] = "", ""
	}
	for name, text := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600)
	}
	lines, err := wordnet(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	// a phrasal verb is a line (its words are not its sense), another
	// compound is not; the words of the first sense's definition, not of
	// its examples nor its function words, follow, alone when a word has
	// no synonym nor broader word (restart)
	want := []string{"boot\treboot\trestart\trestart computer", "kick_out\texpel\tremove\tforce leave",
		"reboot\tboot\trestart\trestart computer", "restart\t\t\tstart again"}
	if !slices.Equal(lines, want) {
		t.Errorf("wordnet = %q, want %q", lines, want)
	}
}

// TestEcdict: each frequent headword's first Chinese word, the web's and
// other domains' lines left out, remarks and one-character or longer
// words skipped; a rare headword, a phrase and a headword with no rank
// dropped.
func TestEcdict(t *testing.T) {
	csv := "word,phonetic,definition,translation,pos,collins,oxford,tag,bnc,frq,exchange,detail,audio\n" +
		`ad,,,"n. 广告, 地址\n[网络] 公元",,,,,4324,1748,,,` + "\n" +
		`cancel,,,"[网络] 注销\nn. (正式)取消, 撤消, 盖销(邮票)\n[计] 作废",,,,,3183,3915,,,` + "\n" +
		`void,,,"n. 空, 空虚",,,,,0,0,,,` + "\n" +
		`blankest,,,"a. 空白的",,,,,0,60001,,,` + "\n" +
		`null and void,,,"a. 无效的",,,,,900,900,,,` + "\n"
	path := filepath.Join(t.TempDir(), "ecdict.csv")
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := readEcdict(path)
	if err != nil {
		t.Fatal(err)
	}
	got := ecdict(ls)
	slices.Sort(got)
	if want := []string{"ad\t广告", "cancel\t取消"}; !slices.Equal(got, want) {
		t.Errorf("ecdict = %q, want %q", got, want)
	}
	if got, want := ecdictChinese(`vt. 取消, 删去\n[计] 作废\n[医] 消除`), []string{"取消", "删去", "作废"}; !slices.Equal(got, want) {
		t.Errorf("ecdictChinese = %q, want %q", got, want)
	}
}
