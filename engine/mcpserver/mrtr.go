package mcpserver

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/store"
)

// Multi round-trip requests (SEP-2322, 2026-07-28): a call that waits for
// a person, or for the user to connect an account, is answered at once
// with resultType "input_required", what the client is to ask
// (inputRequests) and a requestState; the client retries the same
// tools/call with the answers (inputResponses) and that state, on any
// replica. The state is sealed (AES-256-GCM under a key derived from the
// master key) and binds who asked, where and what: a retry that differs
// in any of it, or comes late, or comes twice (the nonce is claimed in
// the database), is refused and nothing is sent. Whether the call is sent
// is decided again on the retry by the executor; the state only carries
// what the person was shown and answered.

// Claims makes a requestState single-use across replicas
// (*store.Store).
type Claims interface {
	// ClaimRequestState claims nonce for the one retry that uses it:
	// false when it was claimed before.
	ClaimRequestState(ctx context.Context, nonce string, expires time.Time) (bool, error)
}

// RoundTrips are what multi round-trip requests need: the key of the
// sealed states, the claims, and how long a state is good for.
type RoundTrips struct {
	Key    []byte // 32 bytes, derived from the master key for this use only
	Claims Claims
	TTL    time.Duration // DefaultStateTTL when 0
}

// DefaultStateTTL is how long a requestState is good for: about as long
// as the client's own elicitation waits for the person.
const DefaultStateTTL = 10 * time.Minute

// State modes: what the client was asked.
const (
	modeForm    = "form"    // a form with the decision
	modeURL     = "url"     // the approval page
	modeConnect = "connect" // the connection's start URL
)

// The keys of inputRequests.
const (
	inputDecision = "decision"
	inputApproval = "approval"
	inputConnect  = "connect"
)

// requestState is what a sealed state binds.
type requestState struct {
	Version   int    `json:"v"`
	Principal string `json:"p"` // the token's hash
	User      int64  `json:"u"`
	Endpoint  string `json:"e"` // the path the client reached (an agent's names it)
	Tool      string `json:"t"`
	Args      string `json:"a"`           // digest of the arguments
	Request   string `json:"r,omitempty"` // the prepared request's digest (credential versions included)
	Pending   string `json:"i,omitempty"` // the pending item a person decides
	Mode      string `json:"m"`
	Expires   int64  `json:"x"` // Unix milliseconds
	Nonce     string `json:"n"`
}

// stateAAD names what the sealed bytes are, so that no other sealed value
// under a key derived alike opens as a state.
var stateAAD = []byte("blindexec mcp requestState v1")

