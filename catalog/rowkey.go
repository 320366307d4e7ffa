package catalog

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/blindexec/blindexec/store"
)

// rowKey is a digest of every column PluginFromRow reads: two rows of one
// key convert to the same plugin, so the protocol's decision on one
// (plugins.Validator.Check) is the decision on the other. A reload
// decides again only on rows whose key it did not hold.
type rowKey [sha256.Size]byte

// keyOf digests r's columns, each length-prefixed (a nil column apart
// from an empty one) so that neighbouring columns cannot run together.
// buf is scratch space, returned for the next row. TestRowKeyCoversEveryColumn
// fails when a column PluginFromRow reads is not in it.
func keyOf(r *store.Plugin, buf []byte) (rowKey, []byte) {
	buf = buf[:0]
	col := func(s []byte) { buf = binary.AppendUvarint(buf, uint64(len(s))+1); buf = append(buf, s...) }
	str := func(s string) { buf = binary.AppendUvarint(buf, uint64(len(s))+1); buf = append(buf, s...) }
	optional := func(s *string) {
		if s == nil {
			buf = append(buf, 0)
			return
		}
		str(*s)
	}
	buf = binary.AppendVarint(buf, r.ID)
	if r.SourceID == nil {
		buf = append(buf, 0)
	} else {
		buf = binary.AppendVarint(append(buf, 1), *r.SourceID)
	}
	str(r.Name)
	str(r.Title)
	str(r.Description)
	str(r.IconURL)
	col(r.ParameterSchema)
	col(r.ExecutionConfig)
	str(r.Status)
	col(r.RequiredCredentials)
	optional(r.Consequential)
	optional(r.Perms)
	str(r.Remark)
	return sha256.Sum256(buf), buf
}
