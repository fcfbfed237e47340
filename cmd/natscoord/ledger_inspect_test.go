package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// `ledger show` lists a task's attempts with each one's own error: a
// task that failed twice and then succeeded shows three attempts, the
// two errors on the two failed ones and none on the success, in the
// table and in --json (on a ledger bucket that keeps its records' writes).
func TestLedgerShowAttempts(t *testing.T) {
	c, n := newCLI(t)
	ctx := natstest.Context(t, 60*time.Second)
	_, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: defaultLedgerBucket, History: 64})
	require.NoError(t, err)
	c.ok("ledger", "admit", "flaky", "--kind", "flaky", "--max-attempts", "5")
	work := c.start("work", "--kind", "flaky", "--backoff", "10ms", "--", "sh", "-c",
		`if [ "$NATSCOORD_TASK_ATTEMPT" -lt 3 ]; then echo "boom $NATSCOORD_TASK_ATTEMPT" >&2; exit 1; fi; echo ok`)
	r := c.run("ledger", "wait", "flaky")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	require.Equal(t, 0, work.stop(t).code)

	shown := c.ok("ledger", "show", "flaky")
	require.Regexp(t, `(?m)^ATTEMPT\s+OUTCOME\s+OWNER\s+FENCE\s+STARTED\s+ENDED\s+ERROR$`, shown)
	require.Regexp(t, `(?m)^1 of 5\s+retried\s+.*boom 1$`, shown)
	require.Regexp(t, `(?m)^2 of 5\s+retried\s+.*boom 2$`, shown)
	require.Regexp(t, `(?m)^3 of 5\s+completed\s+\S+\s+\d+\s+\S+\s+\S+\s+-$`, shown)

	var rec struct {
		kvledger.TaskState
		History []kvledger.Attempt `json:"attempt_history"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "flaky")), &rec))
	require.Equal(t, kvledger.StatusCompleted, rec.Status)
	require.Len(t, rec.History, 3)
	for i, a := range rec.History {
		require.Equal(t, i+1, a.N)
		require.Equal(t, 5, a.Max)
		require.False(t, a.Started.IsZero())
		require.False(t, a.Ended.IsZero())
	}
	require.Contains(t, rec.History[0].Error, "boom 1")
	require.Contains(t, rec.History[1].Error, "boom 2")
	require.Empty(t, rec.History[2].Error, "the success does not repeat the last failure's error")
	require.Equal(t, kvledger.AttemptCompleted, rec.History[2].Outcome)

	// A task never claimed has no attempts: no table, an empty list.
	c.ok("ledger", "admit", "idle", "--kind", "nobody")
	require.NotContains(t, c.ok("ledger", "show", "idle"), "ATTEMPT")
	require.Contains(t, c.ok("--json", "ledger", "show", "idle"), `"attempt_history": []`)
}

// `ledger show` gives each given-back attempt its own error: a worker
// whose command cannot start gives the task back and stops, twice with
// the same error, before one that can runs it; both given-back attempts
// show that error (the second once showed none, its text being the one
// its claim carried along from the first).
func TestLedgerShowGivenBackTwice(t *testing.T) {
	c, n := newCLI(t)
	ctx := natstest.Context(t, 60*time.Second)
	_, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: defaultLedgerBucket, History: 64})
	require.NoError(t, err)
	// The command passes the worker's check (an executable file) but
	// cannot start: its interpreter does not exist.
	bin := filepath.Join(t.TempDir(), "send")
	require.NoError(t, os.WriteFile(bin, []byte("#!/nonexistent/natscoord-test-interpreter\n"), 0o755))
	c.ok("ledger", "admit", "x", "--kind", "mail", "--max-attempts", "5")
	for i := range 2 {
		r := c.run("work", "--kind", "mail", "--backoff", "10ms", "--", bin)
		require.Equal(t, 127, r.code, "worker %d: %s", i, r.stderr)
		require.Contains(t, r.stderr, "its task was given back", "worker %d", i)
	}
	work := c.start("work", "--kind", "mail", "--backoff", "10ms", "--", "sh", "-c", "echo ok")
	r := c.run("ledger", "wait", "x")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	require.Equal(t, 0, work.stop(t).code)

	gave := `given back: cannot start the command: "` + bin + `"`
	shown := c.ok("ledger", "show", "x")
	require.Len(t, regexp.MustCompile(`(?m)^1 of 5\s+released\s+.*`+regexp.QuoteMeta(gave)).FindAllString(shown, -1), 2, shown)
	require.Regexp(t, `(?m)^1 of 5\s+completed\s+.*-$`, shown)

	var rec struct {
		History []kvledger.Attempt `json:"attempt_history"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "x")), &rec))
	require.Len(t, rec.History, 3)
	for _, a := range rec.History[:2] {
		require.Equal(t, kvledger.AttemptReleased, a.Outcome)
		require.Contains(t, a.Error, gave)
	}
	require.Equal(t, rec.History[0].Error, rec.History[1].Error, "the same cause, given back twice")
	require.Equal(t, kvledger.AttemptCompleted, rec.History[2].Outcome)
	require.Empty(t, rec.History[2].Error)
}

