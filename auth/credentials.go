package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/blindexec/blindexec/store"
)

// CredentialStore is the storage the credential service needs;
// *store.Store implements it.
type CredentialStore interface {
	PutCredential(ctx context.Context, c *store.Credential) error
	GetCredentials(ctx context.Context, userID int64, keys []string) ([]store.Credential, error)
	ListCredentials(ctx context.Context, userID int64) ([]store.Credential, error)
	DeleteCredential(ctx context.Context, userID int64, key string) error
	EachCredential(ctx context.Context, fn func(*store.Credential) error) error
	UpdateCredentialValue(ctx context.Context, id int64, oldValue, newValue, keyID string) error
}

// credentialKeyPattern is the rule for credential keys.
var credentialKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// CredentialService stores users' credentials encrypted with a Keyring.
type CredentialService struct {
	store CredentialStore
	keys  *Keyring
	// Changes, when set, keeps credentials read (and absences) in memory
	// while the credentials' change counter stays where it was when they
	// were read, sparing a database read per call. Writes made through this
	// service take effect at once; writes made elsewhere (another replica,
	// RuoYi writing sys_user_credential) after the next poll. nil: no
	// cache. Set it before use.
	Changes Versions
	// Identifiers tells Set which keys are identifiers (*Catalog does): a
	// value shorter than MinMaskLen is stored only for a key the catalog
	// reads only as an identifier, and an empty one only for a key it
	// reads as a basic-auth password. nil: every key is a secret, and
	// none may be empty.
	Identifiers interface {
		IsIdentifier(ctx context.Context, key string) (bool, error)
		MayBeEmpty(ctx context.Context, key string) (bool, error)
	}

	mu           sync.Mutex
	cacheVersion int64
	cache        map[credRef]cachedValue
}

// Versions tells the change counters; *store.Watcher implements it.
type Versions interface {
	Current() store.Versions
}

type credRef struct {
	user int64
	key  string
}

// cachedValue holds a credential as stored, encrypted: a value is
// decrypted per call and never kept in the clear.
type cachedValue struct {
	stored  string
	present bool
}

// credCacheMax bounds the cache; past it, the cache starts afresh.
const credCacheMax = 10000

// NewCredentialService returns a service over st encrypting with kr.
func NewCredentialService(st CredentialStore, kr *Keyring) *CredentialService {
	return &CredentialService{store: st, keys: kr}
}

// Keyring is the keys the service encrypts with, which other secrets the
// engine keeps for itself are sealed under too (an import's URL with
// userinfo). Nil-safe: a nil service has no keys.
func (cs *CredentialService) Keyring() *Keyring {
	if cs == nil {
		return nil
	}
	return cs.keys
}

// MaskedCredential describes a stored credential without revealing it.
type MaskedCredential struct {
	Key        string    `json:"key"`
	Masked     string    `json:"masked"`
	KeyID      string    `json:"key_id"`
	UpdateTime time.Time `json:"update_time"`
}

// ValidateCredentialKey checks key against ^[A-Za-z0-9_.-]{1,128}$.
func ValidateCredentialKey(key string) error {
	if !credentialKeyPattern.MatchString(key) {
		return fmt.Errorf("invalid credential key %q: want 1 to 128 of A-Z a-z 0-9 _ . -", key)
	}
	return nil
}

// Set encrypts value and stores it as the user's credential key, replacing
// any previous value; by is recorded in the audit columns.
func (cs *CredentialService) Set(ctx context.Context, userID int64, key, value, by string) error {
	if err := ValidateCredentialKey(key); err != nil {
		return err
	}
	if value == "" {
		if err := cs.checkEmpty(ctx, key); err != nil {
			return fmt.Errorf("set credential %q of user %d: %w", key, userID, err)
		}
	} else if err := cs.checkLength(ctx, key, value); err != nil {
		return err
	}
	stored, kid, err := cs.keys.Encrypt(userID, key, value)
	if err != nil {
		return fmt.Errorf("set credential %q of user %d: %w", key, userID, err)
	}
	c := &store.Credential{UserID: userID, Key: key, Value: stored, KeyID: kid,
		Audit: store.Audit{CreateBy: by, UpdateBy: by}}
	defer cs.forget(userID, key)
	return cs.store.PutCredential(ctx, c)
}

// ErrEmptyValue is wrapped by the error refusing an empty value for a key
// no enabled plugin reads as a basic-auth password.
var ErrEmptyValue = errors.New("an empty value is a credential only for a key read as a basic-auth password (to remove a credential, delete it)")

// checkEmpty refuses an empty value unless the catalog reads key as a
// basic-auth password.
func (cs *CredentialService) checkEmpty(ctx context.Context, key string) error {
	if cs.Identifiers == nil {
		return ErrEmptyValue
	}
	ok, err := cs.Identifiers.MayBeEmpty(ctx, key)
	if err != nil {
		return err
	}
	if !ok {
		return ErrEmptyValue
	}
	return nil
}

// checkLength refuses a value too short to mask, unless the catalog reads
// key only as an identifier.
func (cs *CredentialService) checkLength(ctx context.Context, key, value string) error {
	err := CheckSecretLength(key, value)
	if err == nil || cs.Identifiers == nil {
		return err
	}
	id, cerr := cs.Identifiers.IsIdentifier(ctx, key)
	if cerr != nil {
		return fmt.Errorf("set credential %q: %w", key, cerr)
	}
	if id {
		return nil
	}
	return err
}

