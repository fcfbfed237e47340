package events_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// PublishAsync sends the message Publish sends: the same prefixed
// subject, body and Nats-Msg-Id, so a Publish of the same event is a
// duplicate, and an invalid event fails at wait.
func TestPublishAsyncSendsPublishMessage(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 10*time.Second)
	bus, err := events.NewJetStreamBus(ctx, n.JS, events.JetStreamBusConfig{Stream: "ASYNC", SubjectPrefix: "async."})
	require.NoError(t, err)

	e := ev("ledger.admitted", "a", 1)
	require.NoError(t, bus.PublishAsync(e)(ctx))
	require.NoError(t, bus.Publish(ctx, e), "a duplicate is success")
	require.ErrorIs(t, bus.PublishAsync(events.Event{Name: "ledger.x"})(ctx), events.ErrInvalidEvent)
	require.NoError(t, bus.PublishAsync(ev("ledger.claimed", "a", 2))(ctx))

	s, err := n.JS.Stream(ctx, "ASYNC")
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, info.State.Msgs, "the repeat was dropped")
	m, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, "async.ledger.admitted", m.Subject)
	require.Equal(t, events.MsgID(e), m.Header.Get("Nats-Msg-Id"))
	got, err := events.Unmarshal(m.Data)
	require.NoError(t, err)
	require.Equal(t, e, got)
}
