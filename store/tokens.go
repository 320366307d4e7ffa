package store

import (
	"context"
	"fmt"
	"time"
)

// CreateToken inserts t (whose Hash is the hex sha256 of the secret) and
// sets its ID and times. A hash already present yields ErrDuplicate.
func (s *Store) CreateToken(ctx context.Context, t *Token) error {
	t.stampCreate()
	t.ExpireTime = dbTimePtr(t.ExpireTime)
	t.LastUsedTime = dbTimePtr(t.LastUsedTime)
	if err := s.db.WithContext(ctx).Create(t).Error; err != nil {
		return fmt.Errorf("create token %q of user %d: %w", t.Name, t.UserID, classify(err))
	}
	return nil
}

// FindTokenByHash returns the token whose hash is hash, or ErrNotFound.
// Expiry is the caller's to check.
func (s *Store) FindTokenByHash(ctx context.Context, hash string) (*Token, error) {
	var t Token
	if err := s.db.WithContext(ctx).Where("token_hash = ?", hash).Take(&t).Error; err != nil {
		// The hash identifies a secret: keep it out of the message.
		return nil, fmt.Errorf("find token by hash: %w", classify(err))
	}
	return &t, nil
}

// ListTokens returns the tokens of one user, or of everyone when userID is
// nil, in creation order.
func (s *Store) ListTokens(ctx context.Context, userID *int64) ([]Token, error) {
	q := s.db.WithContext(ctx).Order("token_id")
	if userID != nil {
		q = q.Where("user_id = ?", *userID)
	}
	var ts []Token
	if err := q.Find(&ts).Error; err != nil {
		return nil, fmt.Errorf("list tokens: %w", classify(err))
	}
	return ts, nil
}

// DeleteToken removes token id, or returns ErrNotFound.
func (s *Store) DeleteToken(ctx context.Context, id int64) error {
	if err := affected(s.db.WithContext(ctx).Where("token_id = ?", id).Delete(&Token{})); err != nil {
		return fmt.Errorf("delete token %d: %w", id, err)
	}
	return nil
}

// TouchToken records that token id was used at t.
func (s *Store) TouchToken(ctx context.Context, id int64, t time.Time) error {
	res := s.db.WithContext(ctx).Model(&Token{}).Where("token_id = ?", id).Update("last_used_time", dbTime(t))
	if err := affected(res); err != nil {
		return fmt.Errorf("touch token %d: %w", id, err)
	}
	return nil
}
