package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// SearchRequests loads every request list a model wrote for tool search
// (issue 49 point 4), by content hash. A row that does not decode is left
// out: it is asked for again.
func (s *Store) SearchRequests(ctx context.Context, model string) (map[string][]string, error) {
	rows, err := s.raw().QueryContext(ctx, "SELECT content_hash, requests FROM sys_ai_search_request WHERE model = ?", model)
	if err != nil {
		return nil, fmt.Errorf("load search requests: %w", err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var hash, raw string
		if err := rows.Scan(&hash, &raw); err != nil {
			return nil, fmt.Errorf("load search requests: %w", err)
		}
		var rs []string
		if json.Unmarshal([]byte(raw), &rs) == nil {
			out[hash] = rs
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load search requests: %w", err)
	}
	return out, nil
}

// SaveSearchRequests stores request lists of a model by content hash; a
// hash stored already (by another replica) is left as it is.
func (s *Store) SaveSearchRequests(ctx context.Context, model string, requests map[string][]string) error {
	verb := "INSERT IGNORE"
	if s.dialect == DialectSQLite {
		verb = "INSERT OR IGNORE"
	}
	q := verb + " INTO sys_ai_search_request (model, content_hash, requests, create_time) VALUES (?, ?, ?, ?)"
	now := time.Now()
	for hash, rs := range requests {
		raw, err := json.Marshal(rs)
		if err != nil {
			return err
		}
		if _, err := s.raw().ExecContext(ctx, q, model, hash, string(raw), now); err != nil {
			return fmt.Errorf("save search requests: %w", err)
		}
	}
	return nil
}