func (rt *RoundTrips) aead() (cipher.AEAD, error) {
	block, err := aes.NewCipher(rt.Key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal returns st sealed, as the client carries it.
func (rt *RoundTrips) seal(st *requestState) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	return rt.sealBytes(plain, stateAAD)
}

// sealBytes returns plain sealed under aad (what it is), base64url.
func (rt *RoundTrips) sealBytes(plain, aad []byte) (string, error) {
	a, err := rt.aead()
	if err != nil {
		return "", err
	}
	nonce := make([]byte, a.NonceSize())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(a.Seal(nonce, nonce, plain, aad)), nil
}

// errState is any requestState this server did not seal, or sealed
// otherwise: what was wrong is not told.
var errState = errors.New("requestState: not a state this server issued for this call")

// openBytes returns what sealBytes sealed in s under aad.
func (rt *RoundTrips) openBytes(s string, aad []byte) ([]byte, error) {
	a, err := rt.aead()
	if err != nil {
		return nil, err
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < a.NonceSize() {
		return nil, errState
	}
	plain, err := a.Open(nil, b[:a.NonceSize()], b[a.NonceSize():], aad)
	if err != nil {
		return nil, errState
	}
	return plain, nil
}

// open returns the state sealed in s.
func (rt *RoundTrips) open(s string) (*requestState, error) {
	plain, err := rt.openBytes(s, stateAAD)
	if err != nil {
		return nil, err
	}
	var st requestState
	if err := json.Unmarshal(plain, &st); err != nil || st.Version != 1 {
		return nil, errState
	}
	return &st, nil
}

// argsDigest is the digest of a call's arguments, read as JSON: the same
// arguments re-encoded (another key order) have the same digest.
func argsDigest(args json.RawMessage) string {
	var v any
	if len(args) > 0 && json.Unmarshal(args, &v) == nil {
		args, _ = json.Marshal(v) // object keys sorted
	}
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}

// retry is what a retried tools/call brings: its state and the answers.
type retry struct {
	state     string
	responses sdk.InputResponseMap
}

// stateless reports whether client speaks 2026-07-28 or later: every
// result carries its resultType, and the server asks by input_required.
func speaksStateless(client peer) bool {
	if client == nil {
		return false
	}
	p := client.InitializeParams()
	return p != nil && p.ProtocolVersion >= firstStateless
}

// modern reports whether the client speaks multi round-trip requests
// (2026-07-28 and later), with a key to seal their states.
func (ss *session) modern(client peer) bool {
	return ss.svc.opts.RoundTrips != nil && speaksStateless(client)
}

// stateFor returns a sealed state of mode for this call of e.
func (ss *session) stateFor(e *entry, args json.RawMessage, plan *engine.Plan, pending, mode string) (string, error) {
	rt := ss.svc.opts.RoundTrips
	ttl := rt.TTL
	if ttl <= 0 {
		ttl = DefaultStateTTL
	}
	st := &requestState{Version: 1, Principal: ss.principal, User: ss.user, Endpoint: ss.endpoint, Tool: e.plugin.Name,
		Args: argsDigest(args), Pending: pending, Mode: mode, Expires: time.Now().Add(ttl).UnixMilli(), Nonce: rand.Text()}
	if plan != nil && plan.Person != nil {
		st.Request = plan.Person.Digest
	}
	return rt.seal(st)
}

// claim opens the state in, checks that it was issued to this identity,
// endpoint, tool and arguments and is still good, and claims it: the one
// retry that uses it. An error says why it is refused; nothing is sent.
func (ss *session) claim(ctx context.Context, e *entry, args json.RawMessage, in *retry) (*requestState, error) {
	rt := ss.svc.opts.RoundTrips
	st, err := rt.open(in.state)
	if err != nil {
		return nil, err
	}
	switch {
	case st.Principal != ss.principal || st.User != ss.user || st.Endpoint != ss.endpoint:
		return nil, errState
	case st.Tool != e.plugin.Name || st.Args != argsDigest(args):
		return nil, errors.New("requestState: the call differs from the one it was issued for (its tool or arguments changed); nothing was sent")
	case time.Now().UnixMilli() > st.Expires:
		return nil, errors.New("requestState: expired; call the tool again without it")
	}
	// Bounded: a database that stops answering would hold the retry for
	// as long as the connection lives; unchecked, the state is refused.
	cctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	won, err := rt.Claims.ClaimRequestState(cctx, st.Nonce, time.UnixMilli(st.Expires))
	cancel()
	switch {
	case err != nil:
		ss.svc.log.ErrorContext(ctx, "MCP requestState not claimed", "err", err)
		return nil, errors.New("requestState: cannot be checked at the moment; nothing was sent")
	case !won:
		return nil, errors.New("requestState: already used; call the tool again without it")
	}
	return st, nil
}

// stateError is the JSON-RPC error refusing a retry's state.
func stateError(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
}

// decisionSchema is the form a person answers: approve or deny, and why.
var decisionSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decision": map[string]any{"type": "string", "title": "Decision", "enum": []string{"approve", "deny"},
			"description": "approve sends exactly the request shown; deny sends nothing"},
		"reason": map[string]any{"type": "string", "title": "Reason", "maxLength": 500},
	},
	"required": []string{"decision"},
}

// approved reads the person's answer to the decision form: decline and
// cancel deny, and so does an accepted "deny"; answered is false when
// there is no answer to read (no response to the form, or an accepted
// form without a decision), which is asked again.
func approved(responses sdk.InputResponseMap) (approve, answered bool) {
	r, ok := responses[inputDecision].(*sdk.ElicitResult)
	if !ok {
		return false, false
	}
	if r.Action != "accept" {
		return false, true
	}
	switch d, _ := r.Content["decision"].(string); d {
	case "approve":
		return true, true
	case "deny":
		return false, true
	}
	return false, false
}

// ask answers a call waiting for a person with what the client asks
// (form elicitation of the decision, or the approval page by URL) and a
// sealed state; ok false when the client can be asked neither way.
func (ss *session) askAgain(e *entry, args json.RawMessage, plan *engine.Plan, w *Waiting, client peer) (_ sdk.Result, ok bool, _ error) {
	form, urlMode := elicitation(client)
	var mode string
	var req *sdk.ElicitParams
	switch {
	case form && w.Elicit:
		mode, req = modeForm, &sdk.ElicitParams{Mode: "form", Message: w.Message, RequestedSchema: decisionSchema}
	case urlMode && w.URL != "":
		mode, req = modeURL, &sdk.ElicitParams{Mode: "url", Message: w.Message, URL: w.URL, ElicitationID: w.ID}
	default:
		return nil, false, nil
	}
	state, err := ss.stateFor(e, args, plan, w.ID, mode)
	if err != nil {
		return nil, false, fmt.Errorf("seal the requestState: %w", err)
	}
	key := inputDecision
	if mode == modeURL {
		key = inputApproval
	}
	return inputRequired{&sdk.CallToolResult{InputRequests: sdk.InputRequestMap{key: req}, RequestState: state}}, true, nil
}

// StateKey derives the key of sealed requestStates from the master key
// (BLINDEXEC_MASTER_KEY): HKDF-SHA256 with a label of its own, so that
// no other use of the master key shares it. Every replica derives the
// same key, so any of them opens a state another sealed.
func StateKey(masterKey string) ([]byte, error) {
	if masterKey == "" {
		return nil, errors.New("no master key: requestStates cannot be sealed")
	}
	return hkdf.Key(sha256.New, []byte(masterKey), nil, "blindexec mcp requestState v1", 32)
}
