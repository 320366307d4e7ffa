package auth

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MinMaskLen is the shortest secret a Masker can protect: a shorter one (a
// PIN, a "1") would redact random fragments of every response while hiding
// next to nothing. The engine refuses to store, accept or send a secret
// shorter than this (see CheckSecretLengths); identifiers are exempt.
const MinMaskLen = 4

// Redacted replaces every masked secret.
const Redacted = "[REDACTED]"

// maxUnescapeLevels is how many layers of escaping a Masker sees through:
// an upstream's JSON inside an MCP result's JSON is two; a third covers a
// URL-escaped value in either.
const maxUnescapeLevels = 3

// Masker replaces secrets in text that the LLM, logs, errors or execution
// records will see. It masks what the text means, not only its bytes:
//
//   - each secret as given, query-escaped (space as '+'), and in base64
//     (standard and URL alphabets, padded or not), including the part of a
//     longer base64 text that encodes the secret at any of the three byte
//     alignments (a password inside base64("user:password"));
//   - the same in text read through up to maxUnescapeLevels layers of
//     escaping, each layer undoing JSON string escapes (\/ \" \\ \n …,
//     \uXXXX in either case, surrogate pairs), URL percent-escapes (%XX
//     in either case) or HTML character references (&#115; &#x73; and
//     &amp; &lt; &gt; &quot; &apos;): `sk\/live`, `\u0073\u006B…`,
//     `sk%2flive`, `&#115;k` and `sk\\/live` (JSON inside JSON) are all
//     caught;
//   - all of these in the UTF-16 (LE, BE) and UTF-32 (LE, BE) byte forms
//     of the text, at any alignment, whatever the text claims to be: an
//     upstream chooses the encoding of its answer. They are looked for
//     only in text holding a NUL byte (which every such form of an ASCII
//     character has) or, for a secret with non-ASCII characters, a wide
//     form of one: a clean answer pays one IndexByte.
//
// The whole span of text that encodes a secret is replaced, escapes
// included. A nil *Masker masks nothing. It is safe for concurrent use.
type Masker struct {
	needles []string // every form, longest first
	// scan is needles without those containing another: text holding none
	// of scan holds no needle.
	scan []string
	// wanted marks the bytes of needles, and the escape characters: an
	// unescaped layer can hold a needle its parent lacks only if one of
	// its escapes stands for one of those.
	wanted [256]bool
	// wideScan are the UTF-16 and UTF-32 byte forms of the scan needles
	// holding non-ASCII characters (whose wide forms may hold no NUL).
	wideScan []string
}

// NewMasker returns a Masker for secrets; those shorter than MinMaskLen
// are ignored. Scanning text that holds no secret and no escape allocates
// nothing.
func NewMasker(secrets ...string) *Masker {
	m := &Masker{}
	add := func(s string) {
		if len(s) >= MinMaskLen && !slices.Contains(m.needles, s) {
			m.needles = append(m.needles, s)
		}
	}
	for _, s := range secrets {
		if len(s) < MinMaskLen {
			continue
		}
		// Three values: as given; query-escaped, a needle of its own since
		// the unescaped layers leave a '+' alone (it may be a literal '+')
		// and its base64 is what an oauth2 client sends (Basic
		// base64(escape(id):escape(secret))); and with '+' for each space,
		// what a layer makes of a query escape in lower-case hex.
		for _, v := range []string{s, url.QueryEscape(s), strings.ReplaceAll(s, " ", "+")} {
			add(v)
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
				padded := enc.EncodeToString([]byte(v))
				add(padded)
				add(strings.TrimRight(padded, "="))
				for _, core := range base64Cores(enc, v) {
					add(core)
				}
			}
		}
	}
	for _, n := range m.needles {
		for i := 0; i < len(n); i++ {
			m.wanted[n[i]] = true
		}
	}
	for _, e := range escapes {
		m.wanted[e] = true
	}
	// Longest first, so that scan keeps the shortest of nested forms.
	slices.SortStableFunc(m.needles, func(a, b string) int { return len(b) - len(a) })
	for i, n := range m.needles {
		if !slices.ContainsFunc(m.needles[i+1:], func(shorter string) bool { return strings.Contains(n, shorter) }) {
			m.scan = append(m.scan, n)
			if !isASCII(n) {
				for _, w := range wideEncodings {
					m.wideScan = append(m.wideScan, w.encode(n))
				}
			}
		}
	}
	return m
}

