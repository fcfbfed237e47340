package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// openTestLedger opens the CLI's default ledger on n, as a worker would.
func openTestLedger(t *testing.T, n *natstest.Node) *kvledger.Ledger {
	t.Helper()
	l, err := openLedger(natstest.Context(t, 10*time.Second), n.NewJS(t), defaultLedgerBucket, ledgerCreate)
	require.NoError(t, err)
	return l
}

// claim claims key for owner for a minute, as a worker would, and
// returns the fence.
func claim(t *testing.T, l *kvledger.Ledger, key kvledger.IdempotencyKey, owner kvledger.OwnerID) kvledger.FenceToken {
	t.Helper()
	f, err := l.Claim(natstest.Context(t, 10*time.Second), "test", key, owner, time.Minute, time.Now())
	require.NoError(t, err)
	return f
}

// finish claims key and completes it with status.
func finish(t *testing.T, l *kvledger.Ledger, key kvledger.IdempotencyKey, status kvledger.Status) {
	t.Helper()
	f := claim(t, l, key, "w")
	require.NoError(t, l.Complete(natstest.Context(t, 10*time.Second), "test", key, "w", f, status, time.Now()))
}

// The exit code of `ledger wait` says how the tasks ended; it is woken by
// the transitions, whether they happen before or while it waits.
func TestLedgerWait(t *testing.T) {
	c, n := newCLI(t)
	for _, a := range [][]string{
		{"a"}, {"b", "--needs", "a"}, {"c"}, {"d", "--needs", "c"}, {"e"},
	} {
		c.ok(append([]string{"ledger", "admit", "--no-kind", a[0], "--seq", "1"}, a[1:]...)...)
	}
	l := openTestLedger(t, n)

	// Completed while waiting.
	w := c.start("ledger", "wait", "a", "b")
	finish(t, l, "a", kvledger.StatusCompleted)
	finish(t, l, "b", kvledger.StatusCompleted)
	r := w.result(t)
	require.Equal(t, waitCompleted, r.code, r.stderr)
	require.Regexp(t, `(?m)^KEY\s+OUTCOME\s+ATTEMPTS\s+BLOCKED-BY\s+LAST-ERROR$`, r.stdout)
	require.Regexp(t, `(?m)^b\s+completed\s+`, r.stdout)

	// Already final before the wait: it returns at once.
	r = c.run("ledger", "wait", "a")
	require.Equal(t, waitCompleted, r.code, r.stderr)

	// A failure and the dependent it blocks: failed decides.
	w = c.start("ledger", "wait", "d", "c")
	finish(t, l, "c", kvledger.StatusFailed)
	r = w.result(t)
	require.Equal(t, waitFailed, r.code, r.stderr)
	require.Contains(t, r.stderr, "1 of 2 tasks failed (first: c)")
	require.Regexp(t, `(?m)^d\s+blocked\s+\d+\s+c\s`, r.stdout)

	r = c.run("--json", "ledger", "wait", "d")
	require.Equal(t, waitBlocked, r.code, r.stderr)
	var rows []struct {
		Key     string             `json:"key"`
		Outcome string             `json:"outcome"`
		Final   bool               `json:"final"`
		Task    kvledger.TaskState `json:"task"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rows))
	require.Len(t, rows, 1)
	require.Equal(t, "blocked", rows[0].Outcome)
	require.Equal(t, kvledger.IdempotencyKey("c"), rows[0].Task.BlockedBy)

	// Still pending when --for runs out.
	r = c.run("ledger", "wait", "e", "a", "--for", "300ms")
	require.Equal(t, waitGaveUp, r.code, r.stderr)
	require.Contains(t, r.stderr, "--for elapsed with 1 of 2 tasks final")
	require.Regexp(t, `(?m)^e\s+-\s+-`, r.stdout)
}

func TestLedgerWaitBadInput(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "a", "--seq", "1")
	require.Contains(t, c.fail("ledger", "wait", "a", "missing"), `no task "missing"`)
	require.Contains(t, c.fail("ledger", "wait", "a", "a"), `"a" is listed twice`)
	require.Contains(t, c.fail("ledger", "wait", ""), "empty key")
	require.Contains(t, c.fail("ledger", "wait", "a", "--for", "-1s"), "--for must not be negative")
	c.fail("ledger", "wait")
	c.fail("ledger", "--bucket", "nobucket", "wait", "a")
	for _, args := range [][]string{{"ledger", "wait", "a", "missing"}, {"ledger", "wait"}} {
		require.Equal(t, 1, c.run(args...).code, args)
	}
}

// startWatching starts a `ledger wait` and returns once its watch of the
// bucket has delivered the current records (a consumer the bucket did
// not have before has nothing pending): a change after that reaches the
// watch as a change. A consumer's creation races with writes made
// meanwhile, so the test writes only after it.
func startWatching(t *testing.T, js jetstream.JetStream, start func() *background) *background {
	t.Helper()
	ctx := natstest.Context(t, 20*time.Second)
	s, err := js.Stream(ctx, "KV_"+defaultLedgerBucket)
	require.NoError(t, err)
	before := map[string]bool{}
	names := s.ConsumerNames(ctx)
	for n := range names.Name() {
		before[n] = true
	}
	require.NoError(t, names.Err())
	b := start()
	natstest.Eventually(t, 20*time.Second, func() bool {
		infos := s.ListConsumers(ctx)
		found := false
		for ci := range infos.Info() {
			if !before[ci.Name] && ci.NumPending == 0 && ci.Delivered.Stream > 0 {
				found = true
			}
		}
		return infos.Err() == nil && found
	}, "ledger wait watches the bucket")
	return b
}

// A record deleted while `ledger wait` waits for it ends the wait (exit
// 6, outcome deleted) instead of waiting for ever; a final record that
// is deleted keeps how it ended, and the wait goes on for the others.
func TestLedgerWaitEndsOnDelete(t *testing.T) {
	c, n := newCLI(t)
	for _, k := range []string{"a", "b", "c", "d"} {
		c.ok("ledger", "admit", "--no-kind", k, "--seq", "1")
	}
	l := openTestLedger(t, n)
	finish(t, l, "a", kvledger.StatusCompleted)

	w := startWatching(t, n.JS, func() *background { return c.start("ledger", "wait", "a", "b") })
	c.ok("ledger", "rm", "b", "--force")
	r := w.result(t)
	require.Equal(t, waitDeleted, r.code, r.stderr)
	require.Contains(t, r.stderr, `task "b" was deleted`)
	require.Regexp(t, `(?m)^a\s+completed\s`, r.stdout)
	require.Regexp(t, `(?m)^b\s+deleted\s`, r.stdout)

	w = startWatching(t, n.JS, func() *background { return c.start("--json", "ledger", "wait", "c", "d") })
	finish(t, l, "c", kvledger.StatusCompleted)
	require.NoError(t, l.Delete(natstest.Context(t, 10*time.Second), "test", "c", time.Now()))
	finish(t, l, "d", kvledger.StatusCompleted)
	r = w.result(t)
	require.Equal(t, waitCompleted, r.code, r.stderr)
	require.Contains(t, r.stdout, `"outcome": "completed"`)
	require.NotContains(t, r.stdout, "deleted")

	require.Contains(t, c.fail("ledger", "wait", "c"), `no task "c"`, "deleted before the wait: no such task")
}

// `ledger wait` outlives a server restart, as `events tail` does: it
// says so on stderr, watches again once the server is back, and sees
// the task end.
func TestLedgerWaitResumesAfterRestart(t *testing.T) {
	s := natstest.StartRestartable(t)
	c := &cli{t: t, url: s.ClientURL()}
	c.ok("ledger", "admit", "--no-kind", "x", "--seq", "1")
	js, err := s.JetStream()
	require.NoError(t, err)

	w := startWatching(t, js, func() *background { return c.start("ledger", "wait", "x") })
	s.Restart()
	js, err = s.JetStream()
	require.NoError(t, err)
	l, err := openLedger(natstest.Context(t, 10*time.Second), js, defaultLedgerBucket, ledgerUpdate)
	require.NoError(t, err)
	finish(t, l, "x", kvledger.StatusCompleted)
	finished := time.Now()

	r := w.result(t)
	require.Equal(t, waitCompleted, r.code, r.stderr)
	// Its record watch (a kvx hub) replaced its consumer on the
	// reconnect, rather than waiting for nats.go's heartbeat check.
	require.Less(t, time.Since(finished), 6*time.Second, "the end seen promptly after the restart")
	require.Contains(t, r.stderr, "connection to the server lost")
	require.Contains(t, r.stderr, "reconnected")
	require.Regexp(t, `(?m)^x\s+completed\s`, r.stdout)
}
