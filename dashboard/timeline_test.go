package dashboard_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// A task's timeline is its key's writes, read from the bucket: the
// writes of other tasks are not read, each write is one line, and a
// pending task shows its admission.
func TestTimelineReadsTheKeysWrites(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "early", nil)
		dashtest.RunTask(t, e.Ledger, "early", "w1", kvledger.StatusCompleted)
		for i := range 100 {
			dashtest.Admit(t, e.Ledger, fmt.Sprintf("later-%d", i), nil)
		}
	}, nil)
	body := e.Page(t, "/task?key=early")
	for _, ev := range []string{"<b>ledger.admitted</b>", "<b>ledger.claimed</b>", "<b>ledger.completed</b>"} {
		require.Contains(t, body, ev)
	}
	require.NotContains(t, body, "stopped after its scan bound")
	require.Equal(t, 1, strings.Count(body, "<b>ledger.completed</b>"))

	// A pending one: its admission.
	body = e.Page(t, "/task?key=later-0")
	require.Contains(t, body, "<b>ledger.admitted</b>")
	require.NotContains(t, body, "stopped after its scan bound")
}

// A task page reads the key's writes once: its timeline and its attempts
// come from the same read (kvledger.AttemptsOf), where it once read them
// twice (KeyEvents, then Ledger.History), two consumers on the stream
// per page view.
func TestTaskPageReadsTheKeysWritesOnce(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "once", nil)
		dashtest.RunTask(t, e.Ledger, "once", "w1", kvledger.StatusCompleted)
	}, nil)
	e.Page(t, "/task?key=once") // the dashboard's own set-up is over
	var reads, markers atomic.Int32
	stream := "KV_" + dashtest.LedgerBucket
	sub, err := e.Node.NC.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.CREATED."+stream+".>", func(m *nats.Msg) {
		if strings.HasSuffix(m.Subject, ".marker") {
			markers.Add(1)
		} else {
			reads.Add(1)
		}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, e.Node.NC.Flush())
	body := e.Page(t, "/task?key=once")
	require.Contains(t, body, "<b>ledger.completed</b>")
	// The server announces consumers in the order they were made: once
	// the marker made after the page is announced, so are the page's.
	ctx := natstest.Context(t, 10*time.Second)
	_, err = e.Node.JS.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Name: "marker", AckPolicy: jetstream.AckNonePolicy})
	require.NoError(t, err)
	natstest.Eventually(t, 10*time.Second, func() bool { return markers.Load() == 1 }, "the marker consumer was not announced")
	require.EqualValues(t, 1, reads.Load(), "one read of the key's writes per page view")
}
