package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// Every command that changes tasks a filter picks, or takes no key,
// lists them and changes nothing without --yes: it exits 1 saying to add
// --yes (never waiting for an answer: the test's stdin is empty, as a CI
// job's is). --dry-run lists them and exits 0; --yes changes them; named
// keys are changed at once. Before, rm --prefix, cancel and reopen by
// filter and purge acted at once on whatever matched.
func TestFilteredChangesNeedYes(t *testing.T) {
	c, n := newCLI(t)
	for _, k := range []string{"mail-1", "mail-2", "keep"} {
		c.ok("ledger", "admit", k, "--kind", "mail")
	}
	l := openTestLedger(t, n)
	finish(t, l, "keep", kvledger.StatusCompleted)

	for _, args := range [][]string{
		{"ledger", "cancel", "--prefix", "mail-"},
		{"ledger", "cancel", "--kind", "mail"},
		{"ledger", "cancel", "--phase", "pending"},
	} {
		r := c.run(args...)
		require.Equal(t, 1, r.code, "%v: %s", args, r.stdout)
		require.Regexp(t, `(?m)^KEY\s+PHASE\s+ACTION\s+ERROR$`, r.stdout, args)
		require.Regexp(t, `(?m)^mail-1\s+pending\s+would cancel\s+-$`, r.stdout, args)
		require.Regexp(t, `(?m)^mail-2\s+pending\s+would cancel\s+-$`, r.stdout, args)
		require.Contains(t, r.stdout, "would cancel 2 task(s), 0 error(s)", args)
		require.Equal(t, "natscoord: ledger cancel: nothing changed: add --yes to cancel the 2 task(s) listed as \"would cancel\" (--dry-run only lists them)\n",
			r.stderr, args)
	}
	require.Equal(t, kvledger.PhasePending, taskPhase(t, l, "mail-1"), "nothing changed without --yes")

	// --json lists the same, each task with its phase, and also fails.
	r := c.run("--json", "ledger", "cancel", "--prefix", "mail-")
	require.Equal(t, 1, r.code)
	var rows []map[string]string
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rows))
	require.Equal(t, []map[string]string{{"key": "mail-1", "phase": "pending", "action": "would cancel"},
		{"key": "mail-2", "phase": "pending", "action": "would cancel"}}, rows)
	require.Contains(t, r.stderr, "add --yes")

	// --dry-run shows and succeeds; --yes acts.
	require.Contains(t, c.ok("ledger", "cancel", "--prefix", "mail-", "--dry-run"), "would cancel 2 task(s)")
	require.Equal(t, kvledger.PhasePending, taskPhase(t, l, "mail-2"))
	require.Contains(t, c.ok("ledger", "cancel", "--prefix", "mail-", "--yes"), "cancelled 2 task(s), 0 error(s)")
	require.Equal(t, kvledger.PhaseCancelled, taskPhase(t, l, "mail-2"))

	// reopen, rm and purge by filter, and purge with none, ask too.
	for _, args := range [][]string{
		{"ledger", "reopen", "--phase", "cancelled"},
		{"ledger", "rm", "--prefix", "mail-"},
		{"ledger", "purge"},
		{"ledger", "purge", "--kind", "mail"},
	} {
		r := c.run(args...)
		require.Equal(t, 1, r.code, "%v: %s", args, r.stdout)
		require.Contains(t, r.stdout, "would ", args)
		require.Contains(t, r.stderr, "nothing changed: add --yes to ", args)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), args)
	}
	require.Equal(t, kvledger.PhaseCancelled, taskPhase(t, l, "mail-1"))
	require.Equal(t, kvledger.PhaseCompleted, taskPhase(t, l, "keep"))

	// Named keys need no --yes.
	require.Contains(t, c.ok("ledger", "reopen", "mail-1"), "reopened 1 task(s)")
	require.Contains(t, c.ok("ledger", "rm", "keep"), "removed 1 task(s)")
	// A filter that picks nothing has nothing to confirm.
	require.Contains(t, c.ok("ledger", "rm", "--prefix", "none-"), "removed 0 task(s), 0 error(s)")

	for _, cmd := range []string{"reopen", "cancel", "rm", "purge"} {
		help := strings.Join(strings.Fields(c.ok("ledger", cmd, "--help")), " ")
		require.Contains(t, help, "--yes", cmd)
		require.Regexp(t, `without (it|--yes)[^.]*lists [^.]*as --dry-run does[^.]*exits 1`, help, cmd)
	}
}

