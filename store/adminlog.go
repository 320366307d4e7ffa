package store

import (
	"context"
	"encoding/json"
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
	// Detail is the change in words' terms: what was done (Op) to which
	// object, with the values that are not secret (Args), as JSON; ""
	// for the rows written before it existed.
	Detail string `gorm:"column:detail" json:"-"`
}

// AdminDetail is an AdminEvent's Detail: Op names the change
// ("quota_rule.added"), Args its object and values (never a secret).
type AdminDetail struct {
	Op   string            `json:"op"`
	Args map[string]string `json:"args,omitempty"`
}

// SetDetail stores d as e's Detail.
func (e *AdminEvent) SetDetail(d AdminDetail) {
	b, _ := json.Marshal(d) // strings only: it cannot fail
	e.Detail = string(b)
}

// Details returns e's Detail, zero when it has none (or it cannot be read).
func (e *AdminEvent) Details() AdminDetail {
	var d AdminDetail
	if e.Detail != "" {
		json.Unmarshal([]byte(e.Detail), &d)
	}
	return d
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
	// Before pages: only the events older than the one of this id.
	Before int64
	Limit  int // 100 when 0, at most MaxAdminEvents
}

// MaxAdminEvents bounds a page of ListAdminEvents.
const MaxAdminEvents = 1000

// ListAdminEvents returns the newest events first.
func (s *Store) ListAdminEvents(ctx context.Context, f AdminEventFilter) ([]AdminEvent, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := s.db.WithContext(ctx).Order("log_id DESC").Limit(min(limit, MaxAdminEvents))
	if f.Before > 0 {
		q = q.Where("log_id < ?", f.Before)
	}
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
