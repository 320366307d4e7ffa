package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/questions"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// An upstream MCP server's questions during the calls of runs and direct
// calls (POST /v1/execute, /v1/tools/{name}/call, the proxy), whose caller
// cannot be asked in its own channel, wait for the person on the approval
// page (issue 48 point 4): a pending item of kind "question", answered
// through POST /v1/pending/{id} or the console's Approvals, while the call
// waits within its timeout on the replica that holds it.

// inbox is where the questions are kept (nil without a store).
func (s *Server) inbox() *questions.Inbox {
	if s.Store == nil {
		return nil
	}
	s.inboxOnce.Do(func() { s.questions = &questions.Inbox{Store: s.Store} })
	return s.questions
}

// asking returns ctx whose calls' upstream questions go on the approval
// page, made by p; ctx as is for a plugin no upstream can ask during
// (nil: any, a run's).
func (s *Server) asking(ctx context.Context, p principal, plugin *plugins.Plugin) context.Context {
	inbox := s.inbox()
	if inbox == nil || plugin != nil && plugin.Execution.Type != plugins.TypeMCP {
		return ctx
	}
	by := decider(p)
	return engine.WithAsker(ctx, func(ctx context.Context, q engine.Question) (engine.Answer, error) {
		return inbox.Ask(ctx, by, q)
	})
}

// codeAnswerTooLarge is an answer whose content is over engine.MaxAnswer
// (413).
const codeAnswerTooLarge = "answer_too_large"

// answerQuestion is POST /v1/pending/{id} for a question (it, waiting and
// the caller's to answer): the person's answer, {"action":
// "accept"|"decline"|"cancel", "content": {...}}, checked against the
// question's requestedSchema, for the call waiting for it on whichever
// replica holds it.
func (s *Server) answerQuestion(w http.ResponseWriter, r *http.Request, it *store.PendingItem, a engine.Answer) {
	doc, err := questions.Parse(it.Item)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if err := doc.Question().Check(a); err != nil {
		if large, ok := errors.AsType[*engine.AnswerTooLargeError](err); ok {
			writeError(w, http.StatusRequestEntityTooLarge, codeAnswerTooLarge, err.Error()+"; the question still waits for an answer: send a shorter one",
				map[string]any{"field": "content", "size": large.Size, "max": large.Max})
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_payload", err.Error()+"; the question still waits for an answer", map[string]string{"field": "content"})
		return
	}
	p := principalFrom(r.Context())
	a.By = &engine.Answerer{Actor: p.actor(), Via: "api", Route: engine.RoutePage}
	if p.browser {
		a.By.Via = "console"
	}
	won, err := s.inbox().Answer(r.Context(), it.ID, decider(p), a)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if !won {
		writeError(w, http.StatusConflict, "question_closed", "this question was answered by another request, or the call that asked it ended", nil)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": it.ID, "status": store.PendingAnswered, "action": a.Action})
}

// answerOf reads an answer's body fields: content is JSON of an object
// (or absent).
func answerOf(action string, content json.RawMessage) (engine.Answer, bool) {
	a := engine.Answer{Action: action}
	if len(content) > 0 && string(content) != "null" {
		if err := json.Unmarshal(content, &a.Content); err != nil {
			return a, false
		}
	}
	return a, true
}
