package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Bounds of pending items (issue 44 point 5): a per-user token prepares
// calls at will, so what waits for a person is bounded in number per
// user, in size per item, and in time once closed.
const (
	// DefaultPendingMaxPerUser is how many items may wait for one user at
	// once (BLINDEXEC_PENDING_MAX_PER_USER).
	DefaultPendingMaxPerUser = 100
	// MaxPendingItem bounds the item document one pending item stores
	// (the arguments and the prepared request as shown): with the
	// request's body already cut to 16 KiB, room for arguments of a
	// consequential call a person can still read.
	MaxPendingItem = 64 << 10
	// DefaultPendingRetention is how long a decided or expired item is
	// kept (BLINDEXEC_PENDING_RETENTION_MS).
	DefaultPendingRetention = 7 * 24 * time.Hour
)

// TooManyPendingError refuses a pending item past the per-user limit:
// Waiting items already wait for the user, of at most Max.
type TooManyPendingError struct {
	UserID  *int64
	Waiting int64
	Max     int
}

func (e *TooManyPendingError) Error() string {
	return fmt.Sprintf("%d calls wait for a person already, of at most %d per user", e.Waiting, e.Max)
}

// PendingTooLargeError refuses a pending item whose document is larger
// than MaxPendingItem.
type PendingTooLargeError struct {
	Size, Max int
}

func (e *PendingTooLargeError) Error() string {
	return fmt.Sprintf("the call's pending item is %d bytes, more than the %d a pending item may hold", e.Size, e.Max)
}

// SetPendingMax sets how many items may wait for one user at once
// (DefaultPendingMaxPerUser when n <= 0). Set it before the store is
// used.
func (s *Store) SetPendingMax(n int) { s.pendingMax = n }

func (s *Store) pendingMaxPerUser() int {
	if s.pendingMax <= 0 {
		return DefaultPendingMaxPerUser
	}
	return s.pendingMax
}

// pendingUser is a row of sys_ai_pending_user: written first by every
// transaction adding pending items of its user, it serializes them per
// user, so that the count admitPending checks is exact on every replica.
type pendingUser struct {
	UserID     int64     `gorm:"column:user_id;primaryKey;autoIncrement:false"`
	UpdateTime time.Time `gorm:"column:update_time"`
}

func (pendingUser) TableName() string { return "sys_ai_pending_user" }

// admitPending checks, in tx, that items may be added for user: each
// within MaxPendingItem, and no more waiting then than the per-user
// limit. It locks the user's row first (an upsert: the row lock holds
// until tx ends), then counts what waits: a concurrent transaction of
// the same user waits for this one, then counts its items.
func (s *Store) admitPending(tx *gorm.DB, user *int64, items []PendingItem, t time.Time) error {
	for _, it := range items {
		if len(it.Item) > MaxPendingItem {
			return &PendingTooLargeError{Size: len(it.Item), Max: MaxPendingItem}
		}
	}
	key := int64(0)
	if user != nil {
		key = *user
	}
	err := tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "user_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"update_time"}),
	}).Create(&pendingUser{UserID: key, UpdateTime: t}).Error
	if err != nil {
		return err
	}
	q := tx.Model(&PendingItem{}).Where("status = ? AND expire_time > ?", PendingWaiting, t)
	if user == nil {
		q = q.Where("user_id IS NULL")
	} else {
		q = q.Where("user_id = ?", *user)
	}
	var n int64
	if err := q.Count(&n).Error; err != nil {
		return err
	}
	if max := s.pendingMaxPerUser(); n+int64(len(items)) > int64(max) {
		return &TooManyPendingError{UserID: user, Waiting: n, Max: max}
	}
	return nil
}

// CountWaiting is how many items wait for user (nil: calls naming no
// user) now.
func (s *Store) CountWaiting(ctx context.Context, user *int64) (int64, error) {
	q := s.db.WithContext(ctx).Model(&PendingItem{}).Where("status = ? AND expire_time > ?", PendingWaiting, msNow())
	if user == nil {
		q = q.Where("user_id IS NULL")
	} else {
		q = q.Where("user_id = ?", *user)
	}
	var n int64
	if err := q.Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count waiting items: %w", classify(err))
	}
	return n, nil
}

// Inbox pages (GET /v1/pending, GET /v1/runs?status=paused): newest
// first, at most MaxPage rows each, continued by an opaque cursor.
const (
	DefaultPage = 50
	MaxPage     = 100
)

// ErrBadCursor is a cursor this store did not hand out.
var ErrBadCursor = errors.New("not a cursor of this listing")

// cursor is the position after the last row of a page: its create_time
// (Unix milliseconds) and id, base64url.
type cursor struct {
	ms int64
	id string
}

func (c cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.ms, 10) + "." + c.id))
}

func parseCursor(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, ErrBadCursor
	}
	ms, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || id == "" || len(id) > 64 {
		return nil, ErrBadCursor
	}
	return &cursor{ms: n, id: id}, nil
}

