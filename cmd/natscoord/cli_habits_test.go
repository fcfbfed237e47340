package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// runStdin runs one command line with stdin.
func (c *cli) runStdin(stdin string, args ...string) result {
	c.t.Helper()
	return runCLIWith(c.t, strings.NewReader(stdin), append([]string{"--server", c.url}, args...)...)
}

func jsonTask(t *testing.T, out string) kvledger.TaskState {
	t.Helper()
	var s kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	return s
}

// A shell script can be a worker: claim, renew, release, claim again,
// complete, all with the fence that claim printed.
func TestLedgerClaimRenewReleaseComplete(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "build", "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", "test", "--seq", "1", "--needs", "build")

	out := c.ok("ledger", "claim", "build", "--owner", "w1", "--lease", "1m")
	require.Regexp(t, `^build claimed by w1: fence \d+, lease until \S+\n$`, out)
	claimed := jsonTask(t, c.ok("--json", "ledger", "show", "build"))
	require.Equal(t, kvledger.StatusClaimed, claimed.Status)
	fence := fmt.Sprint(uint64(claimed.Fence))

	require.Contains(t, c.fail("ledger", "claim", "build", "--owner", "w2"), "lease")               // held by w1
	require.Contains(t, c.fail("ledger", "claim", "build", "--owner", "w2", "--takeover"), "stale") // not stale yet
	require.Contains(t, c.ok("ledger", "renew", "build", "--owner", "w1", "--fence", fence, "--lease", "2m"), "build renewed by w1: fence "+fence)
	require.Contains(t, c.fail("ledger", "renew", "build", "--owner", "w1", "--fence", "1"), "stale")
	require.Contains(t, c.fail("ledger", "release", "build", "--owner", "w1", "--fence", "1"), "stale")
	require.Equal(t, kvledger.StatusPending, jsonTask(t, c.ok("--json", "ledger", "release", "build", "--owner", "w1", "--fence", fence)).Status)

	again := jsonTask(t, c.ok("--json", "ledger", "claim", "build", "--owner", "w2"))
	require.Greater(t, again.Fence, claimed.Fence, "a new claim outbids the released one")
	require.Contains(t, c.ok("ledger", "complete", "build", "--owner", "w2", "--fence", fmt.Sprint(uint64(again.Fence)), "--status", "completed"),
		"build completed by w2")
	require.Contains(t, c.ok("ledger", "claim", "test", "--owner", "w3"), "test claimed by w3")

	// A task whose need failed is refused, and written blocked.
	c.ok("ledger", "admit", "--no-kind", "lint", "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", "ship", "--seq", "1", "--needs", "lint")
	lint := jsonTask(t, c.ok("--json", "ledger", "claim", "lint", "--owner", "w1"))
	c.ok("ledger", "complete", "lint", "--owner", "w1", "--fence", fmt.Sprint(uint64(lint.Fence)), "--status", "failed")
	require.Contains(t, c.fail("ledger", "claim", "ship", "--owner", "w1"), "not claimed")
	require.Equal(t, kvledger.StatusBlocked, jsonTask(t, c.ok("--json", "ledger", "show", "ship")).Status)

	// A takeover after the lease ran out: the claim holds a lease in the
	// lease bucket, which the server expires (below 1s is refused).
	c.ok("ledger", "admit", "--no-kind", "short", "--seq", "1")
	require.Contains(t, c.fail("ledger", "claim", "short", "--owner", "w1", "--lease", "1ms"), "lease")
	short := jsonTask(t, c.ok("--json", "ledger", "claim", "short", "--owner", "w1", "--lease", "1s"))
	require.NotEmpty(t, short.Lease)
	natstest.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(c.ok("ledger", "show", "short"), "ended (lease")
	}, "the server expires the claim's lease")
	require.Contains(t, c.ok("ledger", "claim", "short", "--owner", "w2", "--takeover"), "short claimed by w2")

	for _, args := range [][]string{
		{"ledger", "claim", "missing", "--owner", "w"},
		{"ledger", "claim", "build"},
		{"ledger", "claim", "build", "--owner", ""},
		{"ledger", "claim", "build", "--owner", "w", "--lease", "0s"},
		{"ledger", "renew", "build", "--owner", "w"},
		{"ledger", "release", "build", "--fence", "1"},
		{"ledger", "--bucket", "nobucket", "claim", "x", "--owner", "w"},
	} {
		c.fail(args...)
	}
	require.Contains(t, c.fail("ledger", "claim", "missing", "--owner", "w"), `no task "missing"`)
}

