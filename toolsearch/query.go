package toolsearch

import (
	"fmt"
	"unicode/utf8"
)

// EnvMaxQueryChars bounds a search query wherever it enters (search_tools,
// GET /v1/tools/search, ?q= of GET /v1/tools, the console, the OpenAPI
// query tools): a longer one is refused before any search is done on it.
// cmd/blindexec reads the setting.
const EnvMaxQueryChars = "BLINDEXEC_MAX_QUERY_CHARS"

// DefaultMaxQueryChars is the default of EnvMaxQueryChars: a request in
// people's words is a sentence, not a document.
const DefaultMaxQueryChars = 2000

// QueryTooLongError refuses a search query over the limit before any
// search is done on it.
type QueryTooLongError struct {
	Max int // characters
}

func (e *QueryTooLongError) Error() string {
	return fmt.Sprintf("query: over the limit of %d characters (%s); say in a few words what the tool should do", e.Max, EnvMaxQueryChars)
}

// CheckQuery refuses a query of more than max characters (Unicode code
// points; DefaultMaxQueryChars when max is 0).
func CheckQuery(q string, max int) error {
	if max <= 0 {
		max = DefaultMaxQueryChars
	}
	// Bytes bound characters from above: most queries need no count.
	if len(q) > max && utf8.RuneCountInString(q) > max {
		return &QueryTooLongError{Max: max}
	}
	return nil
}
