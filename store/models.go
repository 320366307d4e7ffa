package store

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// JSON is a JSON document column. Like json.RawMessage it holds the raw
// bytes; unlike it, it scans from both []byte (MySQL) and string (MariaDB,
// SQLite), and an empty value is stored as NULL. The database may normalise
// the text (MySQL reorders keys), so compare documents, not bytes.
type JSON []byte

// Value writes the document as text. Invalid JSON is refused here so that
// SQLite, which has no JSON check, behaves like MySQL and MariaDB.
func (j JSON) Value() (driver.Value, error) {
	if len(j) == 0 {
		return nil, nil
	}
	if !json.Valid(j) {
		return nil, errors.New("invalid JSON document")
	}
	return string(j), nil
}

// Scan reads a document from any of the drivers' representations.
func (j *JSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case []byte:
		*j = append(JSON(nil), v...)
	case string:
		*j = JSON(v)
	default:
		return fmt.Errorf("scan JSON column: unsupported type %T", src)
	}
	return nil
}

// MarshalJSON embeds the document as is (null when empty).
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// UnmarshalJSON keeps a copy of the raw document; null becomes empty (NULL).
func (j *JSON) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*j = nil
		return nil
	}
	*j = append(JSON(nil), b...)
	return nil
}

// Audit holds the bookkeeping columns of every RuoYi sys_ table. The store
// sets the times; callers set CreateBy/UpdateBy.
type Audit struct {
	CreateBy   string    `gorm:"column:create_by" json:"create_by"`
	CreateTime time.Time `gorm:"column:create_time" json:"create_time"`
	UpdateBy   string    `gorm:"column:update_by" json:"update_by"`
	UpdateTime time.Time `gorm:"column:update_time" json:"update_time"`
	Remark     string    `gorm:"column:remark" json:"remark,omitempty"`
}

// stampCreate sets both times for a new row.
func (a *Audit) stampCreate() {
	a.CreateTime = now()
	a.UpdateTime = a.CreateTime
}

// Plugin status values (RuoYi convention).
const (
	StatusEnabled  = "0"
	StatusDisabled = "1"
)

// Plugin is a row of sys_ai_plugin. Optional text columns map to plain
// strings (NULL reads as ""); columns whose NULL means "none" are pointers.
type Plugin struct {
	ID                  int64   `gorm:"column:plugin_id;primaryKey;autoIncrement" json:"plugin_id"`
	Name                string  `gorm:"column:name" json:"name"`
	Title               string  `gorm:"column:title" json:"title,omitempty"`
	Description         string  `gorm:"column:description" json:"description,omitempty"`
	IconURL             string  `gorm:"column:icon_url" json:"icon_url,omitempty"`
	ParameterSchema     JSON    `gorm:"column:parameter_schema" json:"parameter_schema,omitempty"`
	ExecutionConfig     JSON    `gorm:"column:execution_config" json:"execution_config,omitempty"`
	Status              string  `gorm:"column:status" json:"status"`
	RequiredCredentials JSON    `gorm:"column:required_credentials" json:"required_credentials,omitempty"`
	SourceID            *int64  `gorm:"column:source_id" json:"source_id,omitempty"`
	SourceKey           *string `gorm:"column:source_key" json:"source_key,omitempty"`
	ContentHash         *string `gorm:"column:content_hash" json:"content_hash,omitempty"`
	// Consequential is the administrator's classification: "1", "0", or
	// nil (derived). Syncs keep it (issue 33).
	Consequential *string `gorm:"column:consequential" json:"consequential,omitempty"`
	// Perms are the RuoYi permission strings of which a user must hold
	// one, comma-separated as in sys_menu.perms; nil when the plugin has
	// none. An administrator's column: syncs keep it (issue 46).
	Perms *string `gorm:"column:perms" json:"perms,omitempty"`
	Audit
}

// TableName maps Plugin onto its table.
func (Plugin) TableName() string { return "sys_ai_plugin" }

// Credential is a row of sys_user_credential. Value is the encrypted string
// written by package auth, never a plaintext.
type Credential struct {
	ID     int64  `gorm:"column:credential_id;primaryKey;autoIncrement" json:"credential_id"`
	UserID int64  `gorm:"column:user_id" json:"user_id"`
	Key    string `gorm:"column:credential_key" json:"credential_key"`
	Value  string `gorm:"column:credential_value" json:"-"`
	KeyID  string `gorm:"column:key_id" json:"key_id"`
	Audit
}

// TableName maps Credential onto its table.
func (Credential) TableName() string { return "sys_user_credential" }

