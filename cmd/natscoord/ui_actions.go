package main

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/kvledger"
)

// uiTaskActions returns the dashboard's reopen, run now, cancel and rm actions on the
// ledger bucket (each write is its event, so it reaches the timeline). The
// ledger handle is opened at the first action: by then the dashboard has
// checked that the bucket exists, and looking creates nothing. Its owner
// closes it (close) once the dashboard serves no more requests.
func uiTaskActions(js jetstream.JetStream, bucket string) *operatorActions {
	return &operatorActions{js: js, bucket: bucket}
}

var (
	_ dashboard.TaskActions = (*operatorActions)(nil)
	_ dashboard.TaskRunner  = (*operatorActions)(nil)
)

type operatorActions struct {
	js     jetstream.JetStream
	bucket string
	mu     sync.Mutex
	l      *kvledger.Ledger
	closed bool
}

func (a *operatorActions) ledger(ctx context.Context) (*kvledger.Ledger, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, kvledger.ErrClosed
	}
	if a.l != nil {
		return a.l, nil
	}
	l, err := openLedger(ctx, a.js, a.bucket, ledgerCreate)
	if err != nil {
		return nil, err
	}
	a.l = l
	return l, nil
}

func (a *operatorActions) Reopen(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error {
	l, err := a.ledger(ctx)
	if err == nil {
		_, err = l.Reopen(ctx, actor, key, wall.Now(), kvledger.AtRevision(rev))
	}
	return err
}

func (a *operatorActions) Cancel(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error {
	l, err := a.ledger(ctx)
	if err == nil {
		_, err = l.Cancel(ctx, actor, key, "cancelled from the dashboard by "+string(actor), wall.Now(), kvledger.AtRevision(rev))
	}
	return err
}

// RunNow makes a scheduled or retrying task ready at once (the
// dashboard's run now, as `natscoord ledger run-now`), while its record
// is at rev, the revision the page showed.
func (a *operatorActions) RunNow(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error {
	l, err := a.ledger(ctx)
	if err == nil {
		_, err = l.RunNow(ctx, actor, key, wall.Now(), kvledger.AtRevision(rev))
	}
	return err
}

// Delete removes an ended task (the dashboard's rm, as `natscoord ledger
// rm`): the ledger's own compare-and-set delete, which leaves an event.
// Each action is bound to the revision the dashboard showed (rev).
func (a *operatorActions) Delete(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, rev uint64) error {
	l, err := a.ledger(ctx)
	if err == nil {
		err = l.Delete(ctx, actor, key, wall.Now(), kvledger.AtRevision(rev))
	}
	return err
}

// close closes the ledger store the actions opened, if any: an action
// after it is refused (kvledger.ErrClosed).
func (a *operatorActions) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.l != nil {
		closeStore(a.l)
	}
}