// escapes are the escape characters whose escapes layers undo: JSON's,
// URLs' and HTML's.
var escapes = [...]byte{'\\', '%', '&'}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// base64Cores returns, for each of the three alignments v may have inside
// a longer text, the characters of that text's base64 that depend on v's
// bytes alone: they appear whatever comes before and after v.
func base64Cores(enc *base64.Encoding, v string) []string {
	raw := enc.WithPadding(base64.NoPadding)
	cores := make([]string, 0, 3)
	for k, drop := range []int{0, 2, 3} { // characters mixing the k bytes before v
		b := make([]byte, k+len(v))
		copy(b[k:], v)
		e := raw.EncodeToString(b)
		end := len(e)
		if (k+len(v))%3 != 0 {
			end-- // the last character mixes v with what follows
		}
		if end-drop >= MinMaskLen {
			cores = append(cores, e[drop:end])
		}
	}
	return cores
}

// String returns s with every secret replaced by Redacted.
func (m *Masker) String(s string) string {
	if m == nil || !m.suspect(s) {
		return s
	}
	out, _ := m.mask(s, false)
	return out
}

// Cut is String for text cut short (a body read up to a limit): a
// secret the cut split in two leaves its start at the end of the text,
// which String would not recognize. Cut also replaces the longest end of
// s (read through the same escapes) that begins a form of a secret.
func (m *Masker) Cut(s string) string {
	if m == nil || len(m.needles) == 0 {
		return s
	}
	out, _ := m.mask(s, true)
	return out
}

// Bytes returns b with every secret replaced by Redacted: b itself when it
// holds none, a new slice otherwise.
func (m *Masker) Bytes(b []byte) []byte {
	if m == nil || !m.suspectBytes(b) {
		return b
	}
	out, changed := m.mask(string(b), false)
	if !changed {
		return b
	}
	return []byte(out)
}

// suspect reports whether s may hold a secret: a needle as is, or an
// escape that could stand for part of one.
func (m *Masker) suspect(s string) bool {
	if len(m.needles) == 0 {
		return false
	}
	for _, n := range m.scan {
		if strings.Contains(s, n) {
			return true
		}
	}
	return escapedIn(m, s) || wideIn(m, s)
}

func (m *Masker) suspectBytes(b []byte) bool {
	if len(m.needles) == 0 {
		return false
	}
	for _, n := range m.scan {
		if bytes.Contains(b, []byte(n)) {
			return true
		}
	}
	return escapedIn(m, b) || wideIn(m, b)
}

// escapedIn reports whether s holds an escape that could stand for part
// of a needle.
func escapedIn[T string | []byte](m *Masker, s T) bool {
	for _, e := range escapes {
		if worthUnescaping(&m.wanted, s, e) {
			return true
		}
	}
	return false
}

// wideIn reports whether s may hold a needle in a UTF-16 or UTF-32 form:
// it holds a NUL byte, or the wide form of a non-ASCII needle.
func wideIn[T string | []byte](m *Masker, s T) bool {
	if indexByte(s, 0) >= 0 {
		return true
	}
	for _, w := range m.wideScan {
		if contains(s, w) {
			return true
		}
	}
	return false
}

// contains is bytes.Contains or strings.Contains, as s is.
func contains[T string | []byte](s T, sub string) bool {
	if b, ok := any(s).([]byte); ok {
		return bytes.Contains(b, []byte(sub))
	}
	return strings.Contains(string(s), sub)
}

// wideEncoding is a byte form of Unicode text in code units wider than a
// byte: UTF-16 or UTF-32, little- or big-endian.
type wideEncoding struct {
	unit int // bytes per code unit
	big  bool
}

var wideEncodings = [...]wideEncoding{{2, false}, {2, true}, {4, false}, {4, true}}

// encode returns s in w's byte form.
func (w wideEncoding) encode(s string) string {
	out := make([]byte, 0, w.unit*len(s))
	put := func(u rune) {
		for k := range w.unit {
			shift := 8 * k
			if w.big {
				shift = 8 * (w.unit - 1 - k)
			}
			out = append(out, byte(u>>shift))
		}
	}
	for _, r := range s {
		if w.unit == 2 && r > 0xffff {
			hi, lo := utf16.EncodeRune(r)
			put(hi)
			put(lo)
		} else {
			put(r)
		}
	}
	return string(out)
}

