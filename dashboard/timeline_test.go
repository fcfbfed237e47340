package dashboard_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
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