// Resolve returns the decrypted values of those of keys the user has.
// Absent keys are simply missing from the map.
func (cs *CredentialService) Resolve(ctx context.Context, userID int64, keys []string) (map[string]string, error) {
	stored, err := cs.ciphertexts(ctx, userID, keys)
	if err != nil {
		return nil, err
	}
	for k, v := range stored {
		plain, err := cs.keys.Decrypt(userID, k, v)
		if err != nil {
			return nil, fmt.Errorf("resolve credential %q of user %d: %w", k, userID, err)
		}
		stored[k] = plain // in place: a map of its own for the plain values would cost one a call
	}
	return stored, nil
}

// Versions returns a version of each of keys the user has: the hex
// SHA-256 of its stored ciphertext, which changes on every write (a
// fresh nonce each time, a rotation included) and tells nothing of the
// value. A pending call's digest binds them (issue 33): a credential set
// between pause and approval makes the call stale.
func (cs *CredentialService) Versions(ctx context.Context, userID int64, keys []string) (map[string]string, error) {
	stored, err := cs.ciphertexts(ctx, userID, keys)
	if err != nil {
		return nil, err
	}
	for k, v := range stored {
		sum := sha256.Sum256([]byte(v))
		stored[k] = hex.EncodeToString(sum[:])
	}
	return stored, nil
}

// ciphertexts returns the stored (encrypted) values of those of keys the
// user has, from the cache when it is current.
func (cs *CredentialService) ciphertexts(ctx context.Context, userID int64, keys []string) (map[string]string, error) {
	stored := make(map[string]string, len(keys))
	version, missing := cs.cached(userID, keys, stored)
	if len(missing) > 0 {
		rows, err := cs.store.GetCredentials(ctx, userID, missing)
		if err != nil {
			return nil, err
		}
		for _, c := range rows {
			stored[c.Key] = c.Value
		}
		cs.remember(version, userID, missing, stored)
	}
	return stored, nil
}

// cached fills stored from the cache and returns the counter it checked
// against and the keys it lacks.
func (cs *CredentialService) cached(userID int64, keys []string, stored map[string]string) (int64, []string) {
	if cs.Changes == nil {
		return 0, keys
	}
	version := cs.Changes.Current().Credentials
	var missing []string
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.cacheVersion != version {
		cs.cacheVersion, cs.cache = version, nil
	}
	for _, k := range keys {
		c, ok := cs.cache[credRef{userID, k}]
		switch {
		case !ok:
			missing = append(missing, k)
		case c.present:
			stored[k] = c.stored
		}
	}
	return version, missing
}

// remember caches the outcome of a read of keys, present or absent, if the
// counter has not moved since it was checked (the read is then at least as
// new as the version it is tagged with).
func (cs *CredentialService) remember(version, userID int64, keys []string, stored map[string]string) {
	if cs.Changes == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.cacheVersion != version {
		return
	}
	if cs.cache == nil || len(cs.cache)+len(keys) > credCacheMax {
		cs.cache = make(map[credRef]cachedValue)
	}
	for _, k := range keys {
		v, ok := stored[k]
		cs.cache[credRef{userID, k}] = cachedValue{stored: v, present: ok}
	}
}

func (cs *CredentialService) forget(userID int64, key string) {
	cs.mu.Lock()
	delete(cs.cache, credRef{userID, key})
	cs.mu.Unlock()
}

// List returns the user's credentials, masked, ordered by key.
func (cs *CredentialService) List(ctx context.Context, userID int64) ([]MaskedCredential, error) {
	rows, err := cs.store.ListCredentials(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]MaskedCredential, 0, len(rows))
	for _, c := range rows {
		v, err := cs.keys.Decrypt(c.UserID, c.Key, c.Value)
		if err != nil {
			return nil, fmt.Errorf("list credential %q of user %d: %w", c.Key, userID, err)
		}
		out = append(out, MaskedCredential{Key: c.Key, Masked: maskSecret(v), KeyID: c.KeyID, UpdateTime: c.UpdateTime})
	}
	return out, nil
}

// Delete removes the user's credential key; store.ErrNotFound if absent.
func (cs *CredentialService) Delete(ctx context.Context, userID int64, key string) error {
	if err := ValidateCredentialKey(key); err != nil {
		return err
	}
	defer cs.forget(userID, key)
	return cs.store.DeleteCredential(ctx, userID, key)
}

// Rotate re-encrypts under the master key every credential stored under
// another key and returns how many it re-encrypted. It is safe to rerun,
// and a value set while it runs is left alone.
func (cs *CredentialService) Rotate(ctx context.Context) (n int, err error) {
	master := cs.keys.MasterKeyID()
	if master == "" {
		return 0, ErrNoMasterKey
	}
	err = cs.store.EachCredential(ctx, func(c *store.Credential) error {
		// The kid inside the value is authoritative; key_id mirrors it.
		if kid, _, err := parseStoredCredential(c.Value); err == nil && kid == master {
			return nil
		}
		plain, err := cs.keys.Decrypt(c.UserID, c.Key, c.Value)
		if err != nil {
			return fmt.Errorf("rotate credential %q of user %d: %w", c.Key, c.UserID, err)
		}
		stored, kid, err := cs.keys.Encrypt(c.UserID, c.Key, plain)
		if err != nil {
			return fmt.Errorf("rotate credential %q of user %d: %w", c.Key, c.UserID, err)
		}
		err = cs.store.UpdateCredentialValue(ctx, c.ID, c.Value, stored, kid)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil // changed or deleted meanwhile: nothing left to rotate
		case err != nil:
			return fmt.Errorf("rotate credential %q of user %d: %w", c.Key, c.UserID, err)
		}
		n++
		return nil
	})
	return n, err
}

// maskSecret shows the last 4 characters of values long enough (12 or
// more) for that to reveal little, and nothing of shorter ones.
func maskSecret(v string) string {
	const shown, minLen = 4, 12
	if utf8.RuneCountInString(v) < minLen {
		return "****"
	}
	r := []rune(v)
	return "****" + string(r[len(r)-shown:])
}
