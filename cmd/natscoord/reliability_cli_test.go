package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// The right fence with another owner is refused, and a completion names
// the owner that acted.
func TestLedgerCompleteChecksOwner(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "build", "--seq", "1")
	fence := claim(t, openTestLedger(t, n), "build", "w1")
	f := fmt.Sprint(uint64(fence))
	require.Contains(t, c.fail("ledger", "complete", "build", "--owner", "w2", "--fence", f, "--status", "completed"), "fence token is stale")
	out := c.ok("ledger", "complete", "build", "--owner", "w1", "--fence", f, "--status", "completed")
	require.Equal(t, "build completed by w1 (fence "+f+")\n", out)
}

// A lease key holding garbage is listed, marked, and `lease release
// --force` removes it.
func TestLeaseCorruptValueListedAndForceReleased(t *testing.T) {
	c, n := newCLI(t)
	ctx := natstest.Context(t, 10*time.Second)
	m, err := kvlease.NewManager(ctx, n.NewJS(t), kvlease.Config{Holder: "holder-1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	g, ok, err := m.TryAcquireKey(ctx, "jobs.good", 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	kv, err := n.JS.KeyValue(ctx, kvlease.DefaultBucket)
	require.NoError(t, err)
	_, err = kv.Put(ctx, "jobs.bad", []byte("not a lease"))
	require.NoError(t, err)

	out := c.ok("lease", "ls")
	require.Regexp(t, `(?m)^jobs\.good\s+holder-1\s`, out)
	require.Regexp(t, `(?m)^jobs\.bad\s+!corrupt\s`, out)
	var rows []leaseRow
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lease", "ls")), &rows))
	require.Len(t, rows, 2)
	require.True(t, rows[1].Corrupt || rows[0].Corrupt)

	require.Contains(t, c.ok("lease", "release", "jobs.bad", "--force"), "released jobs.bad (it held a corrupt value")
	_, err = kv.Get(ctx, "jobs.bad")
	require.Error(t, err, "the corrupt value is gone")
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lease", "ls")), &rows))
	require.Len(t, rows, 1)
	require.NoError(t, g.Release(ctx))
}

// One corrupt record: `ledger ls` lists the rest and marks it, `ledger
// snapshot` writes the rest and fails naming it, `ledger rm --force`
// removes it.
func TestLedgerCorruptRecordListedAndRemoved(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "a", "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", "b", "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", "c", "--seq", "1")
	ctx := natstest.Context(t, 10*time.Second)
	kv, err := n.JS.KeyValue(ctx, defaultLedgerBucket)
	require.NoError(t, err)
	_, err = kv.Put(ctx, "task.b", []byte("garbage"))
	require.NoError(t, err)

	out := c.ok("ledger", "ls")
	require.Regexp(t, `(?m)^a\s+-\s+pending\s`, out)
	require.Regexp(t, `(?m)^c\s+-\s+pending\s`, out)
	require.Regexp(t, `(?m)^b\s+-\s+!corrupt\s`, out)

	r := c.run("ledger", "snapshot")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, `"task.b"`)
	require.Contains(t, r.stderr, "ledger rm --force")
	snap, err := kvledger.Decode([]byte(r.stdout))
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 2, "the valid records are in the snapshot")

	require.Contains(t, c.fail("ledger", "rm", "b"), "--force")
	require.Equal(t, "removed b from "+defaultLedgerBucket+"\n", c.ok("ledger", "rm", "b", "--force"))
	require.Contains(t, c.fail("ledger", "rm", "b", "--force"), `no task "b"`)
	snap, err = kvledger.Decode([]byte(c.ok("ledger", "snapshot")))
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 2)
}

// `serve` refuses a data dir that a running server uses.
func TestServeRefusesDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	n := natstest.WithServer(t, func(o *embedded.Options) { o.DataDir = dir })
	require.NotNil(t, n)
	r := runCLI(t, "serve", "--data-dir", dir, "--port", "0")
	msg := requireFailure(t, r, []string{"serve"})
	require.Contains(t, msg, "data directory in use")
}

