package auth

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Credential values are of two kinds. Secrets (passwords, tokens, API
// keys, client secrets, and every mapping entry not marked "secret":
// false) are masked in every form wherever they appear. Identifiers (a
// basic-auth username, an oauth2 client id, a mapping entry marked
// "secret": false) are ordinary data on their own — an approval's
// approved_by keeps reading "approver" — and are masked only inside the
// encodings that carry a secret with them: the basic-auth pair and the
// oauth2 client-credentials request (see Applied.Secrets).

// ErrSecretTooShort is wrapped by the error refusing a secret shorter than
// MinMaskLen: masking it would redact random fragments of every answer, so
// it is neither stored, nor accepted, nor sent.
var ErrSecretTooShort = fmt.Errorf("a secret shorter than %d bytes cannot be masked in answers, so it is refused (use a longer one; a mapping entry that is no secret can be marked \"secret\": false)", MinMaskLen)

// CheckSecretLengths fails, naming the first key in order, when a
// credential of creds not among identifiers (the keys read only as
// identifiers) is non-empty and shorter than MinMaskLen. Identifiers may
// be of any length.
func CheckSecretLengths(identifiers []string, creds map[string]string) error {
	// The least key failing, found without sorting the keys: every call
	// passes here twice, and a sorted copy was most of its cost.
	first, failed := "", false
	for k, v := range creds {
		if v != "" && len(v) < MinMaskLen && !slices.Contains(identifiers, k) && (!failed || k < first) {
			first, failed = k, true
		}
	}
	if failed {
		return fmt.Errorf("credential %s: %w", first, ErrSecretTooShort)
	}
	return nil
}

// CheckSecretLength fails when value, about to be stored as a secret, is
// shorter than MinMaskLen.
func CheckSecretLength(key, value string) error {
	if len(value) < MinMaskLen {
		return fmt.Errorf("credential %s: %w", key, ErrSecretTooShort)
	}
	return nil
}

// IsSecretTooShort reports whether err refuses a secret for its length.
func IsSecretTooShort(err error) bool { return errors.Is(err, ErrSecretTooShort) }

// MaskerFor returns the Masker of a call made with creds: every credential
// value but those of the keys identifiers (the keys read only as
// identifiers: an auth config's IdentifierKeys, or for stored credentials
// the catalog's, see Catalog.Identifiers), and derived,
// the secrets Apply derived from them (Applied.Secrets). It is the one
// masker of results, errors, records and logs. Maskers are cached by their
// secrets: building one derives a dozen encodings of each, and the same
// credentials come back call after call.
func MaskerFor(identifiers []string, creds map[string]string, derived ...string) *Masker {
	secrets := make([]string, 0, len(creds)+len(derived))
	for k, v := range creds {
		if len(v) >= MinMaskLen && !slices.Contains(identifiers, k) {
			secrets = append(secrets, v)
		}
	}
	for _, v := range derived {
		if len(v) >= MinMaskLen {
			secrets = append(secrets, v)
		}
	}
	if len(secrets) == 0 {
		return nil
	}
	slices.Sort(secrets)
	secrets = slices.Compact(secrets)
	key := strings.Join(secrets, "\x00")
	maskers.Lock()
	defer maskers.Unlock()
	m := maskers.m[key]
	if m == nil {
		if maskers.m == nil || len(maskers.m) >= maskersMax {
			maskers.m = make(map[string]*Masker)
		}
		m = NewMasker(secrets...)
		maskers.m[key] = m
	}
	return m
}

// maskers caches Maskers by their secrets. It keeps no secret the engine
// would not hold anyway (the oauth2 token cache does likewise) and is
// cleared when full.
var maskers struct {
	sync.Mutex
	m map[string]*Masker
}

const maskersMax = 1024