func TestLedgerTaskFromFileAndStdin(t *testing.T) {
	c, _ := newCLI(t)
	// 300 KiB: more than a shell's single-argument limit allows.
	big := map[string]any{"blob": strings.Repeat("x", 300<<10)}
	data, err := json.Marshal(big)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "task.json")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	c.ok("ledger", "admit", "--no-kind", "big", "--seq", "1", "--task", "@"+file)
	require.Equal(t, big, jsonTask(t, c.ok("--json", "ledger", "show", "big")).Task)

	r := c.runStdin(`{"from":"stdin"}`, "ledger", "admit", "--no-kind", "piped", "--seq", "1", "--task", "-")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, map[string]any{"from": "stdin"}, jsonTask(t, c.ok("--json", "ledger", "show", "piped")).Task)

	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"a":`), 0o600))
	require.Contains(t, c.fail("ledger", "admit", "--no-kind", "x", "--seq", "1", "--task", "@"+bad), bad)
	require.Contains(t, c.fail("ledger", "admit", "--no-kind", "x", "--seq", "1", "--task", "@/nonexistent/task.json"), "/nonexistent/task.json")
	c.fail("ledger", "admit", "--no-kind", "x", "--seq", "1", "--task", "@")
	r = c.runStdin("", "ledger", "admit", "--no-kind", "x", "--seq", "1", "--task", "-")
	require.Contains(t, requireFailure(t, r, nil), "stdin is empty")
	r = c.runStdin("[1,2] 3", "ledger", "admit", "--no-kind", "x", "--seq", "1", "--task", "-")
	require.Contains(t, requireFailure(t, r, nil), "trailing data")
	c.fail("ledger", "show", "x") // nothing refused was written
}

// A rebase without --task or --needs keeps what the earlier sequence
// stored, and says so; --task null and --needs "" drop them.
func TestLedgerRebaseKeepsPayload(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "dep", "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", "job", "--seq", "1", "--task", `{"cmd":"make"}`, "--needs", "dep")
	out := c.ok("ledger", "admit", "--no-kind", "job", "--seq", "2")
	require.Contains(t, out, "job rebased from sequence 1 to 2: pending")
	require.Contains(t, out, "kept the task payload and needs of sequence 1")
	s := jsonTask(t, c.ok("--json", "ledger", "show", "job"))
	require.Equal(t, kvledger.Sequence(2), s.Sequence)
	require.Equal(t, map[string]any{"cmd": "make"}, s.Task)
	require.Equal(t, []kvledger.IdempotencyKey{"dep"}, s.Needs)

	var adm map[string]any
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "admit", "--no-kind", "job", "--seq", "3", "--needs", "")), &adm))
	require.Equal(t, []any{"task"}, adm["kept"])
	out = c.ok("ledger", "admit", "--no-kind", "job", "--seq", "4", "--task", "null")
	require.NotContains(t, out, "kept")
	s = jsonTask(t, c.ok("--json", "ledger", "show", "job"))
	require.Nil(t, s.Task)
	require.Empty(t, s.Needs)
	require.Contains(t, c.ok("ledger", "admit", "--no-kind", "job", "--seq", "4"), "not admitted")
}

func TestMistakesAreErrors(t *testing.T) {
	c, _ := newCLI(t)
	require.Contains(t, c.fail("ledger", "lss"), `unknown command "lss" for "natscoord ledger" (did you mean "ls"?)`)
	require.Contains(t, c.fail("lease", "bogus"), `unknown command "bogus" for "natscoord lease"`)
	require.Contains(t, c.fail("events", "tial"), `unknown command "tial" for "natscoord events" (did you mean "tail"?)`)
	require.Contains(t, c.fail("nosuch"), `unknown command "nosuch" for "natscoord"`)
	require.Contains(t, c.fail("--bogus", "ledger", "ls"), "unknown flag: --bogus")
	require.Contains(t, c.fail("ledger", "--bogus", "ls"), "unknown flag: --bogus")
	require.Contains(t, c.fail("--bogus=1", "ledger", "ls"), "unknown flag: --bogus")
	require.Contains(t, c.fail("-Z", "ledger", "ls"), `unknown shorthand flag: "Z" in -Z`)
	require.Contains(t, c.fail("ledger", "ls", "--nope"), "unknown flag: --nope")

	// Flags with values in every spelling still reach their command.
	c.ok("ledger", "admit", "--no-kind", "a", "--seq", "1")
	for _, args := range [][]string{
		{"--timeout", "3s", "ledger", "ls"}, {"--timeout=3s", "ledger", "--bucket=natscoord_ledger", "ls"},
		{"--json", "ledger", "ls"}, {"ledger", "ls", "--json"},
	} {
		c.ok(args...)
	}
	r := runCLI(t, "-s", c.url, "ledger", "ls")
	require.Equal(t, 0, r.code, r.stderr)

	// A group alone asks for its help: exit 0.
	for _, args := range [][]string{{}, {"ledger"}, {"lease"}, {"events"}, {"lock"}, {"ledger", "--help"}} {
		r := runCLI(t, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stdout, "Usage:")
	}
}

func TestVersionAndCompletion(t *testing.T) {
	r := runCLI(t, "version")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^natscoord \S+.*, go1\.\S+ \S+/\S+, nats\.go v\S+, embedded nats-server v\S+\n$`, r.stdout)
	r = runCLI(t, "--json", "version")
	var v versionInfo
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	require.NotEmpty(t, v.Version)
	require.NotEmpty(t, v.NATSClient)
	r = runCLI(t, "--version")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "natscoord version ")
	requireFailure(t, runCLI(t, "version", "extra"), nil)

	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		r := runCLI(t, "completion", sh)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "natscoord", sh)
	}
	requireFailure(t, runCLI(t, "completion", "tcsh"), nil)
	// Completion of subcommands works through cobra's hidden __complete.
	r = runCLI(t, "__complete", "ledger", "cl")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "claim")
}

