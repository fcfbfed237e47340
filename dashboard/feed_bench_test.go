package dashboard_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// BenchmarkFeedAdmissions admits b.N tasks while the dashboard runs and
// reports, next to the admissions themselves (the baseline, ns/op), how
// long after the last admission the view counted them all
// (catchup-ns/task): the lag a burst of admissions causes.
func BenchmarkFeedAdmissions(b *testing.B) {
	e := dashtest.NewEnv(b, nil, nil)
	b.ResetTimer()
	for i := range b.N {
		dashtest.Admit(b, e.Ledger, fmt.Sprintf("t-%d", i), nil)
	}
	b.StopTimer()
	start := time.Now()
	want := fmt.Sprintf(`data-count="total">%d<`, b.N)
	natstest.Eventually(b, time.Minute, func() bool {
		_, body := e.Get(b, "/fragment/overview")
		return strings.Contains(body, want)
	})
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "catchup-ns/task")
}
