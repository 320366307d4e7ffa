package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/blindexec/blindexec/store"
)

// ReplicaStore is what Replicas needs; *store.Store implements it.
type ReplicaStore interface {
	KeyCheckStore
	PutReplica(ctx context.Context, r *store.Replica) error
	Replicas(ctx context.Context, since, before time.Time) ([]store.Replica, error)
	DeleteReplica(ctx context.Context, id string) error
}

// Setting is an operator setting every replica of a database must share
// (an admin or service token): its name and value.
type Setting struct{ Name, Value string }

// replicaSettings is what a replica writes of its settings: its master
// key id, and per key id it holds the digest of each setting under that
// key (SettingDigest; "" for a setting that is not set).
type replicaSettings struct {
	Master  string                       `json:"master"`
	Digests map[string]map[string]string `json:"digests"`
}

// SettingDigest is the digest of a setting a replica records, under the
// key id kid of kr: HMAC-SHA256 of the name and value, keyed by a key
// derived from that master key. A database dump holds no token nor
// anything a guessed token can be tested against without the key; two
// replicas holding the same key compare their settings by it. "" when kr
// lacks kid.
func (kr *Keyring) SettingDigest(kid, name, value string) string {
	k := kr.byID[kid]
	if k == nil {
		return ""
	}
	mac := hmac.New(sha256.New, k.digest)
	mac.Write([]byte(name))
	mac.Write([]byte{0})
	mac.Write([]byte(value))
	return hex.EncodeToString(mac.Sum(nil))
}

// Replicas records this replica's operator settings in the database as
// keyed digests, and compares them with those of the other replicas of
// the database each round: a replica started with another admin or
// service token than its peers answers the same request differently
// (401 on one, 200 on the other), and one whose keyring lacks the key
// its peers write credentials under fails their calls. It also checks
// the keyring against the database again (CheckKeys, without
// recording): credentials written since the start under a key it lacks.
// What disagrees is logged (once each time it changes) and kept for
// /readyz.
type Replicas struct {
	Store    ReplicaStore
	Keyring  *Keyring
	Settings []Setting
	// Host says where the replica runs (host name and listen address),
	// Version which build: the peers' messages name them.
	Host, Version string
	// Every is the time between two rounds; a peer not seen for three
	// rounds (plus a few seconds) is taken as stopped.
	Every  time.Duration
	Logger *slog.Logger

	id       string
	start    time.Time
	problems atomic.Pointer[[]string]
	logged   []string // Run's: the problems last logged
}

// Disagreements are the problems the last round found: each a sentence
// naming the other replica and the setting, never a value. Nil: none.
func (r *Replicas) Disagreements() []string {
	if p := r.problems.Load(); p != nil {
		return *p
	}
	return nil
}

func (r *Replicas) mine() replicaSettings {
	own := replicaSettings{Master: r.Keyring.MasterKeyID(), Digests: map[string]map[string]string{}}
	for kid := range r.Keyring.byID {
		d := make(map[string]string, len(r.Settings))
		for _, s := range r.Settings {
			if s.Value != "" {
				d[s.Name] = r.Keyring.SettingDigest(kid, s.Name, s.Value)
			} else {
				d[s.Name] = ""
			}
		}
		own.Digests[kid] = d
	}
	return own
}

