// Package invisible removes from text the characters a person does not see
// and a model reads: Unicode tag characters (which spell ASCII invisibly),
// bidirectional controls (which reorder what is shown), zero-width and
// other default-ignorable format characters, variation selectors (which
// can carry a byte each after any character), and control characters.
// A plugin's name, title, description and parameter texts pass through it
// wherever they enter the engine, so that what an administrator reads in
// the console is what the model is told.
//
// The classes come from Unicode's Default_Ignorable_Code_Point property
// (DerivedCoreProperties.txt: Other_Default_Ignorable_Code_Point, the Cf
// category and Variation_Selector, less White_Space and the prepended
// concatenation marks) plus the interlinear annotation characters
// U+FFF9–FFFB (Cf, not default-ignorable, yet they hide the text between
// them in most renderers) and the C0/C1 controls but tab, line feed and
// carriage return. The tables are the standard library's unicode
// properties (Bidi_Control, Join_Control, Variation_Selector,
// Other_Default_Ignorable_Code_Point, Prepended_Concatenation_Mark, the Cf
// and Cc categories, scripts): golang.org/x/text adds none of these.
//
// Some of these characters carry meaning, and stay where they do:
//
//   - ZWNJ (U+200C) and ZWJ (U+200D) between two letters of a script that
//     shapes with them (Arabic-type joining scripts: Persian's
//     "می‌خواهم"; Brahmic scripts, where they choose a half form or a
//     conjunct after a virama: Devanagari's "क्‍ष"), marks of the letter
//     before them allowed;
//   - ZWJ inside an emoji ZWJ sequence (👨‍👩‍👧, 🏳️‍🌈): between two
//     emoji, the one before it allowed its VS16 and skin-tone modifier;
//   - VS15 and VS16 (U+FE0E, U+FE0F) right after an emoji (❤️, and the
//     keycap #️⃣ when U+20E3 follows): one, not a run — the smuggling
//     trick appends many selectors to one emoji;
//   - Mongolian free variation selectors right after a Mongolian letter,
//     and its vowel separator between two;
//   - tag characters in the three RGI subdivision flags (🏴 + gbeng, gbsct
//     or gbwls + cancel tag): any other tag sequence renders as a black
//     flag, its tags unseen.
//
// Standard library tables have no Extended_Pictographic (the emoji
// property), so "an emoji" is a symbol (categories So and Sm, past ASCII,
// and ‼ ⁉): a little wider than the emoji list, and safe, since what it
// keeps is at most one selector after a symbol or one joiner between two.
//
// Every decision reads the text already kept on its left and the character
// on its right, which is a letter, symbol or mark when anything is kept,
// and those are never removed: a second pass removes nothing (Remove is
// idempotent).
package invisible

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind names a class of removed characters, as removals report them.
type Kind string

// The classes removed.
const (
	Tag               Kind = "tag"                // U+E0000–E007F
	Bidi              Kind = "bidi"               // U+061C, U+200E–200F, U+202A–202E, U+2066–2069
	ZeroWidth         Kind = "zero_width"         // U+200B, U+2060, U+FEFF, and ZWNJ/ZWJ out of place
	VariationSelector Kind = "variation_selector" // U+FE00–FE0F, U+E0100–E01EF, Mongolian FVS out of place
	Format            Kind = "format"             // every other default-ignorable or hiding format character
	Control           Kind = "control"            // C0 and C1 controls but \t, \n, \r
)

// Found is what Remove took out of one text.
type Found struct {
	Count int    // characters removed
	Kinds []Kind // their classes, sorted, each once
}

func (f *Found) add(k Kind) {
	f.Count++
	if !slices.Contains(f.Kinds, k) {
		f.Kinds = append(f.Kinds, k)
	}
}

// Removal reports what was removed from one field of a plugin:
// "description", "parameters.properties.q.description".
type Removal struct {
	Field string `json:"field"`
	Count int    `json:"count"`
	Kinds []Kind `json:"kinds"`
}

