package importer

import (
	"fmt"

	"github.com/blindexec/blindexec/store"
)

// maxStoredDepth is the deepest nesting MariaDB's JSON columns take: their
// JSON_VALID check refuses a document nested 32 levels or more (MySQL's
// limit is 100). Microsoft Graph's deepest parameter schemas are 57 deep.
const maxStoredDepth = 31

// storable says why the store cannot hold row, in words naming the column,
// before it is written (a dry run included) rather than as the
// database's error after: nil on SQLite, which has no such limit.
func storable(dialect string, row *store.Plugin) error {
	if dialect != store.DialectMySQL {
		return nil
	}
	for _, c := range []struct {
		what string
		doc  []byte
	}{
		{"parameter schema", row.ParameterSchema},
		{"execution config", row.ExecutionConfig},
		{"required credentials", row.RequiredCredentials},
	} {
		if d := jsonDepth(c.doc); d > maxStoredDepth {
			return fmt.Errorf("its %s nests %d levels deep, and MariaDB's JSON columns hold at most %d; this engine's store is MariaDB or MySQL (on SQLite it imports)", c.what, d, maxStoredDepth)
		}
	}
	return nil
}

// notStorable is storable's error where an import reports it as the
// tool's failure rather than its own.
type notStorable struct{ error }

func (e notStorable) Unwrap() error { return e.error }

// jsonDepth is the deepest nesting of objects and arrays in the JSON doc
// (1 for {}), brackets inside strings not counted.
func jsonDepth(doc []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(doc); i++ {
		switch doc[i] {
		case '"':
			for i++; i < len(doc) && doc[i] != '"'; i++ {
				if doc[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}
