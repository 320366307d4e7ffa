// Package jsonlimit measures raw JSON before anything decodes it: how deep
// its arrays and objects nest and how many elements it holds. Decoders
// spend time and memory in proportion to both (encoding/json and gjson
// recurse per level; a 200 KB document can nest 100,000 deep), so input
// from outside is scanned first and refused past a limit.
//
// The scan allocates nothing and does not validate: it tracks strings and
// brackets only, and leaves malformed JSON for the decoder to report.
package jsonlimit

import "fmt"

// Limits bound a document. A zero field is no limit.
type Limits struct {
	// Depth bounds the nesting of arrays and objects: a scalar is depth 0,
	// {} and [1] depth 1.
	Depth int
	// Elements bounds the values: the document itself, every array item
	// and every object member (a key and its value counting once), at any
	// depth.
	Elements int
}

// Messages bound every JSON message taken from outside — an API request
// body, a line of `mcp serve --stdio` — scanned before it is decoded. They
// sit a little above engine.ArgumentLimits, which bound the arguments
// inside (a message wraps them in a level or two), so that arguments over
// those are refused by the executor with its own message.
var Messages = Limits{Depth: 72, Elements: 1_000_000}

// Error is a document over a limit.
type Error struct {
	Limit string // "depth" or "elements"
	Max   int
}

func (e *Error) Error() string {
	if e.Limit == LimitDepth {
		return fmt.Sprintf("JSON nested deeper than the limit of %d levels", e.Max)
	}
	return fmt.Sprintf("JSON holding more than the limit of %d elements", e.Max)
}

// Names of the limits in an Error.
const (
	LimitDepth    = "depth"
	LimitElements = "elements"
)

// Stats are what Measure found.
type Stats struct {
	Depth, Elements int
}

// Check scans b and returns an *Error when it exceeds l. It stops at the
// first byte past a limit.
func Check(b []byte, l Limits) error {
	_, err := scan(b, l)
	return err
}

// Measure scans the whole of b.
func Measure(b []byte) Stats {
	s, _ := scan(b, Limits{})
	return s
}

// scan counts the elements as 1 for the document, plus one per comma (each
// separates two items or members), plus one per container that is not
// empty (its first item or member): no stack is needed.
func scan(b []byte, l Limits) (Stats, error) {
	var s Stats
	depth := 0
	opened := false // the previous significant byte opened a container
	add := func() error {
		s.Elements++
		if l.Elements > 0 && s.Elements > l.Elements {
			return &Error{Limit: LimitElements, Max: l.Elements}
		}
		return nil
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		if s.Elements == 0 {
			s.Elements = 1 // the document
		}
		if opened && c != '}' && c != ']' {
			if err := add(); err != nil {
				return s, err
			}
		}
		opened = false
		switch c {
		case '"':
			// Skip the string; a backslash escapes the next byte.
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case ',':
			if err := add(); err != nil {
				return s, err
			}
		case '{', '[':
			depth++
			if depth > s.Depth {
				s.Depth = depth
				if l.Depth > 0 && depth > l.Depth {
					return s, &Error{Limit: LimitDepth, Max: l.Depth}
				}
			}
			opened = true
		case '}', ']':
			depth--
		}
	}
	return s, nil
}
