package kvlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

// newLocker starts a Locker closed by t.Cleanup.
func newLocker(t *testing.T, js jetstream.JetStream, cfg kvlock.Config) *kvlock.Locker {
	t.Helper()
	l := natstest.Open(t, "new locker", func(ctx context.Context) (*kvlock.Locker, error) {
		return kvlock.New(ctx, js, cfg)
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Close(ctx) // may fail for lockers whose connection a test closed
		natstest.WaitClosed(t, l.Done(), 10*time.Second, "locker close")
	})
	return l
}

// queueLen counts the queue entries of a lock key in the default bucket.
func queueLen(t *testing.T, js jetstream.JetStream, prefix string) int {
	t.Helper()
	ctx := natstest.Context(t, 5*time.Second)
	kv, err := js.KeyValue(ctx, "natscoord_leases")
	require.NoError(t, err)
	lister, err := kv.ListKeysFiltered(ctx, prefix+".*")
	if err != nil {
		return 0
	}
	n := 0
	for k := range lister.Keys() {
		if i := strings.LastIndexByte(k, '.'); len(k)-i-1 == 20 { // an entry, not the ticket key
			n++
		}
	}
	return n
}
