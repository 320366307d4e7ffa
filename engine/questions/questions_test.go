package questions_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/questions"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

var form = engine.Question{Server: "shop", Mode: engine.QuestionForm, Message: "Which size?", Tool: "order", User: 7,
	Schema: []byte(`{"type":"object","properties":{"size":{"type":"string","enum":["S","L"],"default":"S"}}}`)}

// TestAwait: a posted question waits for the person until its call's
// deadline; an answer given anywhere (the database) reaches it once, and
// what the person typed is cleared once taken; unanswered, it closes as
// expired and is answered cancel, never left waiting.
func TestAwait(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		inbox := &questions.Inbox{Store: st, Poll: 10 * time.Millisecond}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		id, err := inbox.Post(ctx, "user:7", form)
		if err != nil {
			t.Fatal(err)
		}
		q, until, err := inbox.Question(ctx, id)
		if err != nil || q.Server != "shop" || q.Tool != "order" || q.User != 7 || string(q.Schema) != string(form.Schema) || time.Until(until) > 5*time.Second {
			t.Fatalf("Question = %+v, %v, %v", q, until, err)
		}
		go func() {
			time.Sleep(50 * time.Millisecond)
			if won, err := inbox.Answer(context.Background(), id, "user:7", engine.Answer{Action: "accept", Content: map[string]any{"size": "L"}}); !won || err != nil {
				t.Errorf("Answer = %v, %v", won, err)
			}
		}()
		a, err := inbox.Await(ctx, id)
		if err != nil || a.Action != "accept" || a.Content["size"] != "L" {
			t.Fatalf("Await = %+v, %v", a, err)
		}
		if won, _ := inbox.Answer(context.Background(), id, "user:7", engine.Answer{Action: "decline"}); won {
			t.Error("a second answer was taken")
		}
		it, _ := st.GetPendingItem(context.Background(), id)
		if it.Status != store.PendingAnswered || it.Answer == nil || *it.Answer != `{"action":"accept"}` || it.DecidedBy != "user:7" {
			t.Errorf("the answered item: %+v", it)
		}

		// Unanswered: the call's time ends, the question closes.
		short, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer stop()
		id, err = inbox.Post(short, "user:7", form)
		if err != nil {
			t.Fatal(err)
		}
		if a, err := inbox.Await(short, id); err != nil || a.Action != "cancel" {
			t.Errorf("Await unanswered = %+v, %v; want cancel", a, err)
		}
		if it, _ := st.GetPendingItem(context.Background(), id); it.Status != store.RunExpired {
			t.Errorf("the unanswered item is %s, want expired", it.Status)
		}
		if won, _ := inbox.Answer(context.Background(), id, "user:7", engine.Answer{Action: "decline"}); won {
			t.Error("an expired question took an answer")
		}
	})
}

// TestPostBounds: questions are pending items, bounded per user with the
// others; past the bound the refusal names the setting for the upstream.
func TestPostBounds(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		st.SetPendingMax(2)
		inbox := &questions.Inbox{Store: st}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for range 2 {
			if _, err := inbox.Post(ctx, "user:7", form); err != nil {
				t.Fatal(err)
			}
		}
		_, err := inbox.Post(ctx, "user:7", form)
		if _, ok := errors.AsType[*engine.NobodyToAskError](err); !ok || !strings.Contains(err.Error(), "the most BLINDEXEC_PENDING_MAX_PER_USER allows (2)") {
			t.Errorf("past the bound: %v", err)
		}
		other := form
		other.User = 8
		if _, err := inbox.Post(ctx, "user:8", other); err != nil {
			t.Errorf("another user: %v", err)
		}
	})
}

// TestPostBoundRace: many questions of one user posted at once, on the
// database every replica shares, never exceed the bound: exactly as many
// as it allows wait, the others are refused naming the setting.
func TestPostBoundRace(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		st.SetPendingMax(5)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			posted  int
			refused int
			other   []error
		)
		for range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each its own Inbox, as each replica has.
				_, err := (&questions.Inbox{Store: st}).Post(ctx, "user:7", form)
				mu.Lock()
				defer mu.Unlock()
				if _, ok := errors.AsType[*engine.NobodyToAskError](err); ok {
					refused++
				} else if err != nil {
					other = append(other, err)
				} else {
					posted++
				}
			}()
		}
		wg.Wait()
		user := int64(7)
		n, err := st.CountWaiting(ctx, &user)
		if err != nil || n > 5 || posted > 5 || posted+refused+len(other) != 24 {
			t.Fatalf("24 at once under a bound of 5: %d posted, %d refused, %d waiting (%v), errors %v", posted, refused, n, err, other)
		}
		if posted < 1 || len(other) > 0 {
			t.Errorf("%d posted, errors %v: a conflict must be a refusal or a retry, never an error", posted, other)
		}
	})
}

// TestBlackholedDatabase: with the database blackholed (connections
// open, nothing answered), a question's reads and its closing give up
// within store.QueryTimeout: a call awaiting an answer ends at its own
// deadline plus that bound, and a retry reading a question's outcome is
// answered within it, with an error. Before, the question was closed on
// a context without deadline, and the reads waited on the call's: the
// call waited as long as the connection lived.
func TestBlackholedDatabase(t *testing.T) {
	_, proxy, through := testdb.Blackholable(t)
	inbox := &questions.Inbox{Store: testdb.At(t, through), Poll: 10 * time.Millisecond}
	id, err := inbox.Post(t.Context(), "user:7", form)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole()
	// The test's own bound: the code under test's must come well before.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	call, stop := context.WithTimeout(ctx, time.Second) // the call's time
	defer stop()
	check := func(name string, bound time.Duration, fn func() error) {
		began := time.Now()
		err := fn()
		if took := time.Since(began); took > bound {
			t.Errorf("%s not decided within %v (%v): held by the database", name, bound, took)
		} else if err == nil {
			t.Errorf("%s on a blackholed database: no error", name)
		}
	}
	// One at a time: the reads share one statement, whose first
	// preparation the others wait for (gorm's statement cache).
	check("Await", time.Second+store.QueryTimeout+2*time.Second, func() error { _, err := inbox.Await(call, id); return err })
	check("Outcome", store.QueryTimeout+2*time.Second, func() error { _, err := inbox.Outcome(ctx, id); return err })
	check("Question", store.QueryTimeout+2*time.Second, func() error { _, _, err := inbox.Question(ctx, id); return err })
}
