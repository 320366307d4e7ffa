package plugins

import "strings"

// IsConsequential reports whether a call of the plugin changes the world
// on someone's behalf and so waits for a person under the default
// confirmation policy: the plugin's own setting (an administrator's
// choice) when given, else the suggestion an import read from the source
// (x-openai-isConsequential, MCP's readOnlyHint), else derived — an HTTP
// GET, HEAD or OPTIONS is not, every other method is, and an MCP tool is
// (MCP's default annotations say a tool may change things).
func (p *Plugin) IsConsequential() bool {
	if p.Consequential != nil {
		return *p.Consequential
	}
	if p.ConsequentialHint != nil {
		return *p.ConsequentialHint
	}
	return p.DerivedConsequential()
}

// DerivedConsequential is the classification from the call's kind alone:
// what an inline plugin not sent by the service token gets whatever it
// claims.
func (p *Plugin) DerivedConsequential() bool {
	if p.ExecType() == TypeMCP {
		return true
	}
	return !safeMethods[strings.ToUpper(p.Execution.Method)]
}

var safeMethods = map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true}

// IdempotentMethod reports whether HTTP calls method idempotent: a
// repeat has the effect of one call (RFC 9110, 9.2.2).
func IdempotentMethod(method string) bool { return idempotentMethods[strings.ToUpper(method)] }

var idempotentMethods = map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true, "PUT": true, "DELETE": true}
