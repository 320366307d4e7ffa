package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm/clause"
)

// Replica is a row of sys_ai_replica (migration 00033): a serve process
// on this database and the keyed digests of its operator settings, so
// that replicas started with different tokens find each other out.
type Replica struct {
	ReplicaID string    `gorm:"column:replica_id;primaryKey"`
	Host      string    `gorm:"column:host"`
	Version   string    `gorm:"column:version"`
	Settings  string    `gorm:"column:settings"`
	StartTime time.Time `gorm:"column:start_time"`
	SeenTime  time.Time `gorm:"column:seen_time"`
}

// TableName maps Replica onto its table.
func (Replica) TableName() string { return "sys_ai_replica" }

// PutReplica writes r (inserted, or its row's settings and seen time
// updated), seen now.
func (s *Store) PutReplica(ctx context.Context, r *Replica) error {
	r.SeenTime = now()
	if r.StartTime.IsZero() {
		r.StartTime = r.SeenTime
	}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "replica_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"host", "version", "settings", "seen_time"}),
	}).Create(r).Error
	if err != nil {
		return fmt.Errorf("record replica %s: %w", r.ReplicaID, classify(err))
	}
	return nil
}

// Replicas lists the replicas seen since since, and deletes the rows of
// those not seen since before (replicas stopped without deleting theirs:
// a kill -9, a lost host).
func (s *Store) Replicas(ctx context.Context, since, before time.Time) ([]Replica, error) {
	if err := s.db.WithContext(ctx).Where("seen_time < ?", dbTime(before)).Delete(&Replica{}).Error; err != nil {
		return nil, fmt.Errorf("forget stopped replicas: %w", classify(err))
	}
	var rows []Replica
	if err := s.db.WithContext(ctx).Where("seen_time >= ?", dbTime(since)).Order("start_time, replica_id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list replicas: %w", classify(err))
	}
	return rows, nil
}

// DeleteReplica deletes a replica's row: it stops.
func (s *Store) DeleteReplica(ctx context.Context, id string) error {
	if err := s.db.WithContext(ctx).Where("replica_id = ?", id).Delete(&Replica{}).Error; err != nil {
		return fmt.Errorf("forget replica %s: %w", id, classify(err))
	}
	return nil
}
