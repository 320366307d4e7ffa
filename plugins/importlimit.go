package plugins

import "fmt"

// DefaultImportMaxBytes bounds what one import may make in all (an
// OpenAPI document's plugins, an MCP server's) and what an MCP server's
// tools/list may hold: a document or a server is outside input, and what
// it makes is written to the catalog whole. See plugins/openapi's
// DefaultMaxBytes for how the figure was chosen.
const DefaultImportMaxBytes = 64 << 20

// EnvImportMaxMB is the setting of the import limit, in MiB, under serve
// and the CLI.
const EnvImportMaxMB = "BLINDEXEC_IMPORT_MAX_MB"

// ImportLimitText says an import limit of max bytes as a refusal names
// it: in MiB when whole, else in bytes, with its setting.
func ImportLimitText(max int) string {
	if max%(1<<20) != 0 {
		return fmt.Sprintf("%d bytes (%s)", max, EnvImportMaxMB)
	}
	return fmt.Sprintf("%d MiB (%s)", max>>20, EnvImportMaxMB)
}