// Round writes this replica's row, reads its peers' and checks the
// keyring; what disagrees is kept for Disagreements. An error is the
// database's: the last round's findings stand.
func (r *Replicas) Round(ctx context.Context) error {
	if r.id == "" {
		b := make([]byte, 8)
		rand.Read(b)
		r.id, r.start = hex.EncodeToString(b), time.Now()
	}
	own := r.mine()
	js, err := json.Marshal(own)
	if err != nil {
		return err
	}
	if err := r.Store.PutReplica(ctx, &store.Replica{ReplicaID: r.id, Host: r.Host, Version: r.Version, Settings: string(js), StartTime: r.start}); err != nil {
		return err
	}
	now := time.Now()
	peers, err := r.Store.Replicas(ctx, now.Add(-3*r.Every-2*time.Second), now.Add(-24*time.Hour))
	if err != nil {
		return err
	}
	var problems []string
	for _, p := range peers {
		if p.ReplicaID == r.id {
			continue
		}
		var theirs replicaSettings
		if err := json.Unmarshal([]byte(p.Settings), &theirs); err != nil {
			problems = append(problems, fmt.Sprintf("%s: its settings record does not decode: %v", peerName(p), err))
			continue
		}
		problems = append(problems, r.compare(own, p, theirs)...)
	}
	keyErr := CheckKeys(ctx, r.Store, r.Keyring, false)
	if _, ok := errors.AsType[*KeyMismatchError](keyErr); ok {
		problems = append(problems, "this replica: "+keyErr.Error())
	} else if keyErr != nil {
		return keyErr
	}
	r.problems.Store(&problems)
	return nil
}

// compare is what differs between this replica's settings and a peer's.
func (r *Replicas) compare(own replicaSettings, p store.Replica, theirs replicaSettings) []string {
	var out []string
	if theirs.Master != "" && r.Keyring.byID[theirs.Master] == nil {
		out = append(out, fmt.Sprintf("%s writes credentials under master key id %s, which this replica's keyring lacks: its calls of them fail here (add that key to BLINDEXEC_MASTER_KEYS_OLD: step 1 of changing keys)", peerName(p), theirs.Master))
	}
	var common []string
	for kid := range theirs.Digests {
		if own.Digests[kid] != nil {
			common = append(common, kid)
		}
	}
	if len(common) == 0 {
		return append(out, fmt.Sprintf("%s holds no master key this replica holds (its key ids %s, this one's %s): their tokens cannot be compared",
			peerName(p), strings.Join(slices.Sorted(maps.Keys(theirs.Digests)), ", "), strings.Join(slices.Sorted(maps.Keys(own.Digests)), ", ")))
	}
	kid := slices.Min(common)
	mine, other := own.Digests[kid], theirs.Digests[kid]
	for _, name := range slices.Sorted(maps.Keys(mine)) {
		d, ok := other[name]
		if !ok || d == mine[name] {
			continue // a setting only one version records is not compared
		}
		what := "another " + name + " than this one"
		switch {
		case d == "":
			what = "no " + name + " where this one has one"
		case mine[name] == "":
			what = "a " + name + " where this one has none"
		}
		out = append(out, fmt.Sprintf("%s has %s", peerName(p), what))
	}
	return out
}

func peerName(p store.Replica) string {
	return fmt.Sprintf("replica %s (%s, %s, started %s)", p.ReplicaID, p.Host, p.Version, p.StartTime.UTC().Format(time.RFC3339))
}

// Run makes a round at once and every Every until ctx ends, logging what
// disagrees once each time it changes; then it deletes the replica's row.
func (r *Replicas) Run(ctx context.Context) {
	t := time.NewTicker(r.Every)
	defer t.Stop()
	for {
		if err := r.Round(ctx); err != nil && ctx.Err() == nil {
			r.Logger.Debug("replicas: settings not compared this round", "err", err)
		} else {
			r.log()
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := r.Store.DeleteReplica(dctx, r.id); err != nil {
				r.Logger.Warn("replicas: this replica's row is left (other replicas forget it after "+(3*r.Every).String()+")", "err", err)
			}
			return
		case <-t.C:
		}
	}
}

func (r *Replicas) log() {
	now := r.Disagreements()
	if slices.Equal(now, r.logged) {
		return
	}
	for _, p := range now {
		if !slices.Contains(r.logged, p) {
			r.Logger.Warn("replicas disagree: "+p, "replica", r.id)
		}
	}
	if len(now) == 0 {
		r.Logger.Info("replicas agree again on their operator settings", "replica", r.id)
	}
	r.logged = now
}
