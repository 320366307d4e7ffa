package importer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/store"
)

// An OpenAPI source fetched from a URL with userinfo
// (https://user:token@host/spec.json, which Go's client sends as basic
// auth) or with a credential in its query (?access_token=, ?sig=, …) is
// stored and shown at that URL without them (redact.Location);
// the URL itself is kept sealed under the master key, as a credential
// is, so that a sync from the location as shown fetches the protected
// document all the same. A URL whose redaction hides nothing is not
// sealed: the location is the URL.

// ErrNoSealedURL is a sync from a location shown redacted for which no
// URL is kept: the caller sends the URL whole.
var ErrNoSealedURL = errors.New("the URL's userinfo or query credential is shown redacted (…) and no URL with it is kept for that source: send the URL whole")

// sealedURLKey binds a sealed URL to its source, as a credential's AAD
// binds it to its user and key.
func sealedURLKey(id int64) string { return "import_source/" + strconv.FormatInt(id, 10) + "/url" }

// FetchURL is the URL a sync of rawURL fetches: rawURL itself, or, when
// it is the redacted one a location shows (its userinfo or a query
// credential written "…"), the URL kept for the source of that location
// (or of name, the source the import names).
func FetchURL(ctx context.Context, st *store.Store, keys *auth.Keyring, rawURL, name string) (string, error) {
	if !redact.Hides(rawURL) || redact.Location(rawURL) != rawURL {
		return rawURL, nil // none, or given whole
	}
	src, err := st.FindImportSource(ctx, store.SourceOpenAPI, cmp.Or(name, rawURL))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", ErrNoSealedURL
	case err != nil:
		return "", err
	case src.SealedURL == nil:
		return "", ErrNoSealedURL
	}
	kept, err := keys.Decrypt(0, sealedURLKey(src.ID), *src.SealedURL)
	if err != nil {
		return "", fmt.Errorf("the URL kept for import source %d: %w", src.ID, err)
	}
	if redact.Location(kept) != rawURL {
		return "", ErrNoSealedURL // kept for another URL (a source named, not located)
	}
	return kept, nil
}

// KeepURL seals the URL source id was synced from, when its redaction
// hides a part of it and a master key is set (without one, a sync sends the URL whole each
// time, as before).
func KeepURL(ctx context.Context, st *store.Store, keys *auth.Keyring, id int64, fetched string) error {
	if id == 0 || !redact.Hides(fetched) || keys.MasterKeyID() == "" {
		return nil
	}
	sealed, _, err := keys.Encrypt(0, sealedURLKey(id), fetched)
	if err != nil {
		return err
	}
	return st.SetImportSourceSealedURL(ctx, id, sealed)
}

// RotateURLs re-encrypts under the master key every source's kept URL
// sealed under another key (`cred rotate`, beside the credentials), and
// returns how many it re-encrypted: once the old key is dropped, a URL
// left under it could no longer be opened for a sync.
func RotateURLs(ctx context.Context, st *store.Store, keys *auth.Keyring) (int, error) {
	master := keys.MasterKeyID()
	if master == "" {
		return 0, auth.ErrNoMasterKey
	}
	kept, err := st.SealedImportURLs(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range kept {
		if auth.StoredKeyID(k.Sealed) == master {
			continue
		}
		plain, err := keys.Decrypt(0, sealedURLKey(k.ID), k.Sealed)
		if err != nil {
			return n, fmt.Errorf("rotate the URL kept for import source %d: %w", k.ID, err)
		}
		sealed, _, err := keys.Encrypt(0, sealedURLKey(k.ID), plain)
		if err != nil {
			return n, fmt.Errorf("rotate the URL kept for import source %d: %w", k.ID, err)
		}
		switch err := st.ReplaceImportSourceSealedURL(ctx, k.ID, k.Sealed, sealed); {
		case errors.Is(err, store.ErrNotFound):
			continue // sealed anew by a sync meanwhile, or removed
		case err != nil:
			return n, err
		}
		n++
	}
	return n, nil
}

// SealLocations moves every OpenAPI source still stored at a URL with its
// userinfo or a query's or path parameter's credential (imported before
// migration 00031, 00034 or 00035, or by an older replica since)
// to the location shown, the URL kept sealed as a sync would keep it:
// the password leaves the database's location column (and its dumps) at
// the first start of serve, not at each source's next sync, and a sync
// from the location as shown works at once. It returns how many it moved.
// Without a master key nothing is sealed.
func SealLocations(ctx context.Context, st *store.Store, keys *auth.Keyring) (int, error) {
	if keys.MasterKeyID() == "" {
		return 0, nil
	}
	srcs, err := st.ImportSourcesToSeal(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, src := range srcs {
		shown := redact.Location(src.Location)
		if !redact.Hides(src.Location) || shown == src.Location {
			continue // none, or shown already
		}
		sealed, _, err := keys.Encrypt(0, sealedURLKey(src.ID), src.Location)
		if err != nil {
			return n, err
		}
		switch err := st.SealImportSourceLocation(ctx, src.ID, src.Location, shown, sealed); {
		case errors.Is(err, store.ErrNotFound):
			continue // synced or removed meanwhile
		case err != nil:
			return n, err
		}
		n++
	}
	return n, nil
}
