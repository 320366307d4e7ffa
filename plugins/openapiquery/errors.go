package openapiquery

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Error codes of the seed 000 tools' error objects (§6.1).
const (
	CodeNoDocument         = "no_document"          // no spec_path and no default document
	CodeFetchFailed        = "fetch_failed"         // the document could not be fetched
	CodeInvalidDocument    = "invalid_document"     // not OpenAPI, or no paths
	CodeOperationNotFound  = "operation_not_found"  // no such operationId
	CodeOperationNotUnique = "operation_not_unique" // several operations share it
	CodeUnresolvableRef    = "unresolvable_ref"     // a $ref that points nowhere
	CodeSchemaMissing      = "schema_missing"       // a request body without content
	CodeInvalidOperation   = "invalid_operation"    // a malformed parameter, body or response
	CodeInvalidArguments   = "invalid_arguments"    // the tool's own arguments are wrong
	CodeInvalidParams      = "invalid_params"       // build_call_plan: values failing the request schema
	CodeInternal           = "internal"             // a bug
)

// Error is the error object of seed 000 §6.1. It marshals as
// {"error": {"code", "message", "details"}}.
type Error struct {
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// MarshalJSON writes the error object.
func (e *Error) MarshalJSON() ([]byte, error) {
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	type body struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	}
	return json.Marshal(struct {
		Error body `json:"error"`
	}{body{e.Code, e.Message, details}})
}

// asError turns any error into an error object: a *SourceError becomes
// fetch_failed or invalid_document.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var se *SourceError
	if errors.As(err, &se) {
		d := map[string]any{"source": se.Shown(), "reason": se.Reason()}
		if se.Status != 0 {
			d["status"] = se.Status
		}
		if se.Parse {
			return &Error{Code: CodeInvalidDocument, Message: "the document at " + se.Shown() + " is not a readable OpenAPI document", Details: d}
		}
		return &Error{Code: CodeFetchFailed, Message: "could not fetch the document at " + se.Shown(), Details: d}
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}

func errNoPaths() *Error {
	return &Error{Code: CodeInvalidDocument, Message: "the document has no paths object"}
}

func quote(s string) string { return strconv.Quote(s) }

// seedError is an error whose text seed 003 gives exactly, capitalized as
// it is there ("No schema found with name: ..."): clients match on it.
type seedError string

func (e seedError) Error() string { return string(e) }

func seedErrorf(format string, args ...any) error { return seedError(fmt.Sprintf(format, args...)) }
