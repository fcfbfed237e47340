package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `natscoord work --fair` takes the kind's groups in turn: group a's 6
// tasks, then b's 2, admitted before the worker starts, start a, b, a, b,
// then the rest of a's, each group's own in the order admitted. Without
// --fair the same backlog starts in the order admitted. Several rounds,
// since a disorder from claims racing one another shows only in some.
func TestWorkFairTakesGroupsInTurn(t *testing.T) {
	c, _ := newCLI(t)
	for round := range 2 {
		for _, fair := range []bool{true, false} {
			kind := fmt.Sprintf("fair%d-%v", round, fair)
			var keys []string
			admit := func(group string, i int) string {
				key := fmt.Sprintf("%s-%s%d", kind, group, i)
				c.ok("ledger", "admit", key, "--seq", "1", "--kind", kind, "--group", group)
				keys = append(keys, key)
				return key
			}
			var a, b []string
			for i := range 6 {
				a = append(a, admit("a", i))
			}
			for i := range 2 {
				b = append(b, admit("b", i))
			}
			want := keys
			if fair {
				want = append([]string{a[0], b[0], a[1], b[1]}, a[2:]...)
			}
			order := filepath.Join(t.TempDir(), "order")
			args := []string{"work", "--kind", kind, "--concurrency", "1"}
			if fair {
				args = append(args, "--fair")
			}
			work := c.start(append(args, "--", "sh", "-c", `echo "$NATSCOORD_TASK_KEY" >> '`+order+`'`)...)
			r := c.run(append([]string{"ledger", "wait"}, keys...)...)
			require.Equal(t, waitCompleted, r.code, r.stderr)
			require.Equal(t, 0, work.stop(t).code)
			got, err := os.ReadFile(order)
			require.NoError(t, err)
			require.Equal(t, want, strings.Fields(string(got)), "round %d, fair %v", round, fair)
		}
	}
}
