package dashboard_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/kvledger"
)

// A finished task's timeline ends at the event of its record's last
// write: the events of later tasks are not read, so the page costs the
// task's own span of the stream, not the rest of it.
func TestTimelineStopsAtTheRecordsLastWrite(t *testing.T) {
	dashboard.SetTimelineScan(t, 50)
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

	// So does a pending one: it stops at the event of its admission.
	body = e.Page(t, "/task?key=later-0")
	require.Contains(t, body, "<b>ledger.admitted</b>")
	require.NotContains(t, body, "stopped after its scan bound")
}