// String is r as a person reads it: "description: 3 invisible
// characters removed (bidi, tag)".
func (r Removal) String() string {
	kinds := make([]string, len(r.Kinds))
	for i, k := range r.Kinds {
		kinds[i] = string(k)
	}
	unit := "characters"
	if r.Count == 1 {
		unit = "character"
	}
	return r.Field + ": " + strconv.Itoa(r.Count) + " invisible " + unit + " removed (" + strings.Join(kinds, ", ") + ")"
}

// Remove returns s without its invisible characters, and what it removed.
// Invalid UTF-8 becomes U+FFFD, one for one, and is not counted.
func Remove(s string) (string, Found) {
	var f Found
	if plain(s) {
		return s, f
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
			i++
			continue
		}
		if r == blackFlag {
			if seq := flagTags(s[i+n:]); seq > 0 {
				b.WriteString(s[i : i+n+seq])
				i += n + seq
				continue
			}
		}
		next, _ := utf8.DecodeRuneInString(s[i+n:])
		if k, drop := classify(r, b.String(), next, i+n < len(s)); drop {
			f.add(k)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	if f.Count == 0 {
		return b.String(), f // invalid UTF-8 replaced, nothing removed
	}
	slices.Sort(f.Kinds)
	return b.String(), f
}

// plain reports whether s holds no character Remove might take out: the
// common case, checked fast. Every character classify removes is in one
// of the suspects' tables (TestSuspectsCoverRemovals checks every code
// point), and none lies in U+3200–FDFF, where CJK text is.
func plain[T string | []byte](s T) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x7f || c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return false
			}
			i++
			continue
		}
		var r rune
		var n int
		switch v := any(s).(type) {
		case string:
			r, n = utf8.DecodeRuneInString(v[i:])
		case []byte:
			r, n = utf8.DecodeRune(v[i:])
		}
		if r == utf8.RuneError && n == 1 || (r < 0x3200 || r >= 0xFE00) && unicode.In(r, suspects...) {
			return false
		}
		i += n
	}
	return true
}

// suspects are the tables of every character Remove may remove.
var suspects = []*unicode.RangeTable{unicode.Cc, unicode.Cf, unicode.Bidi_Control, unicode.Join_Control,
	unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point, {R16: []unicode.Range16{{Lo: 0xFFF9, Hi: 0xFFFB, Stride: 1}}},
	{R32: []unicode.Range32{{Lo: 0xE0000, Hi: 0xE007F, Stride: 1}}}}

const (
	blackFlag = 0x1F3F4
	cancelTag = 0xE007F
	zwnj      = 0x200C
	zwj       = 0x200D
	vs15      = 0xFE0E
	vs16      = 0xFE0F
	keycap    = 0x20E3
)

// rgiFlags are the tag specs of the subdivision flags Unicode recommends
// for general interchange: the only tag sequences shown as what they say.
var rgiFlags = []string{"gbeng", "gbsct", "gbwls"}

// flagTags is the length in bytes of the RGI flag's tags (cancel tag
// included) at the start of s, or 0.
func flagTags(s string) int {
	for _, spec := range rgiFlags {
		var want strings.Builder
		for _, c := range spec {
			want.WriteRune(0xE0000 + c)
		}
		want.WriteRune(cancelTag)
		if strings.HasPrefix(s, want.String()) {
			return want.Len()
		}
	}
	return 0
}

