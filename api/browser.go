package api

import (
	"encoding/json"
	"time"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/store"
)

// What a console session receives is shown in a browser, so it carries no
// credential value at all, not even masked (docs/security.md): stored
// credentials come as key names and update times, MCP servers' static
// headers (which may carry secrets) as names with empty values, their
// URLs without a credential in the query (as an import's location).

// keyOnly is a stored credential as a browser sees it.
type keyOnly struct {
	Key        string    `json:"key"`
	UpdateTime time.Time `json:"update_time"`
}

func keysOnly(list []auth.MaskedCredential) []keyOnly {
	out := make([]keyOnly, len(list))
	for i, c := range list {
		out[i] = keyOnly{Key: c.Key, UpdateTime: c.UpdateTime}
	}
	return out
}

// serverForBrowser is an MCP server as a browser sees it: its headers'
// names only, its URL as redact.Location shows an import's (a hosted
// gateway's ?api_key=… written "…").
func serverForBrowser(row *store.MCPServer) {
	row.Headers = headerNamesOnly(row.Headers)
	row.URL = redact.Location(row.URL)
}

// headerNamesOnly keeps the names of the headers and drops their values;
// headers it cannot read are dropped whole.
func headerNamesOnly(h store.JSON) store.JSON {
	if len(h) == 0 {
		return h
	}
	var m map[string]string
	if json.Unmarshal(h, &m) != nil {
		return nil
	}
	for k := range m {
		m[k] = ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}
