package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Run status while the loop is going; the final ones are the loop's.
const RunRunning = "running"

// MaxRunReply bounds the reply of a run: with the row's other columns and
// the statement around it, within MariaDB's and MySQL's default
// max_allowed_packet of 16 MiB.
const MaxRunReply = 16<<20 - 64<<10

// Run is a row of sys_ai_run: one run of the LLM loop and its reply body.
type Run struct {
	ID     string `gorm:"column:run_id;primaryKey" json:"run_id"`
	UserID *int64 `gorm:"column:user_id" json:"user_id,omitempty"`
	// TokenID is the per-user token that started the run (migration
	// 00028), nil for the service's, the administrator's and older runs:
	// a token with fixed perms sees only the runs it started.
	TokenID   *int64 `gorm:"column:token_id" json:"-"`
	Status    string `gorm:"column:status" json:"status"`
	Model     string `gorm:"column:model" json:"model,omitempty"`
	Reply     JSON   `gorm:"column:reply" json:"reply,omitempty"`
	ErrorCode string `gorm:"column:error_code" json:"error_code,omitempty"`
	// TraceID is the OpenTelemetry trace of the request that ran it,
	// empty when the engine did not trace it.
	TraceID string `gorm:"column:trace_id;default:null" json:"trace_id,omitempty"`
	// Messages are the request's messages, as the payload sent them (each
	// text cut to fit: loop.StoredMessages); FirstMessage, the start of
	// its first user message; Asked, its last user message. All are
	// written when the run starts and kept after.
	Messages     JSON   `gorm:"column:messages" json:"messages,omitempty"`
	FirstMessage string `gorm:"column:first_message;default:null" json:"first_message,omitempty"`
	Asked        string `gorm:"column:asked;default:null" json:"asked,omitempty"`
	// State is what resuming a paused run needs (never a credential);
	// ExpireTime, when the paused run closes as expired. Both are nil
	// once the run is no longer paused.
	State      JSON       `gorm:"column:state" json:"-"`
	ExpireTime *time.Time `gorm:"column:expire_time" json:"expire_time,omitempty"`
	CreateTime time.Time  `gorm:"column:create_time" json:"create_time"`
	UpdateTime time.Time  `gorm:"column:update_time" json:"update_time"`
}

// TableName maps Run onto its table.
func (Run) TableName() string { return "sys_ai_run" }

// SaveRun inserts or updates a run by its id; create_time is kept.
func (s *Store) SaveRun(ctx context.Context, r *Run) error {
	ctx, span := s.writeSpan(ctx, "sys_ai_run")
	defer span.End()
	t := time.Now().UTC().Truncate(time.Millisecond)
	if r.CreateTime.IsZero() {
		r.CreateTime = t
	}
	r.UpdateTime = t
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "run_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"status", "model", "reply", "error_code", "state", "expire_time", "update_time"}),
	}).Create(r).Error
	if err != nil {
		err = fmt.Errorf("save run %s: %w", r.ID, classify(err))
		failSpan(span, err)
		return err
	}
	return nil
}

// GetRun returns a run by id.
func (s *Store) GetRun(ctx context.Context, id string) (*Run, error) {
	var r Run
	err := s.db.WithContext(ctx).Where("run_id = ?", id).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("get run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get run %s: %w", id, classify(err))
	}
	return &r, nil
}

// RunFilter selects runs for RunsPage: each set field narrows.
type RunFilter struct {
	User *int64
	// Token keeps the runs that token started only.
	Token  *int64
	Status string
	// Since and Until bound the run's create_time: Since included, Until
	// not.
	Since, Until *time.Time
}

// RunsPage lists the runs filter selects, newest first, a page at a time
// (readPage). Each run is read without its reply, state and messages (a
// reply may hold megabytes): id, user, status, model, error, trace, the
// start of its first message, its last user message and times.
func (s *Store) RunsPage(ctx context.Context, filter RunFilter, after string, limit int) ([]Run, string, error) {
	q := s.db.WithContext(ctx).Select("run_id", "user_id", "token_id", "status", "model", "error_code", "trace_id", "first_message",
		"asked", "expire_time", "create_time", "update_time")
	if filter.User != nil {
		q = q.Where("user_id = ?", *filter.User)
	}
	if filter.Token != nil {
		q = q.Where("token_id = ?", *filter.Token)
	}
	if filter.Status != "" {
		q = q.Where("status = ?", filter.Status)
	}
	if filter.Since != nil {
		q = q.Where("create_time >= ?", filter.Since.UTC())
	}
	if filter.Until != nil {
		q = q.Where("create_time < ?", filter.Until.UTC())
	}
	out, next, err := readPage(q, "run_id", after, limit, func(r *Run) cursor { return cursor{ms: r.CreateTime.UnixMilli(), id: r.ID} })
	if err != nil {
		return nil, "", fmt.Errorf("runs: %w", err)
	}
	return out, next, nil
}
