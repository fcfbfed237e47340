package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

func TestParsePeriodKeyRoundTrips(t *testing.T) {
	start := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	for _, name := range []string{"nightly", "a/b", "x y"} {
		n, s, ok := ParsePeriodKey(PeriodKey(name, start))
		require.True(t, ok, name)
		require.Equal(t, name, n)
		require.True(t, start.Equal(s))
	}
	for _, k := range []string{"nightly", "schedule/", "schedule/x", "schedule//2026-12-01T23:00:00Z", "schedule/x/yesterday"} {
		_, _, ok := ParsePeriodKey(kvledger.IdempotencyKey(k))
		require.False(t, ok, k)
	}
}
