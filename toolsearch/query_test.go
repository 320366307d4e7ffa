package toolsearch

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckQuery(t *testing.T) {
	err := CheckQuery(strings.Repeat("x", DefaultMaxQueryChars+1), 0)
	var qe *QueryTooLongError
	if !errors.As(err, &qe) || qe.Max != DefaultMaxQueryChars || !strings.Contains(err.Error(), "limit of 2000 characters (BLINDEXEC_MAX_QUERY_CHARS)") {
		t.Errorf("a query over the default: %v", err)
	}
	if err := CheckQuery(strings.Repeat("x", DefaultMaxQueryChars), 0); err != nil {
		t.Errorf("a query at the default: %v", err)
	}
}