// Keys with control characters are escaped (one line per row), and wide
// or combining characters keep the columns aligned. Admission refuses
// control characters now; the records holding them here were written
// through the Store, as records stored before that rule are.
func TestTablesSurviveAnyKey(t *testing.T) {
	c, n := newCLI(t)
	keys := []string{"plain", "日本語のキー", "e\u0301te\u0301", "line\nbreak", "esc\x1b[31mred", "emoji🚀", "rtl\u202eevil"}
	store := openTestLedger(t, n).Store()
	for _, k := range keys {
		if strings.ContainsAny(k, "\n\x1b") {
			require.Contains(t, c.fail("ledger", "admit", "--no-kind", k, "--seq", "1"), "control character")
			ok, err := store.CompareAndSwap(natstest.Context(t, 10*time.Second), kvledger.IdempotencyKey(k), kvledger.TaskState{},
				kvledger.TaskState{Key: kvledger.IdempotencyKey(k), Status: kvledger.StatusPending, Sequence: 1})
			require.NoError(t, err)
			require.True(t, ok)
			continue
		}
		c.ok("ledger", "admit", "--no-kind", k, "--seq", "1")
	}
	out := c.ok("ledger", "ls")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, len(keys)+1, "one line per row: %q", out)
	require.NotContains(t, out, "\x1b")
	require.NotContains(t, out, "\u202e")
	require.Contains(t, out, `line\nbreak`)
	require.Contains(t, out, `esc\x1b[31mred`)
	require.Contains(t, out, `rtl\u202eevil`)
	col := -1
	for _, l := range lines {
		i := strings.Index(l, "PHASE")
		if i < 0 {
			i = strings.Index(l, "pending")
		}
		require.Positive(t, i, l)
		w := displayWidth(l[:i])
		if col < 0 {
			col = w
		}
		require.Equal(t, col, w, "STATUS column at the same display column: %q", l)
	}
	// JSON keeps the exact keys.
	var tasks []kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "ls")), &tasks))
	got := map[string]bool{}
	for _, s := range tasks {
		got[string(s.Key)] = true
	}
	for _, k := range keys {
		require.True(t, got[k], k)
	}
	require.Contains(t, c.ok("ledger", "admit", "--no-kind", "rtl\u202eevil", "--seq", "1"), `rtl\u202eevil not admitted`)
}

