package store

import (
	"context"
	"fmt"
	"time"
)

// AdminEvent is a row of sys_ai_admin_log: one administrative change.
type AdminEvent struct {
	ID         int64     `gorm:"column:log_id;primaryKey;autoIncrement" json:"log_id"`
	Actor      string    `gorm:"column:actor" json:"actor"`
	Via        string    `gorm:"column:via" json:"via"`
	Action     string    `gorm:"column:action" json:"action"`
	Kind       string    `gorm:"column:kind" json:"kind"`
	Target     string    `gorm:"column:target" json:"target"`
	HTTPStatus int       `gorm:"column:http_status" json:"http_status"`
	CreateTime time.Time `gorm:"column:create_time" json:"create_time"`
}

// TableName maps AdminEvent onto its table.
func (AdminEvent) TableName() string { return "sys_ai_admin_log" }

// InsertAdminEvent records e, stamping its time.
func (s *Store) InsertAdminEvent(ctx context.Context, e *AdminEvent) error {
	e.CreateTime = now()
	e.Target = truncateRunes(e.Target, 512)
	if err := s.db.WithContext(ctx).Create(e).Error; err != nil {
		return fmt.Errorf("record admin event %s %s: %w", e.Action, e.Target, classify(err))
	}
	return nil
}

// AdminEventFilter narrows ListAdminEvents; zero fields do not filter.
type AdminEventFilter struct {
	Kind  string
	Since time.Time
	Limit int // 100 when 0, at most 1000
}

// ListAdminEvents returns the newest events first.
func (s *Store) ListAdminEvents(ctx context.Context, f AdminEventFilter) ([]AdminEvent, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := s.db.WithContext(ctx).Order("log_id DESC").Limit(min(limit, 1000))
	if f.Kind != "" {
		q = q.Where("kind = ?", f.Kind)
	}
	if !f.Since.IsZero() {
		q = q.Where("create_time >= ?", dbTime(f.Since))
	}
	var es []AdminEvent
	if err := q.Find(&es).Error; err != nil {
		return nil, fmt.Errorf("list admin events: %w", classify(err))
	}
	return es, nil
}

// Console session events (kind AdminKindSession): the target is the
// session's id.
const (
	AdminKindSession = "session"
	AdminSignIn      = "SIGNIN"
	AdminSignOut     = "SIGNOUT"
)

// EndedSessions returns the ids of the console sessions signed out since
// then.
func (s *Store) EndedSessions(ctx context.Context, since time.Time) ([]string, error) {
	var ids []string
	err := s.db.WithContext(ctx).Model(&AdminEvent{}).
		Where("kind = ? AND action = ? AND create_time >= ?", AdminKindSession, AdminSignOut, dbTime(since)).
		Pluck("target", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("list ended console sessions: %w", classify(err))
	}
	return ids, nil
}