// --phase picks tasks for every operator action as for ls, "cancelled"
// included, and the reports name the phase; --state is its deprecated
// alias, read as --phase with a warning on stderr.
func TestOperatorActionsTakePhase(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "a", "--kind", "k")
	c.ok("ledger", "admit", "b", "--kind", "k")
	c.ok("ledger", "cancel", "a")
	l := openTestLedger(t, n)
	finish(t, l, "b", kvledger.StatusFailed)

	require.Regexp(t, `(?m)^a\s+cancelled\s+would reopen\s+-$`, c.ok("ledger", "reopen", "--phase", "cancelled", "--dry-run"))
	require.NotContains(t, c.ok("ledger", "reopen", "--phase", "cancelled", "--dry-run"), "b ")
	require.Equal(t, map[string]string{"b": "would remove"}, opReport(t, c.ok("--json", "ledger", "rm", "--phase", "failed", "--dry-run")))
	require.Equal(t, map[string]string{"a": "would remove", "b": "would remove"},
		opReport(t, c.ok("--json", "ledger", "purge", "--phase", "failed,cancelled", "--dry-run")))

	r := c.run("ledger", "reopen", "--state", "cancelled", "--yes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "natscoord: ledger reopen: --state is deprecated: use --phase, which takes the same phases\n", r.stderr)
	require.Contains(t, r.stdout, "reopened 1 task(s)")
	require.Equal(t, kvledger.PhasePending, taskPhase(t, l, "a"))
	require.Equal(t, kvledger.PhaseFailed, taskPhase(t, l, "b"))
}

// --prefix is a raw string prefix; --under picks a key and the keys below
// it at a "/"; --schedule picks one schedule's period tasks, which
// --prefix schedule/NAME does not (it picks those of NAMEly too). The
// same filters pick for ls and for the operator actions.
func TestKeyFiltersAtABoundary(t *testing.T) {
	c, _ := newCLI(t)
	keys := []string{"etl", "etl/a", "etl/b/c", "etl2/a", "etlx",
		"schedule/night/2026-12-01T02:00:00Z", "schedule/nightly/2026-12-01T02:00:00Z",
		"schedule/night/sub/2026-12-01T02:00:00Z", "schedule/night/notatime"}
	for _, k := range keys {
		c.ok("ledger", "admit", k, "--kind", "k")
	}
	ls := func(args ...string) []string {
		t.Helper()
		var tasks []kvledger.TaskState
		require.NoError(t, json.Unmarshal([]byte(c.ok(append([]string{"--json", "ledger", "ls"}, args...)...)), &tasks))
		out := []string{}
		for _, t := range tasks {
			out = append(out, string(t.Key))
		}
		return out
	}
	require.ElementsMatch(t, []string{"etl", "etl/a", "etl/b/c", "etl2/a", "etlx"}, ls("--prefix", "etl"), "a raw prefix")
	require.ElementsMatch(t, []string{"etl", "etl/a", "etl/b/c"}, ls("--under", "etl"))
	require.ElementsMatch(t, []string{"etl", "etl/a", "etl/b/c"}, ls("--under", "etl/"), "a trailing / is the same path")
	require.ElementsMatch(t, []string{"etl/b/c"}, ls("--under", "etl/b"))
	require.ElementsMatch(t, []string{"etl/a"}, ls("--under", "etl", "--prefix", "etl/a"), "every filter applies")
	require.ElementsMatch(t, []string{"schedule/night/2026-12-01T02:00:00Z", "schedule/nightly/2026-12-01T02:00:00Z",
		"schedule/night/sub/2026-12-01T02:00:00Z", "schedule/night/notatime"}, ls("--prefix", "schedule/night"))
	require.ElementsMatch(t, []string{"schedule/night/2026-12-01T02:00:00Z", "schedule/night/sub/2026-12-01T02:00:00Z",
		"schedule/night/notatime"}, ls("--under", "schedule/night"))
	require.ElementsMatch(t, []string{"schedule/night/2026-12-01T02:00:00Z"}, ls("--schedule", "night"))
	require.ElementsMatch(t, []string{"schedule/night/sub/2026-12-01T02:00:00Z"}, ls("--schedule", "night/sub"))
	require.Contains(t, c.fail("ledger", "ls", "--under", "/"), "--under needs a key path")

	// The operator actions pick the same.
	require.Equal(t, map[string]string{"etl": "would cancel", "etl/a": "would cancel", "etl/b/c": "would cancel"},
		opReport(t, c.ok("--json", "ledger", "cancel", "--under", "etl/", "--dry-run")))
	require.Equal(t, map[string]string{"schedule/night/2026-12-01T02:00:00Z": "cancelled"},
		opReport(t, c.ok("--json", "ledger", "cancel", "--schedule", "night", "--yes")))

	help := strings.Join(strings.Fields(c.ok("ledger", "ls", "--help")), " ")
	require.Contains(t, help, "--prefix etl picks etl/a and etl2/a")
	require.Contains(t, help, `--under P picks the key P and the keys that start with P followed by "/" (a "/" that ends P is dropped first)`)
	require.Contains(t, help, "--under etl and --under etl/ both pick etl, etl/a and etl/b/c, not etl2/a")
	require.Contains(t, help, "not those of a schedule named NAMEly or NAME/x")
	require.Contains(t, strings.Join(strings.Fields(c.ok("ledger", "schedule", "--help")), " "),
		"List a schedule's tasks with natscoord ledger ls --schedule NAME")
}

