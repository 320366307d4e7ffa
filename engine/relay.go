package engine

import (
	"encoding/json"

	"github.com/blindexec/blindexec/auth"
)

// A Relay is an upstream's result that a client of the upstream's own
// protocol takes whole — an MCP tool's content blocks and structured
// content, for an MCP client of /mcp (issue 48 point 1) — beside the
// form the model reads. The executor masks it in complete, the one place
// a call's result is made, so a relay is no second path around masking.
type Relay interface {
	// Mask returns the result with every field that can carry a
	// credential masked by m — text, binary data decoded and encoded
	// again — as the client gets it (whole), and the JSON the model and
	// /v1/execute read (model: binary data described, not carried).
	Mask(m *auth.Masker) (whole, model json.RawMessage)
}
