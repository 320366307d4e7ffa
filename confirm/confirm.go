// Package confirm holds the rule that consequential calls wait for a
// person (issue 33): the policy (BLINDEXEC_CONFIRM, a payload's
// options.confirm), the ids of pending items and the outcomes of
// decisions. The model can reach none of it: nothing here is a tool.
package confirm

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/blindexec/blindexec/plugins"
)

// Policy says which calls wait for a person.
type Policy string

// Policies, least confirmation first.
const (
	Never         Policy = "never"         // today's behaviour: nothing waits
	Consequential Policy = "consequential" // calls of consequential plugins wait (the default)
	Always        Policy = "always"        // every call waits
)

// DefaultTTL is how long a pending item waits for a decision
// (BLINDEXEC_CONFIRM_TTL).
const DefaultTTL = 15 * time.Minute

// ParsePolicy reads a policy; "" is Consequential.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "":
		return Consequential, nil
	case Never, Consequential, Always:
		return p, nil
	}
	return "", fmt.Errorf("expected consequential, never or always, got %q", s)
}

func (p Policy) rank() int {
	switch p {
	case Never:
		return 0
	case Always:
		return 2
	}
	return 1
}

// Stricter is the policy of a run whose payload asks for asked
// (options.confirm): more confirmation than p, never less. Asking for
// less is an error that says so.
func (p Policy) Stricter(asked string) (Policy, error) {
	if asked == "" {
		return p, nil
	}
	a, err := ParsePolicy(asked)
	if err != nil {
		return "", err
	}
	if a.rank() < p.rank() {
		return "", fmt.Errorf("%q asks for less confirmation than the engine's policy (%s); a payload may ask for more, never less", asked, p)
	}
	return a, nil
}

// Needs reports whether a call of pl waits for a person under p.
func (p Policy) Needs(pl *plugins.Plugin) bool {
	switch p {
	case Never:
		return false
	case Always:
		return true
	}
	return pl.IsConsequential()
}

// Pending item kinds: a call waiting for a person's approval, or for
// the user to connect an account first (issue 34).
const (
	KindConfirmation  = "confirmation"
	KindAuthorization = "authorization"
)

// Decisions a person makes: approve or deny a confirmation; continue
// (the user connected) or cancel an authorization.
const (
	Approve  = "approve"
	Deny     = "deny"
	Continue = "continue"
	Cancel   = "cancel"
)

// Outcomes of a pending item, as records and metrics count them.
const (
	Approved  = "approved"
	Denied    = "denied"
	Expired   = "expired"
	Stale     = "stale"
	Continued = "continued"
	Cancelled = "cancelled"
)

// Outcome is the outcome of decision about an item of kind, "" when
// that decision does not apply to that kind.
func Outcome(kind, decision string) string {
	if kind == KindAuthorization {
		return map[string]string{Continue: Continued, Cancel: Cancelled}[decision]
	}
	return map[string]string{Approve: Approved, Deny: Denied}[decision]
}

// Decisions names the decisions an item of kind takes, for an error.
func Decisions(kind string) string {
	if kind == KindAuthorization {
		return `"continue" or "cancel"`
	}
	return `"approve" or "deny"`
}

// NewID returns a pending item's id: 128 random bits, hex. Knowing one
// id tells nothing of another.
func NewID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24)
	return hex.EncodeToString(b[:])
}

// Declined is the tool output the model reads for an item a person
// denied, that expired undecided, or whose request went stale: nothing
// was sent.
func Declined(outcome, reason string) string {
	var msg string
	switch outcome {
	case Denied:
		msg = "the user declined this call; nothing was sent"
		if reason != "" {
			msg = "the user declined this call: " + reason + "; nothing was sent"
		}
	case Expired:
		msg = "the user did not decide in time: expired; nothing was sent"
	default:
		msg = "the tool or the user's credentials changed after the call was prepared, so the confirmation no longer applies; nothing was sent"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "not_confirmed", "message": msg, "outcome": outcome}})
	return string(b)
}

// NotConnected is the tool output the model reads for an authorization
// the user cancelled or left to expire: the call needs an account at
// provider the user did not connect, and nothing was sent.
func NotConnected(provider, outcome string) string {
	msg := "the user did not connect an account at " + provider + ", which this tool needs; nothing was sent"
	if outcome == Expired {
		msg = "the user did not connect an account at " + provider + " in time, which this tool needs; nothing was sent"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": "not_connected", "message": msg, "outcome": outcome, "provider": provider}})
	return string(b)
}