func TestEventsTailFilters(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "x", "--seq", "1")
	c.ok("ledger", "--bucket", "other", "admit", "--no-kind", "x", "--seq", "1", "--create")
	c.ok("ledger", "--bucket", "other", "admit", "--no-kind", "y", "--seq", "1")
	c.ok("ledger", "--bucket", "other", "claim", "x", "--owner", "w")

	tail := func(args ...string) []events.Event {
		t.Helper()
		out := c.ok(append([]string{"--json", "events", "tail"}, args...)...)
		var got []events.Event
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			e, err := events.Unmarshal(sc.Bytes())
			require.NoError(t, err)
			got = append(got, e)
		}
		return got
	}
	got := tail("--durable", "f1", "--bucket", "other", "--key", "x", "--count", "2")
	require.Len(t, got, 2)
	for _, e := range got {
		require.Equal(t, "other", e.Source)
		require.Equal(t, "x", e.Key)
	}
	require.Equal(t, kvledger.ClaimedEvent, got[1].Name)
	got = tail("--durable", "f2", "--count", "1")
	require.Equal(t, "natscoord_ledger", got[0].Source)
	got = tail("--durable", "f4", "--bucket", "other", "--event", string(kvledger.ClaimedEvent), "--count", "1")
	require.Equal(t, kvledger.ClaimedEvent, got[0].Name, "only the claim, by its header")
	require.Contains(t, c.fail("events", "tail", "--event", "a b"), "not an event name")
	got = tail("--durable", "f3", "--bucket", "other", "--key", "y", "--count", "1")
	require.Equal(t, "y", got[0].Key)

	// Live, with a filter: only the matching write is printed.
	b := c.start("--json", "events", "tail", "--bucket", "other", "--key", "z", "--count", "1")
	natstest.Eventually(t, 20*time.Second, func() bool {
		c.ok("ledger", "admit", "--no-kind", fmt.Sprintf("n%d", time.Now().UnixNano()), "--seq", "1")
		c.ok("ledger", "--bucket", "other", "admit", "--no-kind", "z", "--seq", fmt.Sprint(time.Now().UnixNano()))
		return strings.Count(b.out.String(), "\n") >= 1
	})
	require.Equal(t, 0, b.wait(t), b.err.String())
	e, err := events.Unmarshal([]byte(strings.TrimSpace(b.out.String())))
	require.NoError(t, err)
	require.Equal(t, "other", e.Source)
	require.Equal(t, "z", e.Key)
}

// What is stored, as `nats kv get` and `nats kv info` show it.
func TestStoredValues(t *testing.T) {
	c, n := newCLI(t)
	ctx := natstest.Context(t, 10*time.Second)
	c.ok("ledger", "admit", "--no-kind", "build", "--seq", "1", "--task", `{"cmd":"make"}`)
	c.ok("ledger", "claim", "build", "--owner", "w1")
	kv, err := n.JS.KeyValue(ctx, defaultLedgerBucket)
	require.NoError(t, err)
	e, err := kv.Get(ctx, "task.build")
	require.NoError(t, err)
	require.NotContains(t, string(e.Value()), `"rev"`, "the KV revision is the record's revision")
	require.Contains(t, string(e.Value()), `"status":"claimed"`)
	require.EqualValues(t, e.Revision(), jsonTask(t, c.ok("--json", "ledger", "show", "build")).Rev)

	stream, err := n.JS.Stream(ctx, "KV_"+defaultLedgerBucket)
	require.NoError(t, err)
	si, err := stream.Info(ctx)
	require.NoError(t, err)
	require.Contains(t, si.Config.Description, "natscoord kvledger")
	require.Contains(t, si.Config.Description, "task.<key>")

	c.ok("lock", "k", "--", "true")
	ls, err := n.JS.Stream(ctx, "KV_"+kvlease.DefaultBucket)
	require.NoError(t, err)
	li, err := ls.Info(ctx)
	require.NoError(t, err)
	require.Contains(t, li.Config.Description, "natscoord kvlease")
	require.Contains(t, li.Config.Description, "task runtime claims", "the claims bucket of natscoord work has this layout too")
	// The ledger's stream is its event log: each key keeps its writes,
	// republished live on ledger.<bucket>.>.
	require.EqualValues(t, kvledger.EventHistory, si.Config.MaxMsgsPerSubject)
	require.Equal(t, kvledger.LiveSubject(defaultLedgerBucket), si.Config.RePublish.Destination)
	_, err = n.JS.Stream(ctx, "LEDGER")
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "no separate events stream")
}

