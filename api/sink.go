package api

import (
	"context"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/store"
)

// StoreSink writes execution records to sys_ai_execution.
type StoreSink struct{ Store *store.Store }

// WriteRecords implements engine.RecordSink.
func (s StoreSink) WriteRecords(ctx context.Context, recs []engine.Record) error {
	rows := make([]store.Execution, len(recs))
	for i := range recs {
		r := &recs[i] // pointers into recs: a copy of r would escape, a record each
		row := store.Execution{
			ID: r.ID, PluginName: r.PluginName, Status: r.Status, HTTPStatus: r.HTTPStatus,
			LatencyMS: r.LatencyMS, Attempts: r.Attempts, ErrorClass: r.ErrorClass,
			ErrorMessage: r.ErrorMessage, Confirmation: r.Confirmation, Questions: r.Questions, CreateTime: r.CreatedAt, TraceID: r.TraceID,
		}
		if r.RunID != "" {
			row.RunID = &r.RunID
		}
		if r.UserID != 0 {
			row.UserID = &r.UserID
		}
		rows[i] = row
	}
	return s.Store.InsertExecutions(ctx, rows)
}