func (w wideEncoding) unitAt(s string, i int) rune {
	switch {
	case w.unit == 2 && w.big:
		return rune(s[i])<<8 | rune(s[i+1])
	case w.unit == 2:
		return rune(s[i+1])<<8 | rune(s[i])
	case w.big:
		return rune(s[i])<<24 | rune(s[i+1])<<16 | rune(s[i+2])<<8 | rune(s[i+3])
	}
	return rune(s[i+3])<<24 | rune(s[i+2])<<16 | rune(s[i+1])<<8 | rune(s[i])
}

// plausible reports whether s read in w from byte align on has a run of
// MinMaskLen ASCII characters: every form of an ASCII secret (escaped,
// base64, …) is one. UTF-16LE text read a byte late is UTF-16BE and is
// read; read in UTF-32 it is not, and need not be decoded.
func (w wideEncoding) plausible(s string, align int) bool {
	run := 0
	for i := align; i+w.unit <= len(s); i += w.unit {
		if u := w.unitAt(s, i); u > 0 && u < utf8.RuneSelf {
			if run++; run == MinMaskLen {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// decode returns l's text read in w from byte align on, as a layer of
// UTF-8 text; nil when it is too short to hold a secret. Units that are
// no character read as U+FFFD.
func (w wideEncoding) decode(l *layer, align int) *layer {
	if (len(l.text)-align)/w.unit < MinMaskLen {
		return nil
	}
	text, _ := w.read(l.text, align, false)
	return &layer{text: text, parent: l, wide: &wideLayer{w, align}}
}

// read decodes s in w from byte align on; with positions, it also maps
// each byte of the text to where its code unit (or surrogate pair)
// starts in s.
func (w wideEncoding) read(s string, align int, positions bool) (string, []int32) {
	var text strings.Builder
	text.Grow((len(s) - align) / w.unit)
	var from []int32
	var buf [utf8.UTFMax]byte
	for i := align; i+w.unit <= len(s); i += w.unit {
		start := i
		r := w.unitAt(s, i)
		if w.unit == 2 && utf16.IsSurrogate(r) && i+2*w.unit <= len(s) {
			if pair := utf16.DecodeRune(r, w.unitAt(s, i+w.unit)); pair != utf8.RuneError {
				r = pair
				i += w.unit
			}
		}
		n := utf8.EncodeRune(buf[:], r) // an invalid rune encodes as U+FFFD
		text.Write(buf[:n])
		for range n * bool2int(positions) {
			from = append(from, int32(start))
		}
	}
	return text.String(), from
}

func bool2int(b bool) int {
	if b {
		return 1
	}
	return 0
}

// wideLayer says how a layer reads the original: in w from byte align on.
type wideLayer struct {
	w     wideEncoding
	align int
}

// span is a range [from, to) of the original text.
type span struct{ from, to int }

// layer is the original text with some escapes undone. Where each of
// its bytes comes from is worked out only for a layer holding a needle.
type layer struct {
	text   string
	parent *layer     // nil: the original
	escape byte       // what was undone from parent
	wide   *wideLayer // or, for a layer of the original: how it was read
	// from[i] is where the escape (or byte) that gave text[i] starts in
	// the original; built on demand. Layers cover the original whole and
	// in order, so the bytes of one escape end where the next one's start.
	from []int32
}

// span returns the original span of text[i:j].
func (l *layer) span(i, j int) span {
	if l.parent == nil {
		return span{i, j}
	}
	if l.from == nil {
		l.from = l.positions()
	}
	root := l
	for root.parent != nil {
		root = root.parent
	}
	to := len(root.text)
	for k := j; k < len(l.from); k++ {
		if l.from[k] != l.from[j-1] {
			to = int(l.from[k])
			break
		}
	}
	return span{int(l.from[i]), to}
}

// positions builds from by undoing the parent's escapes again (or reading
// the original again).
func (l *layer) positions() []int32 {
	p := l.parent
	if l.wide != nil {
		_, from := l.wide.w.read(p.text, l.wide.align, true)
		return from
	}
	if p.parent != nil && p.from == nil {
		p.from = p.positions()
	}
	from := make([]int32, 0, len(l.text))
	walkEscapes(p.text, l.escape, func(i, n int, b string) {
		switch {
		case n == len(b) && p.from == nil: // plain bytes
			for k := range n {
				from = append(from, int32(i+k))
			}
		case n == len(b):
			from = append(from, p.from[i:i+n]...)
		default: // every byte of an escape's value comes from its start
			f := int32(i)
			if p.from != nil {
				f = p.from[i]
			}
			for range len(b) {
				from = append(from, f)
			}
		}
	})
	return from
}

// mask finds every needle in s and in each unescaped layer of s, and
// replaces the original text of each (merged) match.
func (m *Masker) mask(s string, cut bool) (string, bool) {
	var spans []span
	top := &layer{text: s}
	m.find(top, cut, &spans)
	m.findUnescaped(top, maxUnescapeLevels, cut, &spans)
	if wideIn(m, s) {
		for _, w := range wideEncodings {
			for align := range w.unit {
				if len(m.wideScan) == 0 && !w.plausible(s, align) {
					continue
				}
				if l := w.decode(top, align); l != nil {
					m.find(l, cut, &spans)
					m.findUnescaped(l, maxUnescapeLevels, cut, &spans)
				}
			}
		}
	}
	if len(spans) == 0 {
		return s, false
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	var out strings.Builder
	out.Grow(len(s))
	at := 0
	for i := 0; i < len(spans); {
		cur := spans[i]
		for i++; i < len(spans) && spans[i].from < cur.to; i++ {
			cur.to = max(cur.to, spans[i].to)
		}
		out.WriteString(s[at:cur.from])
		out.WriteString(Redacted)
		at = cur.to
	}
	out.WriteString(s[at:])
	return out.String(), true
}

// find appends the original spans of every needle occurrence in l, and
// with cut, of the longest end of l that begins a needle.
func (m *Masker) find(l *layer, cut bool, spans *[]span) {
	if cut {
		// The cut may also have split an escape, which stays as it is.
		text := l.text[:len(l.text)-splitEscape(l.text)]
		longest := 0
		for _, n := range m.needles {
			for k := min(len(n)-1, len(text)); k > longest; k-- {
				if strings.HasSuffix(text, n[:k]) {
					longest = k
					break
				}
			}
		}
		if longest > 0 {
			*spans = append(*spans, l.span(len(text)-longest, len(l.text)))
		}
	}
	if !slices.ContainsFunc(m.scan, func(n string) bool { return strings.Contains(l.text, n) }) {
		return
	}
	for _, n := range m.needles {
		for off := 0; ; {
			i := strings.Index(l.text[off:], n)
			if i < 0 {
				break
			}
			*spans = append(*spans, l.span(off+i, off+i+len(n)))
			off += i + 1
		}
	}
}

// splitEscape is the length of the escape s ends with when it is cut
// short (`\`, `\u00`, `%`, `%4`), else 0.
func splitEscape(s string) int {
	for n := 1; n <= 5 && n <= len(s); n++ {
		tail := s[len(s)-n:]
		switch {
		case tail[0] == '%' && n <= 2 && isHex(tail[1:]),
			tail[0] == '\\' && (n == 1 || tail[1] == 'u' && isHex(tail[2:])):
			return n
		}
	}
	return 0
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if _, ok := unhex(s[i]); !ok {
			return false
		}
	}
	return true
}

// findUnescaped finds needles in each layer below l: JSON-unescaped and
// percent-unescaped, each in turn, down to levels deep. The two are
// undone separately: in `\\u0041%41` (JSON for the text \u0041%41) a
// layer undoing both at once would also read %41 as 'A'.
func (m *Masker) findUnescaped(l *layer, levels int, cut bool, spans *[]span) {
	if levels == 0 {
		return
	}
	for _, escape := range escapes {
		if !worthUnescaping(&m.wanted, l.text, escape) {
			continue
		}
		if next := unescape(l, escape); next != nil {
			m.find(next, cut, spans)
			m.findUnescaped(next, levels-1, cut, spans)
		}
	}
}

// worthUnescaping reports whether undoing the escapes of the kind escape
// in s could reveal a needle s does not hold: whether one of them stands
// for a byte of a needle or an escape character (which may begin an
// escape of the next layer). Most escaped text (JSON's \n and \") needs
// no layer built at all.
func worthUnescaping[T string | []byte](wanted *[256]bool, s T, escape byte) bool {
	for i := 0; i < len(s); i++ {
		// Jump to the next escape character: an answer's bytes are
		// mostly not, and IndexByte skips them many at a time.
		k := indexByte(s[i:], escape)
		if k < 0 {
			return false
		}
		i += k
		var b [utf8.UTFMax]byte
		n := 0
		switch {
		case escape == '\\' && i+1 < len(s):
			if r, k := jsonEscape(string(s[i:min(i+12, len(s))])); k > 0 {
				n = utf8.EncodeRune(b[:], r)
			}
		case escape == '%' && i+2 < len(s):
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b[0], n = hi<<4|lo, 1
			}
		case escape == '&':
			if r, k := htmlEscape(string(s[i:min(i+12, len(s))])); k > 0 {
				n = utf8.EncodeRune(b[:], r)
			}
		}
		for _, c := range b[:n] {
			if wanted[c] {
				return true
			}
		}
	}
	return false
}

// indexByte is bytes.IndexByte or strings.IndexByte, as s is.
func indexByte[T string | []byte](s T, c byte) int {
	if b, ok := any(s).([]byte); ok {
		return bytes.IndexByte(b, c)
	}
	return strings.IndexByte(string(s), c)
}

// unescape undoes one layer of escapes in l: JSON string escapes when
// escape is '\\', URL percent-escapes when it is '%'. Malformed escapes
// are kept as they are. It returns nil when there was nothing to undo.
func unescape(l *layer, escape byte) *layer {
	out := make([]byte, 0, len(l.text))
	changed := false
	walkEscapes(l.text, escape, func(_, n int, b string) {
		out = append(out, b...)
		changed = changed || n > len(b)
	})
	if !changed {
		return nil
	}
	return &layer{text: string(out), parent: l, escape: escape}
}

// walkEscapes calls emit for each run of plain bytes of s (n == len(b))
// and each escape of the kind escape (n bytes of s giving b), in order.
func walkEscapes(s string, escape byte, emit func(i, n int, b string)) {
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], escape)
		if j != 0 {
			if j < 0 {
				j = len(s) - i
			}
			emit(i, j, s[i:i+j])
			i += j
			continue
		}
		b, n := buf[:1], 1 // a malformed escape stands for itself
		buf[0] = escape
		switch {
		case escape == '\\' && i+1 < len(s):
			if r, k := jsonEscape(s[i:]); k > 0 {
				b, n = buf[:utf8.EncodeRune(buf[:], r)], k
			}
		case escape == '%' && i+2 < len(s):
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				buf[0], n = hi<<4|lo, 3
			}
		case escape == '&':
			if r, k := htmlEscape(s[i:]); k > 0 {
				b, n = buf[:utf8.EncodeRune(buf[:], r)], k
			}
		}
		emit(i, n, string(b)) // one byte, or a rune from \\u: rarely an allocation
		i += n
	}
}

