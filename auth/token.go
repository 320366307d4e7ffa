package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// TokenPrefix marks per-user API tokens issued by the engine.
const TokenPrefix = "bx_"

// NewToken returns a fresh per-user API token and the hash under which it
// is stored; the token itself is shown once and never kept.
func NewToken() (token, hash string) {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand panics on a broken source)
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token)
}

// HashToken is the stored form of a token: hex sha256. Tokens carry 256
// random bits, so a plain fast hash is enough (no password stretching).
func HashToken(token string) string {
	// A token of the usual length (46 bytes) is hashed from a copy on the
	// stack: []byte(token) is a copy on the heap past 32 bytes.
	var buf [64]byte
	b := buf[:0]
	if len(token) > len(buf) {
		b = make([]byte, 0, len(token))
	}
	sum := sha256.Sum256(append(b, token...))
	var out [2 * sha256.Size]byte // every request hashes its token: one allocation, the string
	hex.Encode(out[:], sum[:])
	return string(out[:])
}
