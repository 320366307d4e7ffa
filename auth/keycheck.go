package auth

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/store"
)

// KeyCheckStore is what CheckKeys needs; *store.Store implements it.
type KeyCheckStore interface {
	VaultKeys(ctx context.Context) ([]store.VaultKey, error)
	AddVaultKey(ctx context.Context, k *store.VaultKey, first bool) (bool, error)
	CredentialKeyIDs(ctx context.Context) (map[string]int, error)
}

// The key check is this text sealed as the credential keyCheckKey of user
// 0, in the stored credentials' format: whoever holds the key can open it,
// and the kid alone (32 bits of a hash) is not trusted to prove the key.
const (
	keyCheckKey   = "blindexec.key_check"
	keyCheckPlain = "blindexec vault key check v1"
)

// KeyMismatchError is a configured keyring that cannot decrypt what the
// database holds. The engine refuses to start with it rather than fail on
// every credential read.
type KeyMismatchError struct {
	Master string // the configured master key's kid
	// Known are the kids of the database's key checks, when none of them
	// is in the keyring.
	Known []string
	// Unreadable counts the stored credentials per kid the keyring lacks.
	Unreadable map[string]int
	// Forged is a kid whose check the same-kid key could not open.
	Forged string
}

func (e *KeyMismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "BLINDEXEC_MASTER_KEY (key id %s) cannot decrypt this database's credentials", e.Master)
	switch {
	case e.Forged != "":
		fmt.Fprintf(&b, ": a key with id %s is configured but does not open the database's check for that id (a different key)", e.Forged)
	case len(e.Unreadable) > 0:
		var parts []string
		for _, kid := range slices.Sorted(maps.Keys(e.Unreadable)) {
			parts = append(parts, fmt.Sprintf("%d under key id %s", e.Unreadable[kid], kid))
		}
		fmt.Fprintf(&b, ": %s, which neither it nor BLINDEXEC_MASTER_KEYS_OLD holds", strings.Join(parts, ", "))
	default:
		fmt.Fprintf(&b, ": the database was set up with key id %s", strings.Join(e.Known, ", "))
	}
	b.WriteString("; configure the key it was set up with (or add it to BLINDEXEC_MASTER_KEYS_OLD and run `blindexec cred rotate` to move to the new one)")
	return b.String()
}

// CheckKeys verifies that kr can decrypt what the database holds: every
// key check of a key in kr opens, at least one check (when there are any)
// is of a key in kr, and every stored credential's kid is in kr. With
// record set, a master key that passes and has no check yet gets one, so
// that the next start with another key is refused. Without a master key
// there is nothing to check: credential use then fails with
// ErrNoMasterKey.
func CheckKeys(ctx context.Context, st KeyCheckStore, kr *Keyring, record bool) error {
	master := kr.MasterKeyID()
	if master == "" {
		return nil
	}
	checks, err := st.VaultKeys(ctx)
	if err != nil {
		return err
	}
	matched, masterChecked := false, false
	var known []string
	for _, c := range checks {
		known = append(known, c.KeyID)
		if _, ok := kr.byID[c.KeyID]; !ok {
			continue
		}
		if plain, err := kr.Decrypt(0, keyCheckKey, c.CheckValue); err != nil || plain != keyCheckPlain {
			return &KeyMismatchError{Master: master, Forged: c.KeyID}
		}
		matched = true
		masterChecked = masterChecked || c.KeyID == master
	}
	if len(checks) > 0 && !matched {
		return &KeyMismatchError{Master: master, Known: known}
	}
	counts, err := st.CredentialKeyIDs(ctx)
	if err != nil {
		return err
	}
	unreadable := map[string]int{}
	for kid, n := range counts {
		if _, ok := kr.byID[kid]; !ok {
			unreadable[kid] = n
		}
	}
	if len(unreadable) > 0 {
		return &KeyMismatchError{Master: master, Unreadable: unreadable}
	}
	if record && !masterChecked {
		sealed, kid, err := kr.Encrypt(0, keyCheckKey, keyCheckPlain)
		if err != nil {
			return err
		}
		// A new database's first check only into an empty table: another
		// key starting at once would otherwise record its own too, and each
		// would pass on its own from then on.
		first := len(checks) == 0
		added, err := st.AddVaultKey(ctx, &store.VaultKey{KeyID: kid, CheckValue: sealed}, first)
		if err != nil {
			return err
		}
		if first && !added {
			return CheckKeys(ctx, st, kr, record) // against the check recorded meanwhile
		}
	}
	return nil
}