// admit without --kind warns that no worker runs the task, and no worker
// does: `natscoord work` runs the kinds it names only, so the kindless
// task stays pending while its neighbour of the worker's kind completes.
// --no-kind says it is meant; it excludes --kind.
func TestAdmitWithoutKindWarns(t *testing.T) {
	c, _ := newCLI(t)
	r := c.run("ledger", "admit", "orphan")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "orphan admitted: pending")
	require.Equal(t, `natscoord: ledger admit: warning: "orphan" has no kind, so no worker runs it (a worker runs only the kinds it handles: `+
		"natscoord work --kind K); admit it with --kind, or with --no-kind when an owner claims it by hand (ledger claim)\n", r.stderr)

	r = c.run("--json", "ledger", "admit", "orphan")
	require.Empty(t, r.stderr, "not admitted again: nothing to warn of")
	c.ok("ledger", "admit", "meant", "--no-kind")
	c.ok("ledger", "admit", "echoed", "--kind", "echo")
	require.Contains(t, c.fail("ledger", "admit", "both", "--kind", "echo", "--no-kind"), "--no-kind and --kind exclude each other")
	require.Contains(t, strings.Join(strings.Fields(c.ok("ledger", "admit", "--help")), " "), "a worker runs only the kinds it handles")

	work := c.start("work", "--kind", "echo", "--", "cat")
	require.Equal(t, waitCompleted, c.run("ledger", "wait", "echoed").code)
	require.Equal(t, 0, work.stop(t).code)
	rec := jsonTask(t, c.ok("--json", "ledger", "show", "orphan"))
	require.Equal(t, kvledger.PhasePending, rec.Phase(time.Now()), "no worker ran it")
	require.Zero(t, rec.Attempts)
}

// ledger ls shows each task's kind, phase, attempts of the most allowed
// (its own --max-attempts, else the default 3) and the first line of its
// last error, cut; --wide adds SEQ, FENCE and REV.
func TestLedgerLsColumns(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "bad", "--kind", "fail", "--max-attempts", "2")
	c.ok("ledger", "admit", "plain", "--kind", "other", "--seq", "4")
	long := "first line " + strings.Repeat("x", 100)
	c.ok("ledger", "cancel", "plain", "--reason", long+"\nsecond line")

	work := c.start("work", "--kind", "fail", "--backoff", "10ms", "--", "sh", "-c", "echo boom >&2; exit 3")
	require.Equal(t, waitFailed, c.run("ledger", "wait", "bad").code)
	require.Equal(t, 0, work.stop(t).code)

	out := c.ok("ledger", "ls")
	require.Regexp(t, `(?m)^KEY\s+KIND\s+PHASE\s+ATTEMPTS\s+OWNER\s+NEEDS\s+BLOCKED-BY\s+ERROR$`, out)
	require.Regexp(t, `(?m)^bad\s+fail\s+failed\s+2/2\s+\S+\s+-\s+-\s+command exited with status 3: boom$`, out)
	line := lineOf(t, out, "plain")
	require.Regexp(t, `^plain\s+other\s+cancelled\s+0/3\s+-\s+-\s+-\s+first line x+`+truncMarker+`$`, line)
	require.NotContains(t, out, "second line")
	require.LessOrEqual(t, displayWidth(line[strings.Index(line, "first line"):]), errCellWidth)

	wide := c.ok("ledger", "ls", "--wide")
	require.Regexp(t, `(?m)^KEY\s+KIND\s+PHASE\s+ATTEMPTS\s+SEQ\s+OWNER\s+FENCE\s+NEEDS\s+BLOCKED-BY\s+REV\s+ERROR$`, wide)
	require.Regexp(t, `(?m)^plain\s+other\s+cancelled\s+0/3\s+4\s+-\s+\d+\s+-\s+-\s+\d+\s+first line`, wide)

	// --json has the whole error and the stored status beside the phase.
	var tasks []map[string]any
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "ls", "--kind", "other")), &tasks))
	require.Len(t, tasks, 1)
	require.Equal(t, long+"\nsecond line", tasks[0]["last_error"])
	require.Equal(t, "failed", tasks[0]["status"])
	require.Equal(t, "cancelled", tasks[0]["phase"])
}

// lineOf returns the line of out that starts with key.
func lineOf(t *testing.T, out, key string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, key+" ") {
			return l
		}
	}
	require.Failf(t, "no line", "%q in %q", key, out)
	return ""
}
