package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// PutCredential inserts or replaces the credential (c.UserID, c.Key). On
// replace the creation audit is kept; either way c's ID and times are set
// from the stored row.
func (s *Store) PutCredential(ctx context.Context, c *Credential) error {
	c.stampCreate()
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		// Atomic on both dialects: ON DUPLICATE KEY UPDATE on MySQL, ON
		// CONFLICT ... DO UPDATE on SQLite.
		err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "user_id"}, {Name: "credential_key"}},
			DoUpdates: clause.AssignmentColumns([]string{"credential_value", "key_id", "update_by", "update_time"}),
		}).Omit("credential_id").Create(c).Error
		if err != nil {
			return err
		}
		// The insert id is meaningless after an update, so read the row back.
		var stored Credential
		err = tx.Select("credential_id", "create_by", "create_time").
			Where("user_id = ? AND credential_key = ?", c.UserID, c.Key).Take(&stored).Error
		c.ID, c.CreateBy, c.CreateTime = stored.ID, stored.CreateBy, stored.CreateTime
		return err
	})
	if err != nil {
		return fmt.Errorf("put credential %q of user %d: %w", c.Key, c.UserID, classify(err))
	}
	return nil
}

// GetCredentials returns the user's credentials among keys, ordered by key.
// Missing keys are simply absent from the result.
func (s *Store) GetCredentials(ctx context.Context, userID int64, keys []string) ([]Credential, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var cs []Credential
	err := s.db.WithContext(ctx).Where("user_id = ? AND credential_key IN ?", userID, keys).
		Order("credential_key").Find(&cs).Error
	if err != nil {
		return nil, fmt.Errorf("get credentials of user %d: %w", userID, classify(err))
	}
	return cs, nil
}

// ListCredentials returns all the user's credentials, ordered by key.
func (s *Store) ListCredentials(ctx context.Context, userID int64) ([]Credential, error) {
	var cs []Credential
	if err := s.db.WithContext(ctx).Where("user_id = ?", userID).Order("credential_key").Find(&cs).Error; err != nil {
		return nil, fmt.Errorf("list credentials of user %d: %w", userID, classify(err))
	}
	return cs, nil
}

// DeleteCredential removes the user's credential key, or returns ErrNotFound.
func (s *Store) DeleteCredential(ctx context.Context, userID int64, key string) error {
	res := s.db.WithContext(ctx).Where("user_id = ? AND credential_key = ?", userID, key).Delete(&Credential{})
	if err := affected(res); err != nil {
		return fmt.Errorf("delete credential %q of user %d: %w", key, userID, err)
	}
	return nil
}

// credentialBatch is how many rows EachCredential reads at a time.
const credentialBatch = 200

// EachCredential calls fn on every credential in ID order, stopping at the
// first error. Rows are read in batches with no cursor held open while fn
// runs, so fn may write to the store.
func (s *Store) EachCredential(ctx context.Context, fn func(*Credential) error) error {
	var last int64
	for {
		var batch []Credential
		err := s.db.WithContext(ctx).Where("credential_id > ?", last).
			Order("credential_id").Limit(credentialBatch).Find(&batch).Error
		if err != nil {
			return fmt.Errorf("read credentials after id %d: %w", last, classify(err))
		}
		for i := range batch {
			if err := fn(&batch[i]); err != nil {
				return err
			}
		}
		if len(batch) < credentialBatch {
			return nil
		}
		last = batch[len(batch)-1].ID
	}
}

// UpdateCredentialValue replaces the stored value of credential id with
// newValue under keyID, but only if it still holds oldValue: a value set
// concurrently (for instance during key rotation) is never overwritten.
// It returns ErrNotFound when the row is gone or its value changed. The
// audit times are left alone: the secret itself did not change.
func (s *Store) UpdateCredentialValue(ctx context.Context, id int64, oldValue, newValue, keyID string) error {
	res := s.db.WithContext(ctx).Model(&Credential{}).
		Where("credential_id = ? AND credential_value = ?", id, oldValue).
		Updates(map[string]any{"credential_value": newValue, "key_id": keyID})
	if err := affected(res); err != nil {
		return fmt.Errorf("update credential id %d: %w", id, err)
	}
	return nil
}