// jsonEscape decodes the JSON string escape at the start of s (which
// begins with a backslash): the rune and the escape's length, or n == 0
// when s does not start with one.
func jsonEscape(s string) (r rune, n int) {
	switch s[1] {
	case '"', '\\', '/':
		return rune(s[1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, ok := hex4(s[2:])
		if !ok {
			return 0, 0
		}
		if utf16.IsSurrogate(r) {
			if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
				if lo, ok := hex4(s[8:]); ok {
					if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
						return pair, 12
					}
				}
			}
			return utf8.RuneError, 6
		}
		return r, 6
	}
	return 0, 0
}

// htmlEscape decodes the HTML character reference at the start of s
// (which begins with '&'): numeric (&#115; &#x73;, the ';' optional, as
// browsers read them) or one of the five XML names (&amp; &lt; &gt;
// &quot; &apos;). It returns the rune and the reference's length, or
// n == 0 when s does not start with one.
func htmlEscape(s string) (r rune, n int) {
	if len(s) < 3 {
		return 0, 0
	}
	if s[1] != '#' {
		for _, e := range [...]struct {
			name string
			r    rune
		}{{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}} {
			if strings.HasPrefix(s, e.name) {
				return e.r, len(e.name)
			}
		}
		return 0, 0
	}
	i, base, digits := 2, rune(10), 7
	if s[2] == 'x' || s[2] == 'X' {
		i, base, digits = 3, 16, 6
	}
	start := i
	for ; i < len(s) && i-start < digits; i++ {
		d, ok := unhex(s[i])
		if !ok || base == 10 && d > 9 {
			break
		}
		r = r*base + rune(d)
	}
	if i == start || !utf8.ValidRune(r) || r == 0 {
		return 0, 0
	}
	if i < len(s) && s[i] == ';' {
		i++
	}
	return r, i
}

func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := range 4 {
		d, ok := unhex(s[i])
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Error returns err, or when its message holds a secret (a *url.Error
// quoting a URL with ?key=SECRET), an error with the masked message.
// Unwrap still yields the original so that callers can classify it with
// errors.Is and errors.As; only print the masked Error().
func (m *Masker) Error(err error) error {
	if err == nil || m == nil {
		return err
	}
	msg := err.Error()
	masked := m.String(msg)
	if masked == msg {
		return err
	}
	return &maskedError{msg: masked, err: err}
}

type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }
