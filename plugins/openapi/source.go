package openapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
	"strings"

	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins/schema"
)

// What an importer needs of a document to sync its plugins with the
// catalog: the source's identity, the fingerprint of the options, each
// plugin's content hash, every operation key, and the qualified name of
// a plugin whose name another source holds.

// SourceName is the identity of an import source: Options.Source, else
// the location, else (a document given inline or on stdin) "inline:" and
// the document's title, or its sha256 when it has none; so that two
// inline documents are two sources, and a new version of one is the same.
// A URL's userinfo and its query credentials are not part of it
// (redact.Location): stored and shown, the location never holds
// a password or a token.
func SourceName(location string, doc *Document, opts Options) string {
	if opts.Source != "" {
		return opts.Source
	}
	if location != "" && location != "-" {
		return redact.Location(location)
	}
	if t := strings.TrimSpace(doc.Title); t != "" {
		return "inline:" + t
	}
	return "inline:sha256:" + doc.SHA256
}

// Fingerprint is the JSON of the options that shape a conversion, and of
// the converter's revision, stored with the source.
func (o Options) Fingerprint() (string, error) {
	// Stored, and shown with the source: no URL's userinfo (review78: a
	// base_url given with one, which no plugin takes, kept its password).
	o.SourceURL, o.BaseURL = redact.Location(o.SourceURL), redact.Location(o.BaseURL)
	b, err := marshal(struct {
		Options
		Revision int `json:"conversion_revision"`
	}{o, conversionRevision})
	return string(b), err
}

// conversionRevision counts the changes to what the same document converts
// to; a source synced by an earlier one is converted again, its changed
// plugins reported (2: descriptions in plain text, a title for every
// operation, issue 35; 3: response words, issue 49).
const conversionRevision = 3

// ContentHash is the hex sha256 of the plugin's JSON (as marshal writes
// it), then of its response words' when it has any. The JSON goes straight into the hash: a copy of a large import's
// every schema, made only to be hashed, was most of its write loop's
// garbage.
func ContentHash(op Operation) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(lineHasher{h})
	enc.SetEscapeHTML(false)
	if err := enc.Encode(op.Plugin); err != nil {
		return "", fmt.Errorf("encode plugin: %w", err)
	}
	// not in the plugin's document, but stored with it: a sync that
	// changes only them writes them (a plugin without any hashes as before)
	if words := op.Plugin.ResponseWords; len(words) > 0 {
		if err := enc.Encode(words); err != nil {
			return "", fmt.Errorf("encode response words: %w", err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// lineHasher hashes what json.Encoder writes (one Write a value) without
// the newline it ends with, as marshal drops it.
type lineHasher struct{ h hash.Hash }

func (l lineHasher) Write(b []byte) (int, error) {
	l.h.Write(bytes.TrimSuffix(b, []byte("\n")))
	return len(b), nil
}

// HasOperation reports whether the document has the operation key
// ("METHOD /path"), selected or not: a sync asks it of each plugin it
// holds, rather than listing every operation of a document whose path
// items may $ref one another (TestSharedPathItemsListed).
func HasOperation(doc *Document, key string) bool {
	m, p, ok := strings.Cut(key, " ")
	paths, _ := doc.Raw["paths"].(map[string]any)
	if !ok || !strings.HasPrefix(p, "/") || paths[p] == nil {
		return false
	}
	m = strings.ToLower(m)
	v, err := schema.OpenAPILookup(doc.Raw).Deref(paths[p])
	item, _ := v.(map[string]any)
	_, isOp := item[m].(map[string]any)
	return err == nil && isOp && slices.Contains(methods, m) && key == strings.ToUpper(m)+" "+p
}

// QualifiedName is the name of a new plugin whose name another source's
// plugin holds: the document's title before it, cut with a hash of key
// to the name limit; "" when the title gives no qualifier.
func QualifiedName(doc *Document, name, key string) string {
	qualifier := sanitize(strings.ToLower(doc.Title), "")
	if qualifier == "" {
		return ""
	}
	name = qualifier + "_" + name
	if len(name) > maxName {
		name = withHash(name, key, "")
	}
	return name
}
