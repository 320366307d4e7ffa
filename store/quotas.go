package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// QuotaRule is a row of sys_ai_quota_rule: a limit on the calls (or the
// run tokens) of one user, or of every user each on their own. Package
// quota validates and applies it.
type QuotaRule struct {
	ID            int64  `gorm:"column:rule_id;primaryKey;autoIncrement"`
	Name          string `gorm:"column:rule_name"`
	UserID        *int64 `gorm:"column:user_id"` // nil: every user, each on their own
	Plugins       JSON   `gorm:"column:plugins"`
	Tags          JSON   `gorm:"column:tags"`
	Consequential string `gorm:"column:consequential"` // "1" or "0"
	Calls         *int64 `gorm:"column:calls"`
	Window        string `gorm:"column:window_unit"`
	RunTokens     *int64 `gorm:"column:run_tokens_per_day"`
	Audit
}

// TableName maps QuotaRule onto its table.
func (QuotaRule) TableName() string { return "sys_ai_quota_rule" }

// CreateQuotaRule inserts r and sets its ID and times; a name already
// taken yields ErrDuplicate.
func (s *Store) CreateQuotaRule(ctx context.Context, r *QuotaRule) error {
	r.stampCreate()
	if err := s.db.WithContext(ctx).Create(r).Error; err != nil {
		return fmt.Errorf("create quota rule %q: %w", r.Name, classify(err))
	}
	return nil
}

// ListQuotaRules returns every rule, in id order.
func (s *Store) ListQuotaRules(ctx context.Context) ([]QuotaRule, error) {
	var rs []QuotaRule
	if err := s.db.WithContext(ctx).Order("rule_id").Find(&rs).Error; err != nil {
		return nil, fmt.Errorf("list quota rules: %w", classify(err))
	}
	return rs, nil
}

// DeleteQuotaRule removes the rule called name and what was leased of it,
// or returns ErrNotFound.
func (s *Store) DeleteQuotaRule(ctx context.Context, name string) error {
	var r QuotaRule
	if err := s.db.WithContext(ctx).Where("rule_name = ?", name).Take(&r).Error; err != nil {
		return fmt.Errorf("delete quota rule %q: %w", name, classify(err))
	}
	if err := affected(s.db.WithContext(ctx).Where("rule_id = ?", r.ID).Delete(&QuotaRule{})); err != nil {
		return fmt.Errorf("delete quota rule %q: %w", name, err)
	}
	if _, err := s.raw().ExecContext(ctx, "DELETE FROM sys_ai_quota_use WHERE rule_id = ?", r.ID); err != nil {
		return fmt.Errorf("delete quota rule %q: its use: %w", name, err)
	}
	return nil
}

// QuotaKey names one user's window of one rule.
type QuotaKey struct {
	Rule        int64
	User        int64
	WindowStart int64 // unix seconds
}

