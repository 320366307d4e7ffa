package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// requestState is a row of sys_ai_mcp_request_state: the nonce of an MCP
// requestState a retry has used (issue 47).
type requestState struct {
	Nonce      string    `gorm:"column:nonce;primaryKey"`
	ExpireTime time.Time `gorm:"column:expire_time"`
	CreateTime time.Time `gorm:"column:create_time"`
}

func (requestState) TableName() string { return "sys_ai_mcp_request_state" }

// ClaimRequestState claims the requestState of nonce, good until expires,
// for the one retry that uses it: false when it was claimed before, on
// any replica. Claims past their expiry are removed on the way.
func (s *Store) ClaimRequestState(ctx context.Context, nonce string, expires time.Time) (bool, error) {
	now := msNow()
	db := s.db.WithContext(ctx)
	if err := db.Where("expire_time < ?", now).Delete(&requestState{}).Error; err != nil {
		return false, fmt.Errorf("remove expired request states: %w", classify(err))
	}
	err := classify(db.Create(&requestState{Nonce: nonce, ExpireTime: expires.UTC().Truncate(time.Millisecond), CreateTime: now}).Error)
	switch {
	case errors.Is(err, ErrDuplicate):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("claim request state: %w", err)
	}
	return true, nil
}
