package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
)

// ledgerOperator is the ledger's operator surface the dashboard's reopen
// and cancel buttons call. It is asserted at run time, so this file builds
// whether or not the ledger in this build provides it; without it the
// dashboard hides those buttons.
type ledgerOperator interface {
	Reopen(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, now time.Time) (kvledger.TaskState, error)
	Cancel(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, reason string, now time.Time) (kvledger.TaskState, error)
}

// hasOperator reports whether this build's Ledger provides ledgerOperator.
func hasOperator() bool {
	_, ok := any((*kvledger.Ledger)(nil)).(ledgerOperator)
	return ok
}

// uiTaskActions returns the dashboard's task actions on the ledger bucket
// and event stream, or nil when the ledger has no operator surface. The
// ledger handle (with an event bus, so the actions' events reach the
// timeline) is opened at the first action: by then the dashboard has
// checked that the bucket exists, and looking creates nothing.
func uiTaskActions(js jetstream.JetStream, bucket, stream string) dashboard.TaskActions {
	if !hasOperator() {
		return nil
	}
	return &operatorActions{js: js, bucket: bucket, stream: stream}
}

type operatorActions struct {
	js             jetstream.JetStream
	bucket, stream string
	mu             sync.Mutex
	op             ledgerOperator
}

func (a *operatorActions) ledger(ctx context.Context) (ledgerOperator, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.op != nil {
		return a.op, nil
	}
	store, err := kvledger.NewKVStore(ctx, a.js, kvledger.KVStoreConfig{Bucket: a.bucket})
	if err != nil {
		return nil, err
	}
	bus, err := events.NewJetStreamBus(ctx, a.js, events.JetStreamBusConfig{Stream: a.stream})
	if err != nil {
		return nil, err
	}
	l, err := kvledger.New(store, bus)
	if err != nil {
		return nil, err
	}
	op, ok := any(l).(ledgerOperator)
	if !ok {
		return nil, errors.New("this ledger cannot reopen or cancel")
	}
	a.op = op
	return op, nil
}

func (a *operatorActions) Reopen(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey) error {
	op, err := a.ledger(ctx)
	if err == nil {
		_, err = op.Reopen(ctx, actor, key, time.Now())
	}
	return err
}

func (a *operatorActions) Cancel(ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey) error {
	op, err := a.ledger(ctx)
	if err == nil {
		_, err = op.Cancel(ctx, actor, key, "cancelled from the dashboard by "+string(actor), time.Now())
	}
	return err
}
