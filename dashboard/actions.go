package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// TaskActions reopens and cancels tasks: the task actions of the
// dashboard, provided by the task runtime. A nil Config.Tasks hides them.
// Both return an error the page shows when the record's state does not
// allow the action.
//
// rev is the record's revision (TaskState.Rev) on the page the person
// confirmed: the action applies only while the record is still at it
// (kvledger.AtRevision, which refuses with kvledger.ErrMoved), so a task
// that moved since it was shown is never acted on. Zero: the page showed
// no record.
type TaskActions interface {
	// Reopen puts a failed task back to pending so that it runs again
	// (and the tasks it blocked with it).
	Reopen(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error
	// Cancel ends a pending task at once so that no worker runs it, and
	// asks a running one to stop (kvledger's Ledger.Cancel): it returns
	// once the request is stored, and the task shows as cancelling
	// until its handler returned and it ended cancelled; it cannot be
	// reopened before.
	Cancel(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error
}

// TaskRemover removes a task's record: the dashboard's "rm" action,
// offered when Config.Tasks implements it too. Like the CLI's `natscoord
// ledger rm`, it removes only an ended task that no pending or running
// task needs (kvledger's Ledger.Delete), and returns an error the page
// shows for any other. rev binds it as TaskActions' methods are bound.
type TaskRemover interface {
	Delete(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error
}

// TaskRunner makes a scheduled or retrying task ready at once: the
// dashboard's "run now" action, offered when Config.Tasks implements it
// too. rev is the record's revision the page showed (0: the current
// one): like kvledger's Ledger.RunNow, it writes only while the record
// is still at rev, so an operator never acts on a task that moved
// since, and returns an error the page shows otherwise.
type TaskRunner interface {
	RunNow(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error
}

// The actions the dashboard offers.
const (
	actRelease = "force-release"
	actReopen  = "reopen"
	actCancel  = "cancel"
	actRemove  = "rm"
	actRunNow  = "run-now"
	// actPause and actResume pause and resume a task kind (its key):
	// kvledger.KVStore.PauseKind, a create-if-absent, and ResumeKind,
	// bound to the pause's revision the page showed.
	actPause  = "pause"
	actResume = "resume"
)

// appliesTo reports whether task action applies to a task in phase p,
// by kvledger's rule (the CLI's ledger reopen|cancel|rm use the same).
func appliesTo(action string, p kvledger.Phase) bool {
	switch action {
	case actReopen:
		return p.Reopenable()
	case actCancel:
		return p.Cancellable()
	case actRemove:
		return p.Final()
	case actRunNow:
		return p.Delayed()
	}
	return false
}

// ErrReadOnly is returned for an action on a read-only dashboard.
var ErrReadOnly = errors.New("dashboard: read-only")

// actionRecord is one action taken from the dashboard, as the timelines
// and the live stream show it.
type actionRecord struct {
	Time   time.Time
	Action string
	Task   bool   // Key is a task key; otherwise a lease key in Bucket
	Bucket string // lease bucket
	Key    string
	Actor  string
	Holder string // the holder a force release removed
	Fence  uint64
	Result string // "ok" or the error
}

// offered reports whether action can be taken here.
func (h *Handler) offered(action string) bool {
	if h.cfg.ReadOnly {
		return false
	}
	switch action {
	case actRelease:
		return true
	case actReopen, actCancel:
		return h.cfg.Tasks != nil
	case actRemove:
		_, ok := h.cfg.Tasks.(TaskRemover)
		return ok
	case actRunNow:
		_, ok := h.cfg.Tasks.(TaskRunner)
		return ok
	case actPause, actResume:
		return h.store != nil
	}
	return false
}

// act performs one confirmed action and records it, whatever its outcome.
// rev is the task's revision the confirmed page showed (0: none).
func (h *Handler) act(ctx context.Context, actor, action, bucket, key string, rev uint64) (actionRecord, error) {
	rec := actionRecord{Time: h.cfg.Clock.Now(), Action: action, Key: key, Bucket: bucket, Actor: actor}
	var err error
	switch {
	case !h.offered(action):
		return rec, fmt.Errorf("%w: action %q is not offered", ErrReadOnly, action)
	case action == actRelease:
		err = h.forceRelease(ctx, &rec)
	case action == actReopen:
		rec.Task = true
		err = h.cfg.Tasks.Reopen(ctx, kvledger.Actor(actor), kvledger.IdempotencyKey(key), rev)
	case action == actCancel:
		rec.Task = true
		err = h.cfg.Tasks.Cancel(ctx, kvledger.Actor(actor), kvledger.IdempotencyKey(key), rev)
	case action == actRemove:
		rec.Task = true
		err = h.cfg.Tasks.(TaskRemover).Delete(ctx, kvledger.Actor(actor), kvledger.IdempotencyKey(key), rev)
	case action == actRunNow:
		rec.Task = true
		err = h.cfg.Tasks.(TaskRunner).RunNow(ctx, kvledger.Actor(actor), kvledger.IdempotencyKey(key), rev)
	case action == actPause:
		_, err = h.store.PauseKind(ctx, kvledger.Pause{Kind: key, Actor: kvledger.Actor(actor), At: rec.Time})
	case action == actResume:
		if rev == 0 {
			err = fmt.Errorf("dashboard: resume %q: no revision of its pause given", key)
			break
		}
		err = h.store.ResumeKind(ctx, key, rev)
	}
	rec.Result = "ok"
	result := "ok"
	if err != nil {
		rec.Result, result = err.Error(), "error"
	}
	h.metrics.actions.Inc(action, result)
	h.actionLog.add(rec)
	b, _ := json.Marshal(map[string]any{"action": action, "ref": keyRef(key), "key": displayKey(key),
		"bucket": bucket, "actor": displayKey(actor), "result": rec.Result, "task": rec.Task})
	h.broker.publish(push{Type: "action", Data: b})
	return rec, err
}

// forceRelease deletes a lease whoever holds it. The holder learns at its
// next renewal (kvlease), and the bucket's watch shows the delete.
func (h *Handler) forceRelease(ctx context.Context, rec *actionRecord) error {
	i := slices.Index(h.cfg.LeaseBuckets, rec.Bucket)
	if i < 0 {
		return fmt.Errorf("dashboard: %q is not a lease bucket of this dashboard", rec.Bucket)
	}
	if r, ok := h.leases[i].get(rec.Key); ok {
		rec.Holder, rec.Fence = r.Holder, r.Fence
	}
	m, err := h.manager(ctx, rec.Bucket)
	if err != nil {
		return err
	}
	ok, err := m.ForceReleaseKey(ctx, rec.Key)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("no lease held (it ended meanwhile)")
	}
	return nil
}

// manager returns the kvlease manager of bucket, made on first use.
func (h *Handler) manager(ctx context.Context, bucket string) (*kvlease.Manager, error) {
	h.mgrMu.Lock()
	defer h.mgrMu.Unlock()
	if m, ok := h.managers[bucket]; ok {
		return m, nil
	}
	m, err := kvlease.NewManager(ctx, h.cfg.JS, kvlease.Config{Bucket: bucket, Holder: h.cfg.Actor})
	if err != nil {
		return nil, err
	}
	h.managers[bucket] = m
	return m, nil
}
