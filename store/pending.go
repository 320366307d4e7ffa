package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Run statuses of a run waiting for a person (issue 33): paused until a
// decision, resuming while one replica sends what was decided, expired
// when nobody decided in time.
const (
	RunPaused   = "paused"
	RunResuming = "resuming"
	RunExpired  = "expired"
)

// Pending item statuses: pending until decided, then the outcome.
const PendingWaiting = "pending"

// PendingItem is a row of sys_ai_run_pending: one call of a paused run
// waiting for a person, bound to its user, run and request digest.
type PendingItem struct {
	ID    string `gorm:"column:pending_id;primaryKey" json:"id"`
	RunID string `gorm:"column:run_id" json:"run_id"` // "" for a direct call
	// Principal, for a direct call (POST /v1/execute), is who prepared
	// it: the only one who may send it.
	Principal   string     `gorm:"column:principal" json:"-"`
	UserID      *int64     `gorm:"column:user_id" json:"user_id,omitempty"`
	Kind        string     `gorm:"column:kind" json:"kind"`
	Tool        string     `gorm:"column:tool" json:"tool"`
	ToolCallID  string     `gorm:"column:tool_call_id" json:"tool_call_id"`
	Digest      string     `gorm:"column:digest" json:"digest"`
	Item        JSON       `gorm:"column:item" json:"item"`
	Status      string     `gorm:"column:status" json:"status"`
	Reason      string     `gorm:"column:reason" json:"reason,omitempty"`
	DecidedBy   string     `gorm:"column:decided_by" json:"decided_by,omitempty"`
	DecidedTime *time.Time `gorm:"column:decided_time" json:"decided_time,omitempty"`
	ExpireTime  time.Time  `gorm:"column:expire_time" json:"expire_time"`
	CreateTime  time.Time  `gorm:"column:create_time" json:"create_time"`
	// Answer and Outcome are a question's (KindQuestion, questions.go).
	Answer  *string `gorm:"column:answer" json:"-"`
	Outcome *string `gorm:"column:outcome" json:"-"`
}

// TableName maps PendingItem onto its table.
func (PendingItem) TableName() string { return "sys_ai_run_pending" }

func msNow() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// PauseRun saves run as paused (its State and ExpireTime set by the
// caller) with its pending items, in one transaction.
func (s *Store) PauseRun(ctx context.Context, run *Run, items []PendingItem) error {
	run.Status = RunPaused
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		t := msNow()
		for i := range items {
			items[i].Status, items[i].CreateTime = PendingWaiting, t
		}
		if len(items) > 0 {
			if err := s.admitPending(tx, run.UserID, items, t); err != nil {
				return err
			}
			if err := tx.Create(&items).Error; err != nil {
				return err
			}
		}
		run.UpdateTime = t
		return tx.Model(&Run{}).Where("run_id = ?", run.ID).Updates(map[string]any{
			"status": RunPaused, "reply": run.Reply, "state": run.State, "expire_time": run.ExpireTime, "update_time": t}).Error
	})
	if err != nil {
		return fmt.Errorf("pause run %s: %w", run.ID, classify(err))
	}
	return nil
}

// MoveRun moves run id from status from to status to with a conditional
// update, and reports whether this call moved it: of two replicas
// resuming a run at once, one wins, and only it sends anything.
func (s *Store) MoveRun(ctx context.Context, id, from, to string) (bool, error) {
	won, err := claim(ctx, func() (bool, error) {
		res := s.db.WithContext(ctx).Model(&Run{}).Where("run_id = ? AND status = ?", id, from).
			Updates(map[string]any{"status": to, "update_time": msNow()})
		return res.RowsAffected == 1, res.Error
	})
	if err != nil {
		return false, fmt.Errorf("move run %s from %s to %s: %w", id, from, to, classify(err))
	}
	return won, nil
}