// LeaseQuota takes up to want of the allowance left under limit in k's
// window and returns how much it took (0: none left) and the allowance
// leased in the window afterwards. One transaction locks the window's row
// while it is read and written, so replicas never lease more than limit
// together. The row is created first, outside it, when missing: a locking
// read of a missing row would lock the gap, and two replicas inserting
// into it would deadlock. Before that, a plain read refuses a window
// already spent.
//
// A conflict (ErrConflict: a deadlock on one server, a certification
// failure on a Galera cluster, where every node's leases of a window
// write its one row) is retried, with jittered pauses; when the conflicts
// outlast the tries, a plain read of the row tells a window spent (0
// granted, no error: the call is refused for the limit) from one that is
// not (the conflict: the call fails closed).
func (s *Store) LeaseQuota(ctx context.Context, k QuotaKey, limit, want int64) (granted, used int64, err error) {
	err = retryConflicts(ctx, leaseAttempts, func() error {
		// A plain read first: a spent window is refused without a lock,
		// so that refusals never conflict with the leases still granted.
		seen, found, err := s.quotaUse(ctx, k)
		switch {
		case err != nil:
			return err
		case found && seen >= limit:
			granted, used = 0, seen
			return nil
		case !found:
			if err := s.createQuotaUse(ctx, k); err != nil {
				return err
			}
		}
		var missing bool
		granted, used, missing, err = s.leaseQuota(ctx, k, limit, want)
		if err == nil && missing {
			// On a cluster another node's insert may not be applied on
			// this one yet: a conflict, to be tried again.
			return fmt.Errorf("%w: the window's row is not there yet", ErrConflict)
		}
		return err
	})
	if isConflict(err) {
		if seen, _, rerr := s.quotaUse(ctx, k); rerr == nil && seen >= limit {
			return 0, seen, nil
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("lease quota: %w", classify(err))
	}
	return granted, used, nil
}

// createQuotaUse inserts k's window's row unless it is there. Two nodes of
// a cluster inserting it at once conflict: the row is there either way.
func (s *Store) createQuotaUse(ctx context.Context, k QuotaKey) error {
	insert := "INSERT OR IGNORE"
	if s.dialect == DialectMySQL {
		insert = "INSERT IGNORE"
	}
	_, err := s.raw().ExecContext(ctx, insert+" INTO sys_ai_quota_use (rule_id, user_id, window_start, used, update_time) VALUES (?, ?, ?, 0, ?)",
		k.Rule, k.User, k.WindowStart, now())
	if isConflict(err) {
		return nil
	}
	return err
}

func (s *Store) leaseQuota(ctx context.Context, k QuotaKey, limit, want int64) (granted, used int64, missing bool, err error) {
	tx, err := beginBounded(ctx, s.sqlDB, nil)
	if err != nil {
		return 0, 0, false, err
	}
	defer tx.Rollback()
	lock := ""
	if s.dialect == DialectMySQL {
		lock = " FOR UPDATE"
	}
	b := bounded{tx} // each statement of it
	err = b.QueryRowContext(ctx, "SELECT used FROM sys_ai_quota_use WHERE rule_id = ? AND user_id = ? AND window_start = ?"+lock,
		k.Rule, k.User, k.WindowStart).Scan(&used)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, true, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	granted = max(0, min(want, limit-used))
	if granted == 0 {
		return 0, used, false, nil // nothing written: a refusal costs one read
	}
	used += granted
	if _, err = b.ExecContext(ctx, "UPDATE sys_ai_quota_use SET used = ?, update_time = ? WHERE rule_id = ? AND user_id = ? AND window_start = ?",
		used, now(), k.Rule, k.User, k.WindowStart); err != nil {
		return 0, 0, false, err
	}
	return granted, used, false, tx.Commit()
}

// ReturnQuota gives back n units of k's window a replica leased and did
// not spend.
func (s *Store) ReturnQuota(ctx context.Context, k QuotaKey, n int64) error {
	_, err := s.raw().ExecContext(ctx, "UPDATE sys_ai_quota_use SET used = CASE WHEN used > ? THEN used - ? ELSE 0 END, update_time = ? WHERE rule_id = ? AND user_id = ? AND window_start = ?",
		n, n, now(), k.Rule, k.User, k.WindowStart)
	if err != nil {
		return fmt.Errorf("return quota: %w", err)
	}
	return nil
}

// QuotaUsed returns the allowance leased in k's window (0: none).
func (s *Store) QuotaUsed(ctx context.Context, k QuotaKey) (int64, error) {
	used, _, err := s.quotaUse(ctx, k)
	if err != nil {
		return 0, fmt.Errorf("read quota use: %w", err)
	}
	return used, nil
}

// quotaUse reads k's window's row without locking it: found false when
// there is none.
func (s *Store) quotaUse(ctx context.Context, k QuotaKey) (used int64, found bool, err error) {
	err = s.raw().QueryRowContext(ctx, "SELECT used FROM sys_ai_quota_use WHERE rule_id = ? AND user_id = ? AND window_start = ?",
		k.Rule, k.User, k.WindowStart).Scan(&used)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return used, err == nil, err
}

// PruneQuotaUse deletes the use of windows that started before cutoff
// (unix seconds): they are over.
func (s *Store) PruneQuotaUse(ctx context.Context, cutoff int64) error {
	if _, err := s.raw().ExecContext(ctx, "DELETE FROM sys_ai_quota_use WHERE window_start < ?", cutoff); err != nil {
		return fmt.Errorf("prune quota use: %w", err)
	}
	return nil
}
