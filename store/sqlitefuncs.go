package store

import (
	"database/sql/driver"
	"fmt"
	"hash/crc32"

	sqlitedrv "github.com/glebarez/go-sqlite"
)

// SQLite has no CRC32, which the digest of RuoYi's grants' tables
// (access.Fingerprinter) sums; every SQLite connection of the process
// has MySQL's, registered with the driver before any is opened.
func init() {
	sqlitedrv.MustRegisterDeterministicScalarFunction("crc32", 1, crc32Func)
}

// crc32Func is MySQL's CRC32(expr): the IEEE checksum of expr's text, an
// unsigned 32-bit number (in an int64: its sums stay exact); NULL of NULL.
func crc32Func(_ *sqlitedrv.FunctionContext, args []driver.Value) (driver.Value, error) {
	var b []byte
	switch v := args[0].(type) {
	case nil:
		return nil, nil
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default: // a number: its text, as MySQL converts it
		b = fmt.Append(nil, v)
	}
	return int64(crc32.ChecksumIEEE(b)), nil
}