// Token is a row of sys_ai_token: a per-user API token, of which only the
// hex sha256 is kept.
type Token struct {
	ID           int64      `gorm:"column:token_id;primaryKey;autoIncrement" json:"token_id"`
	UserID       int64      `gorm:"column:user_id" json:"user_id"`
	Name         string     `gorm:"column:token_name" json:"token_name,omitempty"`
	Hash         string     `gorm:"column:token_hash" json:"-"`
	Prefix       string     `gorm:"column:token_prefix" json:"token_prefix,omitempty"`
	ExpireTime   *time.Time `gorm:"column:expire_time" json:"expire_time,omitempty"`
	LastUsedTime *time.Time `gorm:"column:last_used_time" json:"last_used_time,omitempty"`
	// Scope TokenScopeConsole signs in to the console only (issue 33).
	Scope string `gorm:"column:scope" json:"scope,omitempty"`
	// Perms are the token's fixed RuoYi permission strings,
	// comma-separated; nil when it has none. They narrow what its user
	// may use (issue 46).
	Perms *string `gorm:"column:perms" json:"perms,omitempty"`
	Audit
}

// TokenScopeConsole is the scope of a token refused on /v1 and /mcp: it
// signs in to the console, whose sessions alone may approve calls under
// BLINDEXEC_CONFIRM_VIA=console.
const TokenScopeConsole = "console"

// TableName maps Token onto its table.
func (Token) TableName() string { return "sys_ai_token" }

// Execution status values.
const (
	ExecOK      = "ok"
	ExecError   = "error"
	ExecRefused = "refused"
)

// Execution is a row of sys_ai_execution, the execution log. It must never
// hold a secret: no arguments, no credentials, no response bodies.
type Execution struct {
	ID           string  `gorm:"column:execution_id;primaryKey" json:"execution_id"`
	RunID        *string `gorm:"column:run_id" json:"run_id,omitempty"`
	PluginName   string  `gorm:"column:plugin_name" json:"plugin_name"`
	UserID       *int64  `gorm:"column:user_id" json:"user_id,omitempty"`
	Status       string  `gorm:"column:status" json:"status"`
	HTTPStatus   int     `gorm:"column:http_status" json:"http_status"`
	LatencyMS    int64   `gorm:"column:latency_ms" json:"latency_ms"`
	Attempts     int     `gorm:"column:attempts" json:"attempts"`
	ErrorClass   string  `gorm:"column:error_class" json:"error_class,omitempty"`
	ErrorMessage string  `gorm:"column:error_message" json:"error_message,omitempty"`
	// Confirmation is the decision a confirmed call was sent on: the
	// outcome, who, and the pending item (sys_ai_run_pending keeps when).
	Confirmation string `gorm:"column:confirmation" json:"confirmation,omitempty"`
	// Questions are an upstream MCP server's questions during the call
	// and their answers (JSON, masked; issue 48).
	Questions  string    `gorm:"column:questions;default:null" json:"questions,omitempty"`
	CreateTime time.Time `gorm:"column:create_time" json:"create_time"`
	// TraceID is the OpenTelemetry trace the call ran in (32 hex
	// digits), empty when the engine did not trace it.
	TraceID string `gorm:"column:trace_id;default:null" json:"trace_id,omitempty"`
}

// TableName maps Execution onto its table.
func (Execution) TableName() string { return "sys_ai_execution" }

// Import source kinds.
const (
	SourceOpenAPI = "openapi"
	SourceMCP     = "mcp"
)

// ImportSource is a row of sys_ai_import_source: an imported OpenAPI
// document or MCP server.
type ImportSource struct {
	ID       int64  `gorm:"column:source_id;primaryKey;autoIncrement" json:"source_id"`
	Kind     string `gorm:"column:kind" json:"kind"`
	Location string `gorm:"column:location" json:"location"`
	SHA256   string `gorm:"column:sha256" json:"sha256,omitempty"`
	Prefix   string `gorm:"column:prefix" json:"prefix,omitempty"`
	// Options are the conversion options of the last sync (JSON): the
	// same bytes with other options are re-imported.
	Options        string     `gorm:"column:options" json:"options,omitempty"`
	ImportedTime   *time.Time `gorm:"column:imported_time" json:"imported_time,omitempty"`
	OperationCount int        `gorm:"column:operation_count" json:"operation_count"`
	ImportedCount  int        `gorm:"column:imported_count" json:"imported_count"`
	FailedCount    int        `gorm:"column:failed_count" json:"failed_count"`
	// Title, TagDescriptions (JSON: tag → description) and Aliases (JSON
	// array) are what tool search reads of the source (issue 49): a sync
	// writes the first two; only an administrator writes the aliases
	// (SetImportSourceAliases, or SQL), and a sync keeps them.
	Title           *string `gorm:"column:title" json:"title,omitempty"`
	TagDescriptions *string `gorm:"column:tag_descriptions" json:"-"`
	Aliases         *string `gorm:"column:aliases" json:"-"`
	// SealedURL is the URL of the last sync when it had userinfo (the
	// Location shows it redacted), encrypted under the master key
	// (migration 00031): a sync from the location as shown fetches with
	// it. Written only by SetImportSourceSealedURL.
	SealedURL *string `gorm:"column:sealed_url" json:"-"`
	Audit
}

// TableName maps ImportSource onto its table.
func (ImportSource) TableName() string { return "sys_ai_import_source" }
