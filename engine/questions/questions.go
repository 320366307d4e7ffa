// Package questions keeps an upstream MCP server's questions for the
// person as pending items (issue 48 point 4): when the person cannot be
// asked in the call's own channel (a run, POST /v1/execute, an MCP client
// that declared no elicitation), the question waits on the approval page;
// a client of 2026-07-28 is asked it by input_required, and its retry may
// reach any replica. The items live in the database every replica shares:
// the call waiting for an answer reads its item, so the person may answer
// anywhere.
package questions

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/blindexec/blindexec/confirm"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/store"
)

// DefaultPoll is how often a call waiting for an answer reads its item.
const DefaultPoll = 200 * time.Millisecond

// noDeadline is how long a question of a call without a deadline waits
// (the executor gives every call one: its timeout).
const noDeadline = 10 * time.Minute

// Inbox keeps the questions in st (implements mcpserver.Inbox), and the
// answers the calls take in its audit log (engine.AnswerLog).
type Inbox struct {
	Store *store.Store
	Poll  time.Duration // DefaultPoll when 0
}

// Item is a question as its pending item shows it (GET /v1/pending): the
// MCP server asking, its message as written and as the person reads it
// (Prompt), a form's requestedSchema whole (defaults and enums), or a
// link and its host; the tool and run it comes during, and its expiry.
type Item struct {
	ID              string          `json:"id"`
	Kind            string          `json:"kind"`
	Tool            string          `json:"tool"`
	RunID           string          `json:"run_id,omitempty"`
	Server          string          `json:"server"`
	Message         string          `json:"message"`
	Prompt          string          `json:"prompt"`
	Mode            string          `json:"mode"`
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty"`
	URL             string          `json:"url,omitempty"`
	Host            string          `json:"host,omitempty"`
	ElicitationID   string          `json:"elicitation_id,omitempty"`
	ExpiresAt       time.Time       `json:"expires_at"`
}

// Question is the question it shows.
func (it *Item) Question() engine.Question {
	return engine.Question{Server: it.Server, Message: it.Message, Mode: it.Mode, Schema: it.RequestedSchema, URL: it.URL,
		ElicitationID: it.ElicitationID, Tool: it.Tool, RunID: it.RunID}
}

// Parse reads a question's pending item document.
func Parse(doc []byte) (*Item, error) {
	var it Item
	if err := json.Unmarshal(doc, &it); err != nil {
		return nil, fmt.Errorf("a question's pending item: %w", err)
	}
	return &it, nil
}

// Post stores q, asked during a call by made, as a question waiting for
// the person until the call's deadline; the pending items' bounds apply
// (refused: the error names the bound, for the upstream to read).
func (b *Inbox) Post(ctx context.Context, by string, q engine.Question) (string, error) {
	expires := time.Now().Add(noDeadline)
	if d, ok := ctx.Deadline(); ok {
		expires = d
	}
	it := Item{ID: confirm.NewID(), Kind: store.KindQuestion, Tool: q.Tool, RunID: q.RunID, Server: q.Server, Message: q.Message,
		Prompt: q.Prompt(), Mode: q.Mode, RequestedSchema: q.Schema, URL: q.URL, ElicitationID: q.ElicitationID,
		ExpiresAt: expires.UTC().Truncate(time.Millisecond)}
	if q.Mode == engine.QuestionURL {
		it.Host = q.Host()
	}
	doc, err := json.Marshal(it)
	if err != nil {
		return "", fmt.Errorf("encode question: %w", err)
	}
	var user *int64
	if q.User != 0 {
		user = &q.User
	}
	sum := sha256.Sum256(doc)
	ctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	defer cancel()
	err = b.Store.CreatePendingItem(ctx, &store.PendingItem{ID: it.ID, UserID: user, Principal: by, Kind: store.KindQuestion,
		Tool: q.Tool, Digest: hex.EncodeToString(sum[:]), Item: doc, ExpireTime: it.ExpiresAt})
	if err != nil {
		return "", refused(err)
	}
	return it.ID, nil
}

// Await waits for the answer to the question id, reading its item, until
// ctx ends or the item expires: the question is then closed as expired
// and answered cancel, never left waiting. The answer's content, once
// taken, is cleared from the item.
func (b *Inbox) Await(ctx context.Context, id string) (engine.Answer, error) {
	t := time.NewTicker(cmp.Or(b.Poll, DefaultPoll))
	defer t.Stop()
	for {
		// An error reading is the database away for a moment: read again,
		// each read bounded, so that one never answered holds no call.
		rctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
		it, err := b.Store.GetPendingItem(rctx, id)
		cancel()
		if err == nil {
			if it.Status != store.PendingWaiting {
				return b.take(ctx, it)
			}
			if time.Now().After(it.ExpireTime) {
				return b.close(ctx, id)
			}
		}
		select {
		case <-ctx.Done():
			return b.close(ctx, id)
		case <-t.C:
		}
	}
}

