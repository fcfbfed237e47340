package bench

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// traffic is what the server counted over some rounds: messages in and
// out on its connections and messages stored in its streams (the sum of
// every stream's last sequence, so a stored message counts once even
// when a work queue or a rollup removed it since).
type traffic struct{ in, out, stored uint64 }

func trafficOf(b *testing.B, n *natstest.Node) traffic {
	b.Helper()
	v, err := n.Server.NATS().Varz(nil)
	require.NoError(b, err)
	js, err := n.Server.NATS().Jsz(&server.JSzOptions{Streams: true})
	require.NoError(b, err)
	t := traffic{in: uint64(v.InMsgs), out: uint64(v.OutMsgs)}
	for _, a := range js.AccountDetails {
		for _, s := range a.Streams {
			t.stored += s.State.LastSeq
		}
	}
	return t
}

// add adds the traffic of f to t.
func (t *traffic) add(b *testing.B, n *natstest.Node, f func()) {
	before := trafficOf(b, n)
	f()
	after := trafficOf(b, n)
	t.in += after.in - before.in
	t.out += after.out - before.out
	t.stored += after.stored - before.stored
}

// report reports t per task of count tasks, named with prefix.
func (t traffic) report(b *testing.B, prefix string, count int) {
	if count == 0 {
		return
	}
	c := float64(count)
	b.ReportMetric(float64(t.in)/c, prefix+"msgs-in/task")
	b.ReportMetric(float64(t.out)/c, prefix+"msgs-out/task")
	b.ReportMetric(float64(t.stored)/c, prefix+"stored/task")
}