// ReturnStalledRuns gives back to paused every run claimed for a resume
// (resuming) before before and never started: a resume that could not
// go on and could not give its run back either (the database gone
// between the claim and the give back) left it resuming, refused by
// every later resume. A resume that starts its loop moves its run on to
// running first, so a run still resuming has sent nothing; before is
// the caller's, later than any resume still between its claim and its
// loop. Any replica may call it: the update is conditional, and a run
// given back is claimed again as any paused run (MoveRun). A run past
// its expiry is given back expired, in the same update: one claimed from
// expired (a late resume's) given back paused would be read, until the
// next ExpireRuns, as a paused run whose every item is decided, an item
// approved before the expiry sent (review 75). It returns how many runs
// it gave back.
func (s *Store) ReturnStalledRuns(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	_, err := claim(ctx, func() (bool, error) {
		t := msNow()
		res := s.db.WithContext(ctx).Model(&Run{}).Where("status = ? AND update_time < ?", RunResuming, before.UTC()).
			Updates(map[string]any{"update_time": t,
				"status": gorm.Expr("CASE WHEN expire_time IS NOT NULL AND expire_time < ? THEN ? ELSE ? END", t, RunExpired, RunPaused)})
		n = res.RowsAffected
		return n > 0, res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("give back stalled resumes: %w", classify(err))
	}
	return n, nil
}

// PendingItems returns the items of run id, oldest first.
func (s *Store) PendingItems(ctx context.Context, runID string) ([]PendingItem, error) {
	var out []PendingItem
	if err := s.db.WithContext(ctx).Where("run_id = ?", runID).Order("create_time, pending_id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("pending items of run %s: %w", runID, classify(err))
	}
	return out, nil
}

// DecideItem records the outcome of a waiting item, conditionally: it
// reports false when the item was no longer waiting, or when deciding it
// conflicted with another decision (claim).
func (s *Store) DecideItem(ctx context.Context, id, outcome, by, reason string) (bool, error) {
	won, err := claim(ctx, func() (bool, error) {
		res := s.db.WithContext(ctx).Model(&PendingItem{}).Where("pending_id = ? AND status = ?", id, PendingWaiting).
			Updates(map[string]any{"status": outcome, "decided_by": by, "reason": reason, "decided_time": msNow()})
		return res.RowsAffected == 1, res.Error
	})
	if err != nil {
		return false, fmt.Errorf("decide pending item: %w", classify(err))
	}
	return won, nil
}

// ExpireRuns closes as expired every run paused past its expiry, and
// their waiting items; any replica may call it. The runs keep their
// state, so that a late resume can tell the model. It returns how many
// items it closed.
func (s *Store) ExpireRuns(ctx context.Context) (int64, error) {
	t := msNow()
	var n int64
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		var ids []string
		if err := tx.Model(&Run{}).Where("status = ? AND expire_time < ?", RunPaused, t).Pluck("run_id", &ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		res := tx.Model(&Run{}).Where("run_id IN ? AND status = ?", ids, RunPaused).
			Updates(map[string]any{"status": RunExpired, "update_time": t})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return nil // another replica closed them
		}
		res = tx.Model(&PendingItem{}).Where("run_id IN ? AND status = ?", ids, PendingWaiting).
			Updates(map[string]any{"status": RunExpired, "decided_time": t})
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("expire paused runs: %w", classify(err))
	}
	return n, nil
}

// MarkItemStale records that an approved item's request changed before
// it was sent (the plugin or a credential changed): nothing was sent.
func (s *Store) MarkItemStale(ctx context.Context, id string) error {
	if err := s.db.WithContext(ctx).Model(&PendingItem{}).Where("pending_id = ?", id).Update("status", "stale").Error; err != nil {
		return fmt.Errorf("mark pending item stale: %w", classify(err))
	}
	return nil
}

// CreatePendingItem stores the pending item of a direct call, within
// the bounds of pending items (admitPending).
func (s *Store) CreatePendingItem(ctx context.Context, it *PendingItem) error {
	it.Status, it.CreateTime = PendingWaiting, msNow()
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		if err := s.admitPending(tx, it.UserID, []PendingItem{*it}, it.CreateTime); err != nil {
			return err
		}
		return tx.Create(it).Error
	})
	if err != nil {
		return fmt.Errorf("create pending item: %w", classify(err))
	}
	return nil
}

// GetPendingItem returns a pending item by id.
func (s *Store) GetPendingItem(ctx context.Context, id string) (*PendingItem, error) {
	var it PendingItem
	if err := s.db.WithContext(ctx).Where("pending_id = ?", id).Take(&it).Error; err != nil {
		return nil, fmt.Errorf("get pending item: %w", classify(err))
	}
	return &it, nil
}

// Statuses of a direct call's item after approval: sent once claimed by
// the call that sends it.
const PendingSent = "sent"

// FindItem returns the newest item of principal with digest in status,
// or ErrNotFound.
func (s *Store) FindItem(ctx context.Context, principal, digest, status string) (*PendingItem, error) {
	var it PendingItem
	err := s.db.WithContext(ctx).Where("principal = ? AND digest = ? AND status = ? AND run_id = ?", principal, digest, status, "").
		Order("create_time DESC").Take(&it).Error
	if err != nil {
		return nil, fmt.Errorf("find pending item: %w", classify(err))
	}
	return &it, nil
}

// ClaimApproved moves an approved item to sent, conditionally: it
// reports whether this call claimed it, so that one approval sends once
// (false too when the claim conflicted with another: see claim).
func (s *Store) ClaimApproved(ctx context.Context, id string) (bool, error) {
	won, err := claim(ctx, func() (bool, error) {
		res := s.db.WithContext(ctx).Model(&PendingItem{}).Where("pending_id = ? AND status = ?", id, "approved").Update("status", PendingSent)
		return res.RowsAffected == 1, res.Error
	})
	if err != nil {
		return false, fmt.Errorf("claim approved item: %w", classify(err))
	}
	return won, nil
}
