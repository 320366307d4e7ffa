package recordspool

import (
	"encoding/json"
	"strconv"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/internal/jsontext"
)

// appendRecord appends r as encoding/json marshals it, byte for byte (the
// drainer reads segments back with encoding/json): field by field, since
// reflection and its copy cost every call's record a microsecond or more.
// A string that needs any escaping goes through encoding/json, and a time
// JSON cannot hold fails as json.Marshal fails.
func appendRecord(b []byte, r *engine.Record) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID)
	if r.RunID != "" {
		b = append(b, `,"run_id":`...)
		b = appendString(b, r.RunID)
	}
	b = append(b, `,"plugin_name":`...)
	b = appendString(b, r.PluginName)
	b = append(b, `,"user_id":`...)
	b = strconv.AppendInt(b, r.UserID, 10)
	b = append(b, `,"status":`...)
	b = appendString(b, r.Status)
	b = append(b, `,"http_status":`...)
	b = strconv.AppendInt(b, int64(r.HTTPStatus), 10)
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendInt(b, r.LatencyMS, 10)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(r.Attempts), 10)
	if r.ErrorClass != "" {
		b = append(b, `,"error_class":`...)
		b = appendString(b, r.ErrorClass)
	}
	if r.ErrorMessage != "" {
		b = append(b, `,"error_message":`...)
		b = appendString(b, r.ErrorMessage)
	}
	if r.Confirmation != "" {
		b = append(b, `,"confirmation":`...)
		b = appendString(b, r.Confirmation)
	}
	if r.Questions != "" {
		b = append(b, `,"questions":`...)
		b = appendString(b, r.Questions)
	}
	b = append(b, `,"created_at":"`...)
	b, err := r.CreatedAt.AppendText(b) // what Time.MarshalJSON quotes
	if err != nil {
		return b, err
	}
	b = append(b, '"')
	if r.TraceID != "" {
		b = append(b, `,"trace_id":`...)
		b = appendString(b, r.TraceID)
	}
	return append(b, '}'), nil
}

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(b []byte, s string) []byte {
	if !jsontext.PlainHTML(s) {
		j, _ := json.Marshal(s) // a string always marshals
		return append(b, j...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