// A restore that fails (a 2 MiB task) writes nothing and removes the
// bucket it created.
func TestLedgerRestoreFailsWhole(t *testing.T) {
	c, n := newCLI(t)
	tasks := []kvledger.TaskState{}
	for i, k := range []string{"a", "b", "c"} {
		tasks = append(tasks, kvledger.TaskState{Key: kvledger.IdempotencyKey(k), Status: kvledger.StatusPending, Sequence: kvledger.Sequence(i + 1)})
	}
	tasks = append(tasks, kvledger.TaskState{Key: "huge", Status: kvledger.StatusPending, Sequence: 1, Task: strings.Repeat("x", 2<<20)})
	data, err := kvledger.Encode(kvledger.Snapshot{Tasks: tasks})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "snap.json")
	require.NoError(t, os.WriteFile(file, data, 0o600))

	msg := c.fail("ledger", "--bucket", "fresh", "restore", file)
	require.Contains(t, msg, "too large")
	require.Contains(t, msg, `bucket "fresh" removed`)
	require.False(t, bucketExists(t, n, "fresh"), "no bucket left behind")
}

// `events tail --durable` says when the server goes away, and resumes
// once it is back on the same data dir: the event published after the
// restart is printed and the tail ends normally.
func TestEventsTailDurableResumesAfterRestart(t *testing.T) {
	ctx := natstest.Context(t, 60*time.Second)
	s := natstest.StartRestartable(t)
	c := &cli{t: t, url: s.ClientURL()}
	c.ok("ledger", "admit", "--no-kind", "x", "--seq", "1")

	tail := c.start("--json", "events", "tail", "--durable", "resume", "--count", "2")
	js, err := s.JetStream()
	require.NoError(t, err)
	natstest.Eventually(t, 20*time.Second, func() bool {
		info, err := js.Consumer(ctx, "KV_"+defaultLedgerBucket, "resume")
		if err != nil {
			return false
		}
		ci, err := info.Info(ctx)
		return err == nil && ci.AckFloor.Consumer == 1 && ci.NumWaiting > 0
	}, "the tail printed the first event and waits for more")

	s.Restart()
	c.ok("ledger", "admit", "--no-kind", "y", "--seq", "1")

	r := tail.result(t)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "connection to the server lost")
	require.Contains(t, r.stderr, "reconnected")
	require.Contains(t, r.stdout, `"key":"x"`)
	require.Contains(t, r.stdout, `"key":"y"`)
}

// liveTailSubscribed reports whether a connection of the CLI holds the
// live subjects of bucket (a live `events tail` has subscribed).
func liveTailSubscribed(s func() *server.Server, bucket string) func() bool {
	return func() bool {
		cz, err := s().Connz(&server.ConnzOptions{Subscriptions: true})
		if err != nil {
			return false
		}
		for _, ci := range cz.Conns {
			if ci.Name == "natscoord-cli" && slices.Contains(ci.Subs, kvledger.LiveSubject(bucket)) {
				return true
			}
		}
		return false
	}
}

// A live `events tail` that loses its server says so, reconnects when the
// server is back, and prints what is published then.
func TestEventsTailLiveReconnects(t *testing.T) {
	s := natstest.StartRestartable(t)
	c := &cli{t: t, url: s.ClientURL()}
	c.ok("ledger", "admit", "--no-kind", "before", "--seq", "1") // creates the bucket and the stream

	tail := c.start("--json", "events", "tail", "--count", "1")
	subscribed := liveTailSubscribed(func() *server.Server { return s.NATS() }, defaultLedgerBucket)
	natstest.Eventually(t, 20*time.Second, subscribed, "tail subscribed")
	s.Restart()
	natstest.Eventually(t, 20*time.Second, subscribed, "tail subscribed again")
	c.ok("ledger", "admit", "--no-kind", "after", "--seq", "1")

	r := tail.result(t)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "connection to the server lost")
	require.Contains(t, r.stderr, "reconnected")
	require.Contains(t, r.stderr, "not shown")
	require.Contains(t, r.stdout, `"key":"after"`)
}

// Inspections write nothing: ls, show, snapshot and wait leave the
// ledger's stream (its event log) as it was; a write adds one message.
func TestLedgerInspectionsWriteNothing(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "a", "--seq", "1")
	ctx := natstest.Context(t, 10*time.Second)
	last := func() uint64 {
		s, err := n.JS.Stream(ctx, "KV_"+defaultLedgerBucket)
		require.NoError(t, err)
		return s.CachedInfo().State.LastSeq
	}
	before := last()

	require.Regexp(t, `(?m)^a\s+-\s+pending\s`, c.ok("ledger", "ls"))
	require.Contains(t, c.ok("ledger", "show", "a"), "pending")
	c.ok("ledger", "snapshot")
	c.run("ledger", "wait", "--for", "100ms", "a") // pending: it gives up; it must not write
	require.Equal(t, before, last(), "an inspection wrote to the ledger")

	c.ok("ledger", "admit", "--no-kind", "b", "--seq", "1")
	require.Equal(t, before+1, last(), "a write is one message: its event")
}
