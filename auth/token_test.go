package auth_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
)

// TestHashToken holds the stored form of a token, whatever its length
// (the usual one hashed from a copy on the stack, a longer one from the
// heap), to the hex SHA-256 of its bytes.
func TestHashToken(t *testing.T) {
	issued, hash := auth.NewToken()
	if auth.HashToken(issued) != hash {
		t.Errorf("NewToken's hash is not HashToken's of its token")
	}
	for _, tok := range []string{"", "a", issued, strings.Repeat("x", 64), strings.Repeat("y", 65), strings.Repeat("z", 300)} {
		sum := sha256.Sum256([]byte(tok))
		if got, want := auth.HashToken(tok), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("a token of %d bytes: %s, want %s", len(tok), got, want)
		}
	}
}

// An issued token is hashed on every request that carries it: one
// allocation, the string returned.
func TestHashTokenAllocs(t *testing.T) {
	tok, _ := auth.NewToken()
	if n := testing.AllocsPerRun(100, func() { auth.HashToken(tok) }); n != 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}