// classify says whether r goes and, if so, its class; kept is the text
// kept so far, next the character after r (hasNext false at the end).
func classify(r rune, kept string, next rune, hasNext bool) (Kind, bool) {
	switch {
	case r >= 0xE0000 && r <= 0xE007F:
		return Tag, true
	case unicode.Is(unicode.Bidi_Control, r):
		return Bidi, true
	case r == zwnj || r == zwj:
		return ZeroWidth, !hasNext || !joinerKept(r, kept, next)
	case r == 0x200B || r == 0x2060 || r == 0xFEFF:
		return ZeroWidth, true
	case r == 0x180E: // Mongolian vowel separator
		last, _ := utf8.DecodeLastRuneInString(kept)
		return Format, !hasNext || !mongolianLetter(last) || !mongolianLetter(next)
	case unicode.Is(unicode.Variation_Selector, r):
		return VariationSelector, !selectorKept(r, kept, next)
	case unicode.Is(unicode.Cc, r):
		return Control, r != '\t' && r != '\n' && r != '\r'
	case r >= 0xFFF9 && r <= 0xFFFB: // interlinear annotation: hides what it encloses
		return Format, true
	case unicode.Is(unicode.Prepended_Concatenation_Mark, r), unicode.Is(unicode.Egyptian_Hieroglyphs, r):
		return "", false // visible marks; Egyptian's format controls arrange its signs
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Cf, r):
		return Format, !unicode.Is(unicode.White_Space, r)
	}
	return "", false
}

// joinerKept: ZWNJ or ZWJ between two letters of a script shaped with
// them (marks of the first letter in between), or ZWJ between two emoji.
func joinerKept(r rune, kept string, next rune) bool {
	if r == zwj && emoji(next) {
		if base, ok := lastSkipping(kept, func(c rune) bool { return c == vs16 || c >= 0x1F3FB && c <= 0x1F3FF }); ok && emoji(base) {
			return true
		}
	}
	base, ok := lastSkipping(kept, func(c rune) bool { return unicode.In(c, unicode.Mn, unicode.Mc, unicode.Me) })
	if !ok || !unicode.IsLetter(base) || !unicode.IsLetter(next) {
		return false
	}
	for _, sc := range joiningScripts {
		if unicode.Is(sc, base) {
			return unicode.Is(sc, next)
		}
	}
	return false
}

// joiningScripts are the scripts whose shaping ZWNJ and ZWJ change:
// cursive joining scripts (a ZWNJ breaks a join, a ZWJ forces one) and
// Brahmic scripts (after a virama, half forms and conjuncts).
var joiningScripts = []*unicode.RangeTable{
	unicode.Arabic, unicode.Syriac, unicode.Nko, unicode.Mandaic, unicode.Mongolian, unicode.Phags_Pa,
	unicode.Manichaean, unicode.Psalter_Pahlavi, unicode.Hanifi_Rohingya, unicode.Sogdian, unicode.Adlam,
	unicode.Devanagari, unicode.Bengali, unicode.Gurmukhi, unicode.Gujarati, unicode.Oriya, unicode.Tamil,
	unicode.Telugu, unicode.Kannada, unicode.Malayalam, unicode.Sinhala, unicode.Tibetan, unicode.Myanmar,
	unicode.Khmer, unicode.Balinese, unicode.Javanese, unicode.Tai_Tham,
}

// selectorKept: VS15 or VS16 right after an emoji (a keycap base when
// U+20E3 follows), or a Mongolian free variation selector right after a
// Mongolian letter. Only right after: a second selector follows the
// first, not the base.
func selectorKept(r rune, kept string, next rune) bool {
	last, _ := utf8.DecodeLastRuneInString(kept)
	switch {
	case kept == "":
		return false
	case r == vs15 || r == vs16:
		return emoji(last) || strings.ContainsRune("0123456789#*", last) && next == keycap
	case r >= 0x180B && r <= 0x180F:
		return mongolianLetter(last)
	}
	return false
}

// emoji approximates Extended_Pictographic: see the package comment.
func emoji(r rune) bool {
	return r == 0x203C || r == 0x2049 || r >= 0x80 && r != utf8.RuneError && unicode.In(r, unicode.So, unicode.Sm)
}

func mongolianLetter(r rune) bool { return unicode.Is(unicode.Mongolian, r) && unicode.IsLetter(r) }

// lastSkipping is the last rune of s before a run of runes skip accepts.
func lastSkipping(s string, skip func(rune) bool) (rune, bool) {
	for s != "" {
		r, n := utf8.DecodeLastRuneInString(s)
		if !skip(r) {
			return r, true
		}
		s = s[:len(s)-n]
	}
	return 0, false
}