// readPage reads a page of q, newest first by create_time and idCol: at
// most limit rows (DefaultPage when 0, at most MaxPage) after the cursor
// after ("" for the first), and the cursor of the next page ("" at the
// end). at is where a row stands.
func readPage[T any](q *gorm.DB, idCol, after string, limit int, at func(*T) cursor) ([]T, string, error) {
	c, err := parseCursor(after)
	if err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		limit = DefaultPage
	}
	limit = min(limit, MaxPage)
	if c != nil {
		t := time.UnixMilli(c.ms).UTC()
		q = q.Where("(create_time < ? OR (create_time = ? AND "+idCol+" < ?))", t, t, c.id)
	}
	// One more than the page tells whether another follows.
	var out []T
	if err := q.Order("create_time DESC, " + idCol + " DESC").Limit(limit + 1).Find(&out).Error; err != nil {
		return nil, "", classify(err)
	}
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	return out, at(&out[limit-1]).String(), nil
}

// keepIn narrows q to the rows whose col is one of vals: nil vals keep
// every row, an empty list none.
func keepIn(q *gorm.DB, col string, vals []string) *gorm.DB {
	switch {
	case vals == nil:
		return q
	case len(vals) == 0:
		return q.Where("1 = 0")
	}
	return q.Where(col+" IN ?", vals)
}

// WaitingFilter selects the items WaitingPage lists: each set field
// narrows.
type WaitingFilter struct {
	User *int64
	// Tools, when not nil, keeps the items of these tools only (none
	// when empty).
	Tools []string
}

// WaitingPage lists the waiting items of direct calls filter selects,
// newest first, a page at a time (readPage).
func (s *Store) WaitingPage(ctx context.Context, filter WaitingFilter, after string, limit int) ([]PendingItem, string, error) {
	q := s.db.WithContext(ctx).Where("run_id = ? AND status = ? AND expire_time > ?", "", PendingWaiting, msNow())
	if filter.User != nil {
		q = q.Where("user_id = ?", *filter.User)
	}
	q = keepIn(q, "tool", filter.Tools)
	out, next, err := readPage(q, "pending_id", after, limit, func(it *PendingItem) cursor { return cursor{ms: it.CreateTime.UnixMilli(), id: it.ID} })
	if err != nil {
		return nil, "", fmt.Errorf("waiting items: %w", err)
	}
	return out, next, nil
}

// WaitingItemsOf returns the waiting items of the runs ids, oldest
// first: one query for a page of runs.
func (s *Store) WaitingItemsOf(ctx context.Context, ids []string) ([]PendingItem, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []PendingItem
	err := s.db.WithContext(ctx).Where("run_id IN ? AND status = ?", ids, PendingWaiting).Order("create_time, pending_id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("waiting items of runs: %w", classify(err))
	}
	return out, nil
}

// pruneBatch bounds the rows one statement of PrunePending deletes, so
// that a large backlog never holds a long lock.
const pruneBatch = 500

// PrunePending removes what waits for nobody any more and closed before
// cutoff: items of direct calls decided, sent or expired; the items of
// runs that ended (or expired) and were last changed before cutoff; and
// the state of those expired runs, which a late resume would need (it is
// then answered run_not_paused). The audit log (sys_ai_admin_log) and the
// execution records keep the decisions. It returns how many items it
// removed.
func (s *Store) PrunePending(ctx context.Context, cutoff time.Time) (int64, error) {
	cutoff = cutoff.UTC().Truncate(time.Millisecond)
	if _, err := s.ExpireRuns(ctx); err != nil {
		return 0, err
	}
	db := s.db.WithContext(ctx)
	ended := db.Model(&Run{}).Select("run_id").Where("status NOT IN ? AND update_time < ?", []string{RunPaused, RunResuming, RunRunning}, cutoff)
	var total int64
	for _, where := range []*gorm.DB{
		db.Where("run_id = ? AND status <> ? AND COALESCE(decided_time, expire_time) < ?", "", PendingWaiting, cutoff),
		db.Where("run_id = ? AND status = ? AND expire_time < ?", "", PendingWaiting, cutoff),
		db.Where("run_id <> ? AND run_id IN (?)", "", ended),
	} {
		for {
			var ids []string
			if err := where.Session(&gorm.Session{}).Model(&PendingItem{}).Limit(pruneBatch).Pluck("pending_id", &ids).Error; err != nil {
				return total, fmt.Errorf("prune pending items: %w", classify(err))
			}
			if len(ids) == 0 {
				break
			}
			res := db.Where("pending_id IN ?", ids).Delete(&PendingItem{})
			if res.Error != nil {
				return total, fmt.Errorf("prune pending items: %w", classify(res.Error))
			}
			total += res.RowsAffected
			if len(ids) < pruneBatch {
				break
			}
		}
	}
	err := db.Model(&Run{}).Where("status = ? AND update_time < ? AND state IS NOT NULL", RunExpired, cutoff).Update("state", nil).Error
	if err != nil {
		return total, fmt.Errorf("prune expired runs' state: %w", classify(err))
	}
	return total, nil
}
