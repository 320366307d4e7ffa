package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Stored credential format, version 1.
//
// A credential value is encrypted with AES-256-GCM (a 12-byte nonce and a
// 16-byte, i.e. 128-bit, authentication tag; in Java "AES/GCM/NoPadding"
// with new GCMParameterSpec(128, nonce)) and stored in
// sys_user_credential.credential_value as the ASCII string
//
//	v1:<kid>:<payload>
//
// where
//
//   - "v1" is the format version;
//   - <kid> is the key id: the first 8 characters of the lower-case hex
//     SHA-256 of the 32 raw key bytes (that is, hex of the digest's first
//     4 bytes). It is also written to sys_user_credential.key_id;
//   - <payload> is standard base64 with padding (RFC 4648 §4; Java
//     Base64.getEncoder()) of nonce || ciphertext || tag: the 12 nonce bytes,
//     then the ciphertext, as long as the plaintext, then the 16 tag bytes
//     (Java's Cipher.doFinal returns ciphertext || tag already);
//   - the plaintext is the credential value's UTF-8 bytes;
//   - the nonce is 12 fresh random bytes from a cryptographic random source
//     for every encryption, never reused;
//   - the additional authenticated data (AAD) is the UTF-8 bytes of
//     "<user_id>:<credential_key>": the row's user_id in decimal (no sign for
//     positive ids, no leading zeros), a colon, then the row's
//     credential_key, e.g. "42:openai_api_key". A value copied to another
//     user or key therefore fails to decrypt.
//
// The master key is BLINDEXEC_MASTER_KEY: standard base64 of exactly 32
// random bytes (e.g. `openssl rand -base64 32`). Keys being retired are
// listed, comma-separated and in the same encoding, in
// BLINDEXEC_MASTER_KEYS_OLD: they still decrypt, and `cred rotate`
// re-encrypts every value under the master key. A reader picks the key
// whose kid matches the stored kid.
const (
	vaultVersion  = "v1"
	vaultKeyBytes = 32
	vaultNonce    = 12
	vaultTag      = 16
)

// ErrNoMasterKey is returned when a credential is written or read but no
// master key is configured. The engine still starts without one.
var ErrNoMasterKey = errors.New("BLINDEXEC_MASTER_KEY is not set: credentials cannot be stored or read")

// Keyring holds the vault's keys: the master key, which encrypts, and older
// keys, which only decrypt. The zero Keyring and a nil *Keyring hold no
// keys. A Keyring is safe for concurrent use.
type Keyring struct {
	master *vaultKey
	byID   map[string]*vaultKey
}

type vaultKey struct {
	id   string
	aead cipher.AEAD
	// digest keys the digests of operator settings replicas compare
	// (SettingDigest): derived from the key, never the key itself.
	digest []byte
}

// ParseKeyring builds a Keyring from the values of BLINDEXEC_MASTER_KEY and
// BLINDEXEC_MASTER_KEYS_OLD. An empty master yields a Keyring without keys
// (every Encrypt and Decrypt then fails with ErrNoMasterKey); a malformed
// key is an error, so that a misconfiguration stops the engine at start.
func ParseKeyring(masterB64, oldB64CSV string) (*Keyring, error) {
	masterB64, oldB64CSV = strings.TrimSpace(masterB64), strings.TrimSpace(oldB64CSV)
	if masterB64 == "" {
		if oldB64CSV != "" {
			return nil, errors.New("BLINDEXEC_MASTER_KEYS_OLD is set but BLINDEXEC_MASTER_KEY is not")
		}
		return &Keyring{}, nil
	}
	master, err := newVaultKey(masterB64)
	if err != nil {
		return nil, fmt.Errorf("BLINDEXEC_MASTER_KEY: %w", err)
	}
	kr := &Keyring{master: master, byID: map[string]*vaultKey{master.id: master}}
	if oldB64CSV == "" {
		return kr, nil
	}
	for i, s := range strings.Split(oldB64CSV, ",") {
		k, err := newVaultKey(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("BLINDEXEC_MASTER_KEYS_OLD entry %d: %w", i+1, err)
		}
		if _, dup := kr.byID[k.id]; !dup {
			kr.byID[k.id] = k
		}
	}
	return kr, nil
}

func newVaultKey(b64 string) (*vaultKey, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("not standard base64: %w", err)
	}
	if len(raw) != vaultKeyBytes {
		return nil, fmt.Errorf("decodes to %d bytes, want %d", len(raw), vaultKeyBytes)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, raw)
	mac.Write([]byte("blindexec operator settings digest v1"))
	return &vaultKey{id: vaultKeyID(raw), aead: aead, digest: mac.Sum(nil)}, nil
}

