package embedded_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// createR3Bucket retries bucket creation: right after StartCluster the
// meta leader may not yet know every peer, and placing three replicas
// fails until it does.
func createR3Bucket(t *testing.T, js jetstream.JetStream, bucket string) jetstream.KeyValue {
	t.Helper()
	var kv jetstream.KeyValue
	natstest.Eventually(t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, Replicas: 3})
		return err == nil
	}, "R3 bucket %q not created", bucket)
	return kv
}

// putEventually retries a put until the bucket accepts it (a stopped
// leader is replaced only after raft's election timeout) and returns the
// new revision.
func putEventually(t *testing.T, kv jetstream.KeyValue, key, value string, within time.Duration) uint64 {
	t.Helper()
	return writeEventually(t, "put "+key, within, func(ctx context.Context) (uint64, error) {
		return kv.Put(ctx, key, []byte(value))
	})
}

// createEventually is putEventually for a compare-and-set (kv.Create):
// a try that landed although its answer was lost is found by a read of
// the key holding the value.
func createEventually(t *testing.T, kv jetstream.KeyValue, key, value string, within time.Duration) uint64 {
	t.Helper()
	return writeEventually(t, "create "+key, within, func(ctx context.Context) (uint64, error) {
		r, err := kv.Create(ctx, key, []byte(value))
		if err != nil {
			if e, gerr := kv.Get(ctx, key); gerr == nil && string(e.Value()) == value {
				return e.Revision(), nil
			}
		}
		return r, err
	})
}

// writeEventually tries write, each try bounded by a second, until it
// succeeds within within, and returns the revision it wrote.
func writeEventually(t *testing.T, what string, within time.Duration, write func(ctx context.Context) (uint64, error)) uint64 {
	t.Helper()
	var rev uint64
	natstest.Eventually(t, within, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := write(ctx)
		rev = r
		return err == nil
	}, "%s not accepted within %s", what, within)
	return rev
}

// waitReplica waits until node i holds the stream up to lastSeq.
func waitReplica(t *testing.T, c *natstest.Cluster, i int, stream string, msgs, lastSeq uint64) {
	t.Helper()
	var got embedded.Replica
	natstest.Eventually(t, 20*time.Second, func() bool {
		s := c.Node(i)
		if s == nil {
			return false
		}
		r, err := s.StreamReplica(stream)
		got = r
		return err == nil && r.LastSeq == lastSeq && r.Msgs == msgs
	}, "node %d did not catch up to seq %d (has %+v)", i, lastSeq, &got)
}

func TestClusterR3Failover(t *testing.T) {
	c := natstest.WithCluster(t, 3)
	require.Equal(t, 3, c.Size())
	require.Len(t, c.Running(), 3)
	for _, s := range c.Running() {
		require.Equal(t, "127.0.0.1", hostOf(t, s.ClientURL()))
	}
	const bucket = "failover"
	stream := embedded.KVStreamName(bucket)
	kv := createR3Bucket(t, c.JS, bucket)
	ctx := natstest.Context(t, 60*time.Second)
	// The first write to a fresh R3 bucket can find no stream listening
	// for a moment (its subjects' interest is still propagating through
	// the routes; nats.go retries "no responders" for only 0.5 s).
	rev := putEventually(t, kv, "k0", "v0", 10*time.Second)
	var err error

	stopped := -1
	t.Run("writable while the stream leader is stopped", func(t *testing.T) {
		natstest.Eventually(t, 5*time.Second, func() bool { return c.StreamLeader(stream) >= 0 }, "no stream leader")
		stopped = c.StreamLeader(stream)
		require.NoError(t, c.StopNode(ctx, stopped))
		require.Nil(t, c.Node(stopped))
		require.Len(t, c.Running(), 2)

		// The followers elect a new leader after raft's election timeout.
		// The new leader's first write is a compare-and-set: nats-server
		// 2.15 makes its per-key check's table on a leader's first one,
		// unsynchronised with the apply of a write acknowledged just
		// before, which the race detector reports (a CAS right after a
		// plain put did, on a loaded machine).
		rev = createEventually(t, kv, "k1", "v1", 20*time.Second)
		for i := 2; i <= 5; i++ {
			rev, err = kv.Put(ctx, fmt.Sprintf("k%d", i), []byte("v"))
			require.NoError(t, err)
		}
		// Compare-and-set works too.
		rev, err = kv.Update(ctx, "k5", []byte("v5"), rev)
		require.NoError(t, err)
		require.NotEqual(t, stopped, c.StreamLeader(stream))
	})

	t.Run("restarted node catches up", func(t *testing.T) {
		require.GreaterOrEqual(t, stopped, 0)
		require.NoError(t, c.RestartNode(ctx, stopped))
		require.Error(t, c.RestartNode(ctx, stopped), "already running")
		// Six keys, history 1: six messages, the last one at rev.
		waitReplica(t, c, stopped, stream, 6, rev)
	})

	t.Run("stream leader step-down", func(t *testing.T) {
		old := c.StreamLeader(stream)
		require.GreaterOrEqual(t, old, 0)
		leader, err := c.StepDownStream(ctx, stream)
		require.NoError(t, err)
		require.NotEqual(t, old, leader)
		r, err := c.Node(leader).StreamReplica(stream)
		require.NoError(t, err)
		require.True(t, r.Leader)

		next := putEventually(t, kv, "k6", "v6", 10*time.Second)
		require.Greater(t, next, rev)
		e, err := kv.Get(ctx, "k5")
		require.NoError(t, err)
		require.Equal(t, "v5", string(e.Value()))
	})

	t.Run("bad node index", func(t *testing.T) {
		require.Nil(t, c.Node(-1))
		require.Nil(t, c.Node(3))
		require.Error(t, c.StopNode(ctx, 3))
		require.Error(t, c.RestartNode(ctx, -1))
		_, err := c.StepDownStream(ctx, "KV_none")
		require.ErrorIs(t, err, embedded.ErrNoLeader)
	})

	t.Run("after Shutdown", func(t *testing.T) {
		require.NoError(t, c.StopNode(ctx, 0))
		require.NoError(t, c.StopNode(ctx, 0), "stopping a stopped node does nothing")
		require.NoError(t, c.Shutdown(ctx))
		require.Empty(t, c.Running())
		require.ErrorIs(t, c.RestartNode(ctx, 0), embedded.ErrShutdown)
		_, err := c.JetStream()
		require.ErrorIs(t, err, embedded.ErrShutdown)
		_, err = c.Connect()
		require.ErrorIs(t, err, embedded.ErrShutdown)
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Done not closed after Shutdown")
		}
		// natstest's cleanup calls Shutdown again: that is a no-op.
	})
}
