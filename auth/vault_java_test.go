package auth_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestVaultJavaInterop proves that the documented format is what Go writes
// and reads, by running the Java reference in testdata/ in both directions.
func TestVaultJavaInterop(t *testing.T) {
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("javac not on PATH: install a JDK to run the Java interop test")
	}
	classes := t.TempDir()
	if out, err := exec.Command("javac", "-d", classes, filepath.Join("testdata", "VaultInterop.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	java := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command("java", append([]string{"-cp", classes, "VaultInterop"}, args...)...)
		cmd.Stdin = bytes.NewBufferString(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Logf("java %v: %s", args[0], stderr.String())
		}
		return string(out), err
	}

	keyB64 := newKeyB64(t)
	kr := mustKeyring(t, keyB64, "")
	const userID, credKey, plain = int64(1234567890123), "openai.api-key_2", "sk-ünïcødé-秘密-0123456789"
	user := strconv.FormatInt(userID, 10)

	t.Run("Go writes, Java reads", func(t *testing.T) {
		stored, _, err := kr.Encrypt(userID, credKey, plain)
		if err != nil {
			t.Fatal(err)
		}
		got, err := java("", "decrypt", keyB64, user, credKey, stored)
		if err != nil || got != plain {
			t.Fatalf("Java decrypt = %q, %v; want %q", got, err, plain)
		}
		// Java must apply the same AAD: another user's row does not open.
		if got, err := java("", "decrypt", keyB64, "1234567890124", credKey, stored); err == nil {
			t.Errorf("Java decrypted a value copied to another user: %q", got)
		}
	})

	t.Run("Java writes, Go reads", func(t *testing.T) {
		stored, err := java(plain, "encrypt", keyB64, user, credKey)
		if err != nil {
			t.Fatalf("Java encrypt: %v", err)
		}
		if !storedFormat.MatchString(stored) {
			t.Fatalf("Java wrote %q, not the v1 format", stored)
		}
		got, err := kr.Decrypt(userID, credKey, stored)
		if err != nil || got != plain {
			t.Fatalf("Go decrypt of Java's value = %q, %v; want %q", got, err, plain)
		}
		if _, err := kr.Decrypt(userID, "other", stored); err == nil {
			t.Error("Go decrypted Java's value under another credential key")
		}
	})
}
