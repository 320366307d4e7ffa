// Package migrations holds the versioned SQL schema of blindexec, one goose
// directory per dialect. The SQL files are the source of truth for the schema:
// the store never auto-migrates from its models. A change SQL cannot say on
// both dialects is a Go migration the store registers beside these files,
// under a number no file takes: 00013 (store/invisible.go) removes
// invisible characters from existing plugin rows.
package migrations

import "embed"

// MySQL holds mysql/*.sql, portable to MySQL 8 and MariaDB 10.11.
//
//go:embed mysql/*.sql
var MySQL embed.FS

// SQLite holds sqlite/*.sql for the embedded default database.
//
//go:embed sqlite/*.sql
var SQLite embed.FS