// A core subscriber of ledger.> sees each record write once, on
// ledger.<bucket>.<key>, legible (the stored record names its status and
// transition) with the transition in a header; events tail prints each
// write once.
func TestLiveFeedOneMessagePerWrite(t *testing.T) {
	c, n := newCLI(t)
	msgs := make(chan *nats.Msg, 64)
	sub, err := n.NC.ChanSubscribe("ledger.>", msgs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, n.NC.Flush())
	c.ok("ledger", "admit", "--no-kind", "first", "--seq", "1", "--create")
	natstest.Recv(t, msgs, 5*time.Second, "the first admission")
	tail := c.start("--json", "events", "tail", "--count", "5")
	natstest.Eventually(t, 10*time.Second, liveTailSubscribed(n.Server.NATS, defaultLedgerBucket), "the live tail subscribed")

	c.ok("ledger", "admit", "--no-kind", "a", "--seq", "1")
	fence := fmt.Sprint(uint64(jsonTask(t, c.ok("--json", "ledger", "claim", "a", "--owner", "w")).Fence))
	c.ok("ledger", "renew", "a", "--owner", "w", "--fence", fence)
	c.ok("ledger", "complete", "a", "--owner", "w", "--fence", fence, "--status", "completed")
	c.ok("ledger", "admit", "--no-kind", "b", "--seq", "1")
	const writes = 5
	require.Equal(t, 0, tail.wait(t), tail.err.String())
	require.Len(t, strings.Split(strings.TrimSpace(tail.out.String()), "\n"), writes, "events tail prints each write once")

	want := []string{"admitted", "claimed", "renewed", "completed", "admitted"}
	for i := range writes {
		m := natstest.Recv(t, msgs, 5*time.Second, "a write")
		require.Equal(t, "ledger."+want[i], m.Header.Get(kvledger.EventHeader))
		var rec map[string]any
		require.NoError(t, json.Unmarshal(m.Data, &rec))
		require.Equal(t, "ledger."+want[i], rec["last_event"])
		require.NotEmpty(t, rec["status"])
	}
	select {
	case m := <-msgs:
		t.Fatalf("a message more than the writes: %s %s", m.Subject, m.Data)
	case <-time.After(200 * time.Millisecond):
	}
}

// On a fresh server, lease ls and lock ls list nothing (their default
// bucket simply has nothing yet); a bucket named with --bucket that does
// not exist is still an error.
func TestLeaseLsFreshServer(t *testing.T) {
	c, n := newCLI(t)
	require.Equal(t, "KEY  HOLDER  HOST  PID  TTL  ACQUIRED  REVISION\n", c.ok("lease", "ls"))
	require.Equal(t, "[]\n", c.ok("--json", "lease", "ls"))
	require.Equal(t, "[]\n", c.ok("--json", "lock", "ls"))
	require.Contains(t, c.ok("lock", "ls"), "NAME")
	require.Contains(t, c.fail("lease", "--bucket", "nob", "ls"), `bucket "nob" does not exist`)
	require.Contains(t, c.fail("lock", "--bucket", "nob", "ls"), `bucket "nob" does not exist`)
	require.False(t, bucketExists(t, n, kvlease.DefaultBucket), "looking created nothing")
}