// `ledger workers` lists a live worker with its lease expiry and the
// task it runs; once the worker stops it is no longer listed.
func TestLedgerWorkers(t *testing.T) {
	c, _ := newCLI(t)
	// No worker ever ran: no lease bucket, no workers, no error.
	c.ok("ledger", "admit", "long", "--kind", "slow")
	require.Equal(t, "[]\n", c.ok("--json", "ledger", "workers"))

	work := c.start("work", "--kind", "slow", "--name", "worker-a", "--ttl", "2s", "--drain", "50ms", "--grace", "100ms",
		"--", "sh", "-c", "sleep 30")
	var out string
	natstest.Eventually(t, 20*time.Second, func() bool {
		r := c.run("ledger", "workers")
		out = r.stdout
		return r.code == 0 && strings.Contains(r.stdout, "long")
	}, "the worker listed with its task")
	require.Regexp(t, `(?m)^WORKER\s+HOST\s+PID\s+EXPIRES\s+RUNNING\s+TASKS$`, out)
	row := regexp.MustCompile(`(?m)^worker-a\s+\S+\s+\d+\s+(\S+)\s+1\s+long$`).FindStringSubmatch(out)
	require.NotNil(t, row, out)
	expires, err := time.Parse(time.RFC3339Nano, row[1])
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(2*time.Second), expires, 3*time.Second)

	var ws []struct {
		Owner   string    `json:"owner"`
		Lease   string    `json:"lease"`
		TTLMs   int64     `json:"ttl_ms"`
		Expires time.Time `json:"expires"`
		Kinds   []string  `json:"kinds"`
		Tasks   []struct {
			Key   string `json:"key"`
			Kind  string `json:"kind"`
			Fence uint64 `json:"fence"`
		} `json:"tasks"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "workers")), &ws))
	require.Len(t, ws, 1)
	require.Equal(t, "worker-a", ws[0].Owner)
	require.Equal(t, int64(2000), ws[0].TTLMs)
	require.False(t, ws[0].Expires.IsZero())
	require.Len(t, ws[0].Tasks, 1)
	require.Equal(t, "long", ws[0].Tasks[0].Key)
	require.Equal(t, "slow", ws[0].Tasks[0].Kind)
	require.Equal(t, []string{"slow"}, ws[0].Kinds, "the kinds the worker handles")
	var rec kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "long")), &rec))
	require.Equal(t, rec.Lease, ws[0].Lease)

	require.Equal(t, 0, work.stop(t).code)
	natstest.Eventually(t, 20*time.Second, func() bool {
		r := c.run("--json", "ledger", "workers")
		return r.code == 0 && r.stdout == "[]\n"
	}, "a stopped worker is no longer listed")
}

// `ledger show` reads the record's writes once: the record it prints is
// the last of the writes its attempts come from, where it once read the
// record first (a get from the stream) and its writes after, so the two
// could disagree about a write made in between.
func TestLedgerShowReadsTheRecordOnce(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "once", "--seq", "1")
	stream := "KV_" + defaultLedgerBucket
	// Synchronous subscriptions: after the Flush below, every get the
	// server routed here is counted in Pending (the reader queues a
	// message before it handles the Flush's answer), with no callback
	// still to run.
	var subs []*nats.Subscription
	for _, subj := range []string{"$JS.API.DIRECT.GET." + stream, "$JS.API.DIRECT.GET." + stream + ".>", "$JS.API.STREAM.MSG.GET." + stream} {
		sub, err := n.NC.SubscribeSync(subj)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Unsubscribe() })
		subs = append(subs, sub)
	}
	require.NoError(t, n.NC.Flush())
	out := c.ok("--json", "ledger", "show", "once")
	require.Contains(t, out, `"status": "pending"`)
	require.NoError(t, n.NC.Flush())
	for _, sub := range subs {
		msgs, _, err := sub.Pending()
		require.NoError(t, err)
		require.Zero(t, msgs, "the record is read with its writes, not got again (%s)", sub.Subject)
	}
}
