package kvx_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func scanLatestSuite(t *testing.T, b *kvx.Bucket) {
	ctx := natstest.Context(t, 30*time.Second)
	collect := func(pattern string) []string {
		var out []string
		require.NoError(t, b.ScanLatest(ctx, pattern, 0, func(e kvx.Entry) bool {
			out = append(out, e.Key+"="+string(e.Value))
			return true
		}))
		return out
	}
	require.Empty(t, collect("none.>"))
	// Each write is visible to the scan that follows it, also on R3.
	var want []string
	for i := range 20 {
		k := fmt.Sprintf("s.k%d", i)
		r, err := b.Create(ctx, k, []byte("v"), 0)
		require.NoError(t, err)
		want = append(want, k+"=v")
		if i%5 == 4 {
			_, err = b.Delete(ctx, k, r)
			require.NoError(t, err)
			want = want[:len(want)-1]
		}
		require.Equal(t, want, collect("s.>"), "after write %d", i)
	}
	n := 0
	require.NoError(t, b.ScanLatest(ctx, "s.>", 0, func(kvx.Entry) bool { n++; return false }))
	require.Equal(t, 1, n)
}

func TestScanLatest(t *testing.T) {
	scanLatestSuite(t, openBucket(t, natstest.WithServer(t).JS, 1))
}

func TestScanLatestR3(t *testing.T) {
	scanLatestSuite(t, openBucket(t, natstest.WithCluster(t, 3).JS, 3))
}

// A scan whose watch's consumer creation goes unanswered tries again
// after the op timeout instead of waiting for the caller's whole ctx (a
// loaded cluster left one unanswered for 30 s in CI).
func TestScanLatestTriesAgainAfterAnOverrun(t *testing.T) {
	n, p, b, ctx := proxiedBucket(t, 500*time.Millisecond)
	_, err := b.Create(ctx, "s.a", []byte("v"), 0)
	require.NoError(t, err)
	// Answers reach the client a second late: time enough to see the
	// first try's consumer on the server and hold its answer back.
	p.SetDelay(time.Second)
	t.Cleanup(func() { p.Stall(false) })
	var got []string
	errc := make(chan error, 1)
	go func() {
		errc <- b.ScanLatest(ctx, "s.>", 0, func(e kvx.Entry) bool { got = append(got, e.Key); return true })
	}()
	consumers := natstest.ConsumersSeen(t, n.JS, b.Name())
	natstest.Eventually(t, 10*time.Second, func() bool { return consumers() >= 1 }, "the scan's first try reaches the server")
	// Its answer never comes; later ones are not delayed (once the
	// stall ends, they follow the first try's, a second late).
	p.Stall(true)
	p.SetDelay(0)
	natstest.Eventually(t, 10*time.Second, func() bool { return consumers() >= 2 }, "the scan tries again")
	p.Stall(false)
	require.NoError(t, natstest.Recv(t, errc, 10*time.Second, "the scan"))
	require.Equal(t, []string{"s.a"}, got)
}
