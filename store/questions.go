package store

import (
	"context"
	"fmt"
)

// An upstream MCP server's question put to the person on the approval
// page (issue 48 point 4) is a pending item of kind KindQuestion,
// bounded like every other (admitPending): the call that asked waits for
// it on the replica that holds it, reading the row, while the person
// answers on any replica.
const (
	KindQuestion = "question"
	// PendingAnswered is a question the person answered.
	PendingAnswered = "answered"
)

// AnswerItem records the person's answer (JSON) to a waiting question,
// conditionally: false when it was answered, or closed, before.
func (s *Store) AnswerItem(ctx context.Context, id, by, answer string) (bool, error) {
	won, err := claim(ctx, func() (bool, error) {
		res := s.db.WithContext(ctx).Model(&PendingItem{}).Where("pending_id = ? AND kind = ? AND status = ?", id, KindQuestion, PendingWaiting).
			Updates(map[string]any{"status": PendingAnswered, "answer": answer, "decided_by": by, "decided_time": msNow()})
		return res.RowsAffected == 1, res.Error
	})
	if err != nil {
		return false, fmt.Errorf("answer question: %w", classify(err))
	}
	return won, nil
}

// KeepAnswer replaces a taken answer with what is kept of it (its
// action): what the person typed is the upstream's to know, not the
// table's.
func (s *Store) KeepAnswer(ctx context.Context, id, kept string) error {
	if err := s.db.WithContext(ctx).Model(&PendingItem{}).Where("pending_id = ?", id).Update("answer", kept).Error; err != nil {
		return fmt.Errorf("keep answer: %w", classify(err))
	}
	return nil
}

// SetOutcome records what the call did after a question was answered,
// for the retry that waits for it on any replica.
func (s *Store) SetOutcome(ctx context.Context, id, outcome string) error {
	if err := s.db.WithContext(ctx).Model(&PendingItem{}).Where("pending_id = ?", id).Update("outcome", outcome).Error; err != nil {
		return fmt.Errorf("set question outcome: %w", classify(err))
	}
	return nil
}
