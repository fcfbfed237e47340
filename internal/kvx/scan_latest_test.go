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
