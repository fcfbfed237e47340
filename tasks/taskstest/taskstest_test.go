package taskstest_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/tasks"
	"github.com/natscoord/natscoord/tasks/taskstest"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

// recordT records what a helper reports instead of failing the test.
type recordT struct {
	mu  sync.Mutex
	msg []string
}

func (r *recordT) Helper()        {}
func (r *recordT) Cleanup(func()) {}
func (r *recordT) Errorf(f string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msg = append(r.msg, fmt.Sprintf(f, a...))
}
func (r *recordT) Fatalf(f string, a ...any) {
	r.Errorf(f, a...)
	runtime.Goexit()
}

// report runs check as a helper would run in a test and returns what it
// reported ("" when it passed).
func report(check func(taskstest.TB)) string {
	r := &recordT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return strings.Join(r.msg, "; ")
}

// Each helper fails on the outcome it does not expect, and says why.
func TestRequireHelpersReportTheOutcome(t *testing.T) {
	c := taskstest.Start(t, tasks.Config{}, taskstest.Worker(resize))
	ctx := natstest.Context(t, taskstest.Timeout)
	ok, err := c.Submit(ctx, Resize{Width: 1}, &tasks.SubmitOpts{Key: "ok"})
	require.NoError(t, err)
	bad, err := c.Submit(ctx, Resize{}, &tasks.SubmitOpts{Key: "bad"})
	require.NoError(t, err)
	_, err = c.Submit(ctx, Resize{Width: 1}, &tasks.SubmitOpts{Key: "dep", Needs: []kvledger.IdempotencyKey{"bad"}})
	require.NoError(t, err)

	require.Empty(t, report(func(tb taskstest.TB) { taskstest.RequireCompleted(tb, c, ok.Key) }))
	require.Empty(t, report(func(tb taskstest.TB) { taskstest.RequireFailed(tb, c, bad.Key, "zero") }))
	require.Empty(t, report(func(tb taskstest.TB) { taskstest.RequireBlocked(tb, c, "dep", "bad") }))

	require.Contains(t, report(func(tb taskstest.TB) { taskstest.RequireCompleted(tb, c, bad.Key) }), `ended failed, not completed (last error: "permanent: width is zero")`)
	require.Contains(t, report(func(tb taskstest.TB) { taskstest.RequireFailed(tb, c, bad.Key, "height") }), `does not contain "height"`)
	require.Contains(t, report(func(tb taskstest.TB) { taskstest.RequireFailed(tb, c, ok.Key, "") }), "ended completed, not failed")
	require.Contains(t, report(func(tb taskstest.TB) { taskstest.RequireBlocked(tb, c, "dep", "ok") }), `not blocked by "ok"`)
}