// vaultKeyID is the kid of raw key bytes: 8 hex digits of their SHA-256.
func vaultKeyID(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:4])
}

// MasterKeyID is the kid new values are encrypted under, or "" when no
// master key is configured.
func (kr *Keyring) MasterKeyID() string {
	if kr == nil || kr.master == nil {
		return ""
	}
	return kr.master.id
}

// Encrypt seals plaintext for the credential (userID, key) under the master
// key and returns the stored string and its kid.
func (kr *Keyring) Encrypt(userID int64, key, plaintext string) (stored, kid string, err error) {
	if kr.MasterKeyID() == "" {
		return "", "", ErrNoMasterKey
	}
	k := kr.master
	nonce := make([]byte, vaultNonce, vaultNonce+len(plaintext)+vaultTag)
	rand.Read(nonce) // never fails (crypto/rand panics on a broken source)
	sealed := k.aead.Seal(nonce, nonce, []byte(plaintext), vaultAAD(userID, key))
	return vaultVersion + ":" + k.id + ":" + base64.StdEncoding.EncodeToString(sealed), k.id, nil
}

// Decrypt opens the stored string of the credential (userID, key) with the
// key its kid names. Errors name the kid, never the value.
func (kr *Keyring) Decrypt(userID int64, key, stored string) (string, error) {
	if kr.MasterKeyID() == "" {
		return "", ErrNoMasterKey
	}
	kid, payload, err := parseStoredCredential(stored)
	if err != nil {
		return "", err
	}
	k, ok := kr.byID[kid]
	if !ok {
		return "", fmt.Errorf("credential encrypted under unknown key id %s: add that key to BLINDEXEC_MASTER_KEYS_OLD", kid)
	}
	// One buffer for the sealed bytes and the AAD, opened in place: a
	// call's credentials are decrypted on every call, and this is one
	// allocation where four were (issue 47 point 4). Cleared after: the
	// plaintext lives on only in the string returned.
	buf := make([]byte, base64.StdEncoding.DecodedLen(len(payload))+vaultAADMax(key))
	n, err := base64.StdEncoding.Decode(buf, []byte(payload))
	if err != nil || n < vaultNonce+vaultTag {
		return "", fmt.Errorf("credential under key id %s: malformed payload", kid)
	}
	sealed, aad := buf[:n], appendVaultAAD(buf[n:n], userID, key)
	defer clear(buf)
	plain, err := k.aead.Open(sealed[vaultNonce:vaultNonce], sealed[:vaultNonce], sealed[vaultNonce:], aad)
	if err != nil {
		return "", fmt.Errorf("credential under key id %s does not authenticate: wrong key, tampered, or copied from another user or key", kid)
	}
	return string(plain), nil
}

// StoredKeyID is the kid a stored value was sealed under, or "" when it
// is not in the vault's format: rotations skip what the master key sealed.
func StoredKeyID(stored string) string {
	kid, _, err := parseStoredCredential(stored)
	if err != nil {
		return ""
	}
	return kid
}

// parseStoredCredential splits "v1:<kid>:<payload>".
func parseStoredCredential(stored string) (kid, payload string, err error) {
	version, rest, ok := strings.Cut(stored, ":")
	if !ok || version != vaultVersion {
		return "", "", fmt.Errorf("stored credential is not in format %s", vaultVersion)
	}
	kid, payload, ok = strings.Cut(rest, ":")
	// Checked before any use in a message: a corrupt row must not leak text.
	var id [4]byte // decoded into only to check it: no allocation
	if !ok || len(kid) != len(id)*2 || func() bool { _, err := hex.Decode(id[:], []byte(kid)); return err != nil }() {
		return "", "", errors.New("stored credential has a malformed key id")
	}
	return kid, payload, nil
}

// vaultAAD binds a ciphertext to its row: "<user_id>:<credential_key>".
func vaultAAD(userID int64, key string) []byte {
	return appendVaultAAD(make([]byte, 0, vaultAADMax(key)), userID, key)
}

// appendVaultAAD appends vaultAAD's bytes to b.
func appendVaultAAD(b []byte, userID int64, key string) []byte {
	b = strconv.AppendInt(b, userID, 10)
	return append(append(b, ':'), key...)
}

// vaultAADMax bounds the length of vaultAAD(userID, key): an int64 in
// decimal is at most 20 bytes (its sign included), then the colon, the key.
func vaultAADMax(key string) int { return 20 + 1 + len(key) }
