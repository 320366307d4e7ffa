package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Vectors loads every plugin vector of an embedding model, by content
// hash.
func (s *Store) Vectors(ctx context.Context, model string) (map[string][]float32, error) {
	rows, err := s.raw().QueryContext(ctx, "SELECT content_hash, vector FROM sys_ai_plugin_embedding WHERE model = ?", model)
	if err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	defer rows.Close()
	out := map[string][]float32{}
	for rows.Next() {
		var (
			hash string
			raw  []byte
		)
		if err := rows.Scan(&hash, &raw); err != nil {
			return nil, fmt.Errorf("load vectors: %w", err)
		}
		v := make([]float32, len(raw)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		out[hash] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	return out, nil
}

// SaveVectors stores vectors of an embedding model by content hash; a
// hash stored already (by another replica) is left as it is.
func (s *Store) SaveVectors(ctx context.Context, model string, vectors map[string][]float32) error {
	verb := "INSERT IGNORE"
	if s.dialect == DialectSQLite {
		verb = "INSERT OR IGNORE"
	}
	q := verb + " INTO sys_ai_plugin_embedding (model, content_hash, dims, vector, create_time) VALUES (?, ?, ?, ?, ?)"
	now := time.Now()
	for hash, v := range vectors {
		raw := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
		}
		if _, err := s.raw().ExecContext(ctx, q, model, hash, len(v), raw, now); err != nil {
			return fmt.Errorf("save vector: %w", err)
		}
	}
	return nil
}
