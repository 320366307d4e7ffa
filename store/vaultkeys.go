package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// VaultKey is a row of sys_ai_vault_key: a known value sealed under one
// master key, by which a configured key proves it is the one this
// database's credentials were written with.
type VaultKey struct {
	KeyID      string    `gorm:"column:key_id;primaryKey"`
	CheckValue string    `gorm:"column:check_value"`
	CreateTime time.Time `gorm:"column:create_time"`
}

// TableName maps VaultKey onto its table.
func (VaultKey) TableName() string { return "sys_ai_vault_key" }

// VaultKeys lists the key checks, oldest first.
func (s *Store) VaultKeys(ctx context.Context) ([]VaultKey, error) {
	var rows []VaultKey
	if err := s.db.WithContext(ctx).Order("create_time, key_id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list vault key checks: %w", classify(err))
	}
	return rows, nil
}

// AddVaultKey records a key check; one already there for the key id is
// kept (the first writer wins, as any would do). With first, it is
// recorded only into a table holding no check, in one statement: of two
// keys starting a new database at once, one is its key, and the other
// then finds that one's check (added false).
func (s *Store) AddVaultKey(ctx context.Context, k *VaultKey, first bool) (added bool, err error) {
	k.CreateTime = now()
	if first {
		from := "" // SQLite's SELECT takes a WHERE without a table
		if s.dialect == DialectMySQL {
			from = " FROM DUAL"
		}
		res := s.db.WithContext(ctx).Exec("INSERT INTO sys_ai_vault_key (key_id, check_value, create_time) SELECT ?, ?, ?"+from+
			" WHERE NOT EXISTS (SELECT 1 FROM sys_ai_vault_key)", k.KeyID, k.CheckValue, k.CreateTime)
		if isConflict(res.Error) {
			return false, nil // MySQL's deadlock of two first inserts: the other's went in
		}
		if res.Error != nil {
			return false, fmt.Errorf("record the first vault key check %s: %w", k.KeyID, classify(res.Error))
		}
		return res.RowsAffected == 1, nil
	}
	err = classify(s.db.WithContext(ctx).Create(k).Error)
	if err != nil && !errors.Is(err, ErrDuplicate) {
		return false, fmt.Errorf("record vault key check %s: %w", k.KeyID, err)
	}
	return err == nil, nil
}

// CredentialKeyIDs counts the stored credentials per key id.
func (s *Store) CredentialKeyIDs(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		KeyID string
		N     int
	}
	err := s.db.WithContext(ctx).Model(&Credential{}).Select("key_id, COUNT(*) AS n").Group("key_id").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count credentials per key id: %w", classify(err))
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.KeyID] = r.N
	}
	return out, nil
}
