package auth_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/auth"
)

// newKeyB64 returns a fresh master key as BLINDEXEC_MASTER_KEY holds it.
func newKeyB64(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// kidOf computes the key id independently of the package under test.
func kidOf(t *testing.T, keyB64 string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(keyB64)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:8]
}

func mustKeyring(t *testing.T, master, old string) *auth.Keyring {
	t.Helper()
	kr, err := auth.ParseKeyring(master, old)
	if err != nil {
		t.Fatalf("ParseKeyring: %v", err)
	}
	return kr
}

func TestParseKeyring(t *testing.T) {
	k1, k2 := newKeyB64(t), newKeyB64(t)
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	tests := []struct {
		name       string
		master     string
		old        string
		wantErr    string // empty: must parse
		wantMaster string
	}{
		{"no key at all", "", "", "", ""},
		{"master only", k1, "", "", kidOf(t, k1)},
		{"master with spaces", " " + k1 + "\n", "", "", kidOf(t, k1)},
		{"master and old keys", k2, k1 + ", " + k1, "", kidOf(t, k2)},
		{"master not base64", "not base64!", "", "BLINDEXEC_MASTER_KEY: not standard base64", ""},
		{"master too short", short, "", "BLINDEXEC_MASTER_KEY: decodes to 16 bytes, want 32", ""},
		{"bad old key", k1, k2 + ",xx", "BLINDEXEC_MASTER_KEYS_OLD entry 2", ""},
		{"old without master", "", k1, "BLINDEXEC_MASTER_KEY is not", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kr, err := auth.ParseKeyring(tt.master, tt.old)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseKeyring error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKeyring: %v", err)
			}
			if got := kr.MasterKeyID(); got != tt.wantMaster {
				t.Errorf("MasterKeyID() = %q, want %q", got, tt.wantMaster)
			}
		})
	}
}

var storedFormat = regexp.MustCompile(`^v1:[0-9a-f]{8}:[A-Za-z0-9+/]+={0,2}$`)

func TestVaultRoundTrip(t *testing.T) {
	keyB64 := newKeyB64(t)
	kr := mustKeyring(t, keyB64, "")
	for _, plain := range []string{"", "x", "sk-live-0123456789abcdef", "密码 with ünïcode", strings.Repeat("long", 1000)} {
		stored, kid, err := kr.Encrypt(42, "openai_api_key", plain)
		if err != nil {
			t.Fatalf("Encrypt: %v", err)
		}
		if kid != kidOf(t, keyB64) || !strings.HasPrefix(stored, "v1:"+kid+":") || !storedFormat.MatchString(stored) {
			t.Errorf("stored %q (kid %q) is not v1:%s:<base64>", stored, kid, kidOf(t, keyB64))
		}
		payload, _ := base64.StdEncoding.DecodeString(stored[len("v1:xxxxxxxx:"):])
		if want := 12 + len(plain) + 16; len(payload) != want {
			t.Errorf("payload is %d bytes, want nonce+ciphertext+tag = %d", len(payload), want)
		}
		got, err := kr.Decrypt(42, "openai_api_key", stored)
		if err != nil || got != plain {
			t.Errorf("Decrypt = %q, %v; want %q", got, err, plain)
		}
		again, _, _ := kr.Encrypt(42, "openai_api_key", plain)
		if again == stored {
			t.Error("two encryptions are identical: nonce reused")
		}
	}
}

func TestVaultDecryptFailures(t *testing.T) {
	const plain = "super-secret-value"
	kr := mustKeyring(t, newKeyB64(t), "")
	stored, kid, err := kr.Encrypt(7, "api_key", plain)
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := mustKeyring(t, newKeyB64(t), "").Encrypt(7, "api_key", plain)
	prefix, payload := "v1:"+kid+":", stored[len("v1:"+kid+":"):]
	flip := func(i int) string { // flips one bit of payload byte i (negative: from the end)
		b, _ := base64.StdEncoding.DecodeString(payload)
		if i < 0 {
			i += len(b)
		}
		b[i] ^= 0x01
		return prefix + base64.StdEncoding.EncodeToString(b)
	}
	tests := []struct {
		name    string
		userID  int64
		key     string
		stored  string
		wantErr string
	}{
		{"copied to another user", 8, "api_key", stored, "does not authenticate"},
		{"copied to another key", 7, "other_key", stored, "does not authenticate"},
		{"user id and key boundary", 71, "api_key", stored, "does not authenticate"},
		{"tampered nonce", 7, "api_key", flip(0), "does not authenticate"},
		{"tampered ciphertext", 7, "api_key", flip(12), "does not authenticate"},
		{"tampered tag", 7, "api_key", flip(-1), "does not authenticate"},
		{"truncated", 7, "api_key", prefix + base64.StdEncoding.EncodeToString([]byte("short")), "malformed payload"},
		{"not base64", 7, "api_key", prefix + "!!!", "malformed payload"},
		{"unknown key", 7, "api_key", other, "unknown key id"},
		{"other version", 7, "api_key", "v2" + stored[2:], "not in format v1"},
		{"plaintext in the column", 7, "api_key", plain, "not in format v1"},
		{"malformed kid", 7, "api_key", "v1:" + plain + ":" + payload, "malformed key id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kr.Decrypt(tt.userID, tt.key, tt.stored)
			if err == nil {
				t.Fatalf("Decrypt succeeded with %q", got)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Decrypt error %q does not contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), plain) || strings.Contains(err.Error(), payload) {
				t.Errorf("Decrypt error reveals the value: %v", err)
			}
		})
	}
}

func TestVaultNoMasterKey(t *testing.T) {
	stored, _, err := mustKeyring(t, newKeyB64(t), "").Encrypt(1, "k", "v")
	if err != nil {
		t.Fatal(err)
	}
	for _, kr := range []*auth.Keyring{mustKeyring(t, "", ""), nil} {
		if _, _, err := kr.Encrypt(1, "k", "v"); !errors.Is(err, auth.ErrNoMasterKey) {
			t.Errorf("Encrypt without master key: %v, want ErrNoMasterKey", err)
		}
		if _, err := kr.Decrypt(1, "k", stored); !errors.Is(err, auth.ErrNoMasterKey) {
			t.Errorf("Decrypt without master key: %v, want ErrNoMasterKey", err)
		}
	}
	if !strings.Contains(auth.ErrNoMasterKey.Error(), "BLINDEXEC_MASTER_KEY is not set") {
		t.Errorf("ErrNoMasterKey = %q", auth.ErrNoMasterKey)
	}
}

// TestDecryptAllocs holds a decryption, made for every stored credential
// of every call, to its two allocations: the working buffer (cleared
// after) and the value returned (issue 47 point 4; it was five).
func TestDecryptAllocs(t *testing.T) {
	kr := mustKeyring(t, newKeyB64(t), "")
	stored, _, err := kr.Encrypt(42, "openai_api_key", "sk-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if v, err := kr.Decrypt(42, "openai_api_key", stored); err != nil || v != "sk-0123456789abcdef" {
			t.Fatalf("Decrypt = %q, %v", v, err)
		}
	})
	if allocs > 2 {
		t.Errorf("Decrypt makes %.0f allocations, want at most 2", allocs)
	}
}

func BenchmarkDecrypt(b *testing.B) {
	kr, err := auth.ParseKeyring(base64.StdEncoding.EncodeToString(make([]byte, 32)), "")
	if err != nil {
		b.Fatal(err)
	}
	stored, _, err := kr.Encrypt(42, "openai_api_key", "sk-0123456789abcdef")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		kr.Decrypt(42, "openai_api_key", stored)
	}
}
