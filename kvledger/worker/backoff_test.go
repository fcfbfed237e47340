package worker

import (
	"math"
	"testing"
	"time"
)

// TestExpBackoffNeverNegative: with a ceiling near the Duration range
// the doubling used to overflow to a negative pause (issue 25 item 13).
func TestExpBackoffNeverNegative(t *testing.T) {
	for _, ceil := range []time.Duration{math.MaxInt64, math.MaxInt64 / 3, time.Hour} {
		for n := 1; n < 200; n++ {
			d := expBackoff(time.Second, ceil, n)
			if d < 0 || d > ceil {
				t.Fatalf("ceil %v attempt %d: %v", ceil, n, d)
			}
			if n > 70 && d < ceil/2 {
				t.Fatalf("ceil %v attempt %d: %v below the capped range", ceil, n, d)
			}
		}
	}
	if d := expBackoff(time.Second, time.Hour, 3); d < 2*time.Second || d > 4*time.Second {
		t.Errorf("attempt 3: %v, want in [2s, 4s]", d)
	}
}
