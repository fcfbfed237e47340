package events_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// A bus with a subject prefix has a stream of its own next to the
// default one: its events go to prefix+name, keep their name in the body,
// and reach neither the default stream nor a core subscriber of
// "ledger.>".
func TestJetStreamBusSubjectPrefix(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 10*time.Second)
	_, err := events.NewJetStreamBus(ctx, n.JS, events.JetStreamBusConfig{})
	require.NoError(t, err)
	bus, err := events.NewJetStreamBus(ctx, n.JS, events.JetStreamBusConfig{Stream: "RUN1", SubjectPrefix: "run1."})
	require.NoError(t, err)

	got := make(chan events.Event, 4)
	live, err := events.SubscribeLive(n.NC, "run1.ledger.>", func(e events.Event) { got <- e }, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = live.Close() })
	other := make(chan events.Event, 4)
	plain, err := events.SubscribeLive(n.NC, "ledger.>", func(e events.Event) { other <- e }, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = plain.Close() })

	require.NoError(t, bus.Publish(ctx, ev("ledger.admitted", "a", 1)))
	e := natstest.Recv(t, got, 5*time.Second, "prefixed event")
	require.Equal(t, events.Name("ledger.admitted"), e.Name)

	s, err := n.JS.Stream(ctx, "RUN1")
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"run1.ledger.>"}, info.Config.Subjects)
	require.EqualValues(t, 1, info.State.Msgs)
	require.Contains(t, info.Config.Description, "natscoord")
	def, err := n.JS.Stream(ctx, events.DefaultStream)
	require.NoError(t, err)
	dinfo, err := def.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, dinfo.State.Msgs)
	require.Empty(t, other)

	for _, p := range []string{"run1", "a..", ".a.", "a.*.", "a b."} {
		_, err := events.NewJetStreamBus(ctx, n.JS, events.JetStreamBusConfig{Stream: "BAD", SubjectPrefix: p})
		require.ErrorIs(t, err, events.ErrInvalidConfig, p)
	}
	_, err = n.JS.Stream(ctx, "BAD")
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
}
