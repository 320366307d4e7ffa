package language_test

import (
	"net/http"
	"testing"

	"github.com/blindexec/blindexec/internal/language"
)

func TestOf(t *testing.T) {
	for header, want := range map[string]int{
		"": language.EN, "zh-CN": language.ZH, "zh-CN,zh;q=0.9,en;q=0.8": language.ZH, "en-US,en;q=0.9,zh-CN;q=0.8": language.EN,
		"fr-FR,zh-TW;q=0.5": language.ZH, "de": language.EN, "en;q=0.2, zh;q=0.7": language.ZH, "ZH-hans": language.ZH, "zhx": language.EN,
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Language", header)
		if got := language.Of(r); got != want {
			t.Errorf("Of(%q) = %d, want %d", header, got, want)
		}
	}
}
