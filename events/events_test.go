package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func ev(name events.Name, key string, rev uint64) events.Event {
	return events.Event{Name: name, Source: "tasks", Key: key, Revision: rev, Status: "pending", Actor: "a", Time: t0}
}

func TestNameValid(t *testing.T) {
	for _, n := range []events.Name{"ledger.admitted", "a", "ledger.taken_over"} {
		require.True(t, n.Valid(), n)
	}
	for _, n := range []events.Name{"", ".a", "a.", "a..b", "a.*", "a.>", "a b", "a\tb"} {
		require.False(t, n.Valid(), n)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	e := ev("ledger.blocked", "k.1 x", 7)
	e.BlockedBy, e.Fence, e.Owner = "p", 3, "w"
	b, err := events.Marshal(e)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"ledger.blocked","source":"tasks","key":"k.1 x","revision":7,"status":"pending",
		"actor":"a","owner":"w","fence":3,"blocked_by":"p","time":"2026-11-29T10:00:00Z"}`, string(b))
	got, err := events.Unmarshal(b)
	require.NoError(t, err)
	require.Equal(t, e, got)
	for _, bad := range []string{`{`, `[]`, `{"name":"x y","source":"s","key":"k"}`, `{"name":"x","key":"k"}`, `{"name":"x","source":"s"}`} {
		_, err := events.Unmarshal([]byte(bad))
		require.Error(t, err, bad)
	}
	_, err = events.Marshal(events.Event{})
	require.ErrorIs(t, err, events.ErrInvalidName)
}

func FuzzUnmarshal(f *testing.F) {
	b, _ := events.Marshal(ev("ledger.admitted", "k", 1))
	f.Add(b)
	f.Add([]byte(`{"name":"ledger.completed","source":"s","key":"k","revision":18446744073709551615,"time":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"name":"..","source":"s","key":"k"}`))
	f.Add([]byte(`null`))
	f.Add([]byte("{\"name\":\"ledger.admitted\",\"source\":\"s\",\"key\":\"a\xffb\",\"blocked_by\":\"\xc3\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := events.Unmarshal(data)
		if err != nil {
			return
		}
		out, err := events.Marshal(e)
		require.NoError(t, err)
		e2, err := events.Unmarshal(out)
		require.NoError(t, err)
		require.Equal(t, e, e2)
	})
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	_, err := events.SubscribeLive(nil, events.Source{}, events.LiveConfig{}, func(events.Event) {}, nil)
	require.ErrorIs(t, err, events.ErrInvalidConfig)
	_, err = events.SubscribeDurable(ctx, nil, events.Source{}, events.DurableConfig{}, nil, nil)
	require.ErrorIs(t, err, events.ErrInvalidConfig)
	n := natstest.WithServer(t)
	_, err = events.SubscribeDurable(ctx, n.JS, events.Source{Stream: "S"}, events.DurableConfig{Durable: "d"}, func(context.Context, events.Event) error { return nil }, nil)
	require.ErrorIs(t, err, events.ErrInvalidConfig)
}