// take returns the answer of a question no longer waiting (cancel when it
// was closed unanswered), and clears what the person typed from its item.
func (b *Inbox) take(ctx context.Context, it *store.PendingItem) (engine.Answer, error) {
	if it.Status != store.PendingAnswered || it.Answer == nil {
		return engine.Answer{Action: "cancel"}, nil
	}
	var a engine.Answer
	if err := json.Unmarshal([]byte(*it.Answer), &a); err != nil {
		return engine.Answer{}, fmt.Errorf("the answer to question %s: %w", it.ID, err)
	}
	if a.By != nil {
		a.By.Pending = it.ID
	}
	kept, _ := json.Marshal(engine.Answer{Action: a.Action})
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.QueryTimeout)
	defer cancel()
	if err := b.Store.KeepAnswer(ctx, it.ID, string(kept)); err != nil {
		return engine.Answer{}, err
	}
	return a, nil
}

// close closes the question id as expired, unless an answer came first
// (then taken), and answers cancel.
func (b *Inbox) close(ctx context.Context, id string) (engine.Answer, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.QueryTimeout)
	defer cancel()
	won, err := b.Store.DecideItem(ctx, id, store.RunExpired, "", "")
	if err != nil {
		return engine.Answer{}, err
	}
	if !won {
		if it, err := b.Store.GetPendingItem(ctx, id); err == nil {
			return b.take(ctx, it)
		}
	}
	return engine.Answer{Action: "cancel"}, nil
}

// Ask puts q, asked during a call by made, on the approval page and waits
// for the answer within the call's time (an engine.Asker, with by).
func (b *Inbox) Ask(ctx context.Context, by string, q engine.Question) (engine.Answer, error) {
	id, err := b.Post(ctx, by, q)
	if err != nil {
		return engine.Answer{}, err
	}
	return b.Await(ctx, id)
}

// refused words a refusal by the pending items' bounds for the upstream,
// naming the setting.
func refused(err error) error {
	if many, ok := errors.AsType[*store.TooManyPendingError](err); ok {
		return &engine.NobodyToAskError{Reason: fmt.Sprintf("%d calls of this user wait for a person already, the most BLINDEXEC_PENDING_MAX_PER_USER allows (%d)", many.Waiting, many.Max)}
	}
	if large, ok := errors.AsType[*store.PendingTooLargeError](err); ok {
		return &engine.NobodyToAskError{Reason: large.Error()}
	}
	return err
}

// Answer records by's answer to the question id (a.By: who, and by
// which route, for the audit log once the call takes it): false when it
// was answered, or closed, before.
func (b *Inbox) Answer(ctx context.Context, id, by string, a engine.Answer) (bool, error) {
	doc, err := json.Marshal(a)
	if err != nil {
		return false, fmt.Errorf("encode answer: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	defer cancel()
	return b.Store.AnswerItem(ctx, id, by, string(doc))
}

// Question reads the question id, and until when its call may wait.
func (b *Inbox) Question(ctx context.Context, id string) (engine.Question, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	defer cancel()
	it, err := b.Store.GetPendingItem(ctx, id)
	if err != nil {
		return engine.Question{}, time.Time{}, err
	}
	if it.Kind != store.KindQuestion {
		return engine.Question{}, time.Time{}, fmt.Errorf("pending item %s is not a question", id)
	}
	doc, err := Parse(it.Item)
	if err != nil {
		return engine.Question{}, time.Time{}, err
	}
	q := doc.Question()
	if it.UserID != nil {
		q.User = *it.UserID
	}
	return q, it.ExpireTime, nil
}

// SetOutcome keeps what the call did after the question id was answered.
func (b *Inbox) SetOutcome(ctx context.Context, id string, outcome []byte) error {
	ctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	defer cancel()
	return b.Store.SetOutcome(ctx, id, string(outcome))
}

// Outcome reads what the call did after the question id was answered (nil:
// nothing yet).
func (b *Inbox) Outcome(ctx context.Context, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, store.QueryTimeout)
	defer cancel()
	it, err := b.Store.GetPendingItem(ctx, id)
	if err != nil || it.Outcome == nil {
		return nil, err
	}
	return []byte(*it.Outcome), nil
}

// OpAnswered is the audit log's op of a person's answer to an upstream's
// question (api's words say it).
const OpAnswered = "question.answered"

// Answered records in the audit log the answer a to q as the call takes
// it (implements engine.AnswerLog), whichever route it came by: its
// action and route, who gave it, the call's user, tool, MCP server and
// run, and the pending item it answered — never its content. Every
// argument is a name or an id the engine made (columns of bounded size).
func (b *Inbox) Answered(ctx context.Context, q engine.Question, a engine.Answer) error {
	by := a.By
	args := map[string]string{}
	for k, v := range map[string]string{"action": a.Action, "route": by.Route, "by": by.Actor, "tool": q.Tool, "server": q.Server,
		"run": q.RunID, "pending": by.Pending} {
		if v != "" {
			args[k] = v
		}
	}
	if q.User != 0 {
		args["user"] = strconv.FormatInt(q.User, 10)
	}
	target := "question of " + q.Server + " during " + q.Tool
	if by.Pending != "" {
		target += " pending " + by.Pending
	}
	e := &store.AdminEvent{Actor: by.Actor, Via: by.Via, Action: store.PendingAnswered, Kind: "decision", Target: target, HTTPStatus: http.StatusOK}
	e.SetDetail(store.AdminDetail{Op: OpAnswered, Args: args})
	return b.Store.InsertAdminEvent(ctx, e)
}
