package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// progress tracks the latest status of every task from the live events.
type progress struct {
	total  int
	status map[string]kvledger.Status
}

func newProgress(total int) *progress {
	return &progress{total: total, status: make(map[string]kvledger.Status, total)}
}

func (p *progress) apply(e events.Event) { p.status[e.Key] = kvledger.Status(e.Status) }

// final counts tasks that reached completed, failed or blocked.
func (p *progress) final() int {
	n := 0
	for _, s := range p.status {
		if s.Terminal() || s == kvledger.StatusBlocked {
			n++
		}
	}
	return n
}

// crashReport records the crash: the worker killed while it ran
// demoCrashed, who took the task over, and a write with the dead
// worker's fence refused.
type crashReport struct {
	Worker      string `json:"worker"`
	Fence       uint64 `json:"fence"`
	TakenBy     string `json:"taken_over_by,omitempty"`
	TakenFence  uint64 `json:"takeover_fence,omitempty"`
	LateRefused bool   `json:"stale_fence_refused"`
	LateError   string `json:"stale_fence_error,omitempty"`
}

// crashes says which worker to kill for event e: the `natscoord work`
// process that has just claimed demoCrashed on its first attempt (the one
// that hangs), once.
func (r *demoRun) crashes(e events.Event, procs map[string]*demoProc) *demoProc {
	if !r.crash || e.Name != kvledger.ClaimedEvent || kvledger.IdempotencyKey(e.Key) != demoCrashed {
		return nil
	}
	p := procs[e.Owner]
	r.mu.Lock()
	defer r.mu.Unlock()
	if p == nil || r.killed.Worker != "" {
		return nil
	}
	r.killed = crashReport{Worker: e.Owner, Fence: e.Fence}
	return p
}

// wasKilled says whether the demo killed worker name.
func (r *demoRun) wasKilled(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return name != "" && r.killed.Worker == name
}

// checkStaleFence writes, as the killed worker would had it only paused
// and then woken, a completion of demoCrashed with its old fence: the
// ledger must refuse it, since the task was claimed again with a larger
// one.
func (r *demoRun) checkStaleFence(ctx context.Context, l *kvledger.Ledger) {
	r.mu.Lock()
	k := r.killed
	r.mu.Unlock()
	if k.Worker == "" {
		return
	}
	late := l.Complete(ctx, kvledger.Actor(k.Worker), demoCrashed, kvledger.OwnerID(k.Worker), kvledger.FenceToken(k.Fence), kvledger.StatusCompleted, wall.Now())
	r.mu.Lock()
	defer r.mu.Unlock()
	r.killed.LateRefused = errors.Is(late, kvledger.ErrFenced)
	if late != nil {
		r.killed.LateError = late.Error()
	}
}

// demoReport prints the run as it goes: a line per thing a user would
// want to know (a task done, failed, retried, blocked, a worker killed, a
// task taken over), and with --detail the ledger's events underneath.
type demoReport struct {
	w        io.Writer
	human    bool
	detail   bool
	run      *demoRun
	start    time.Time
	admitted bool
	events   []timedEvent // with --detail: printed after the run, owners named
	retries  map[string]string
}

type timedEvent struct {
	at time.Duration
	e  events.Event
}

func newDemoReport(w io.Writer, human, detail bool, run *demoRun, start time.Time) *demoReport {
	return &demoReport{w: w, human: human, detail: detail, run: run, start: start, retries: map[string]string{}}
}

func (r *demoReport) line(format string, v ...any) {
	if r.human {
		fmt.Fprintf(r.w, "%6.2fs  %s\n", wall.Now().Sub(r.start).Seconds(), fmt.Sprintf(format, v...))
	}
}

// demoKeyWidth fits every key of the graph.
var demoKeyWidth = func() int {
	n := 0
	for _, t := range demoGraph {
		n = max(n, displayWidth(string(t.key)))
	}
	return n
}()

func (r *demoReport) header(services int, where string) {
	if !r.human {
		return
	}
	fmt.Fprintf(r.w, "natscoord demo: a build pipeline of %d tasks on %s\n", len(demoGraph), where)
	fmt.Fprintf(r.w, "  svc-1..svc-%d    Go services: tasks.Client, AddWorker for the typed \"build\" tasks\n", services)
	fmt.Fprintf(r.w, "  work-1, work-2  natscoord work --kind shell -- sh -c '...', for the \"shell\" tasks\n\n")
}

// event reports one ledger event.
func (r *demoReport) event(e events.Event) {
	if r.detail {
		r.events = append(r.events, timedEvent{at: wall.Now().Sub(r.start), e: e})
	}
	key := fitCell(e.Key, demoKeyWidth)
	who := r.run.nameOf(e.Owner)
	switch e.Name {
	case kvledger.AdmittedEvent:
		if !r.admitted {
			r.admitted = true
			r.run.mu.Lock()
			leader := r.run.leader
			r.run.mu.Unlock()
			r.line("%s was elected leader: it submits the tasks (Submit with needs) and waits for them (Wait)", leader)
		}
	case kvledger.RetriedEvent:
		r.retries[e.Key] = e.LastError
		r.line("%s  attempt %d failed (%s): retried after a backoff", key, e.Attempts, e.LastError)
	case kvledger.CompletedEvent:
		switch {
		case e.Status == string(kvledger.StatusFailed):
			r.line("%s  FAILED on %s: %s", key, who, e.LastError)
		case e.Attempts > 1:
			r.line("%s  done by %s (attempt %d)", key, who, e.Attempts)
		default:
			r.line("%s  done by %s", key, who)
		}
	case kvledger.BlockedEvent:
		r.line("%s  blocked: it needs %s, which failed", key, e.BlockedBy)
	case kvledger.ClaimedEvent:
		if r.run.wasKilled(e.Owner) && kvledger.IdempotencyKey(e.Key) == demoCrashed {
			r.line("%s  runs on %s, and hangs: the demo kills %s (SIGKILL), as a crash would", key, who, who)
		}
	case kvledger.TakenOverEvent:
		r.run.mu.Lock()
		dead := r.run.killed.Worker
		r.run.mu.Unlock()
		r.line("%s  taken over by %s: the server expired %s's claim (%v TTL)", key, who, dash(dead), demoShellTTL)
	}
}

// leaderWaited reports the end of the leader's Wait.
func (r *demoReport) leaderWaited() {
	r.run.mu.Lock()
	leader := r.run.leader
	r.run.mu.Unlock()
	r.line("%s's Wait returned: every task has ended", leader)
}

// demoSummary is the end of a demo run, also its --json output.
type demoSummary struct {
	OK           bool          `json:"ok"`
	Bucket       string        `json:"bucket"`
	Services     int           `json:"services"`
	ShellWorkers int           `json:"shell_workers"`
	Leader       string        `json:"leader"`
	Term         uint64        `json:"leader_term"`
	Leaders      int           `json:"leaders_elected"`
	ElapsedMS    int64         `json:"elapsed_ms"`
	Counts       demoCounts    `json:"counts"`
	Tasks        []demoTaskOut `json:"tasks"`
	Crash        *crashReport  `json:"crash,omitempty"`
	Problems     []string      `json:"problems,omitempty"`
}

type demoCounts struct {
	Tasks     int `json:"tasks"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Blocked   int `json:"blocked"`
	Other     int `json:"other"`
}

type demoTaskOut struct {
	Task      string `json:"task"`
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	Owner     string `json:"owner,omitempty"`
	Attempts  int    `json:"attempts"`
	Fence     uint64 `json:"fence"`
	BlockedBy string `json:"blocked_by,omitempty"`
	LastError string `json:"last_error,omitempty"`
	Expected  string `json:"expected"`
}

// summarize compares the final snapshot with the predicted outcome.
func summarize(run *demoRun, snap kvledger.Snapshot, services int, elapsed time.Duration) demoSummary {
	run.mu.Lock()
	s := demoSummary{
		Bucket: run.bucket, Services: services, ShellWorkers: demoProcs, Leader: run.leader, Term: run.term,
		Leaders: run.leaders, ElapsedMS: elapsed.Milliseconds(),
	}
	if run.crash {
		k := run.killed
		s.Crash = &k
	}
	run.mu.Unlock()
	byKey := make(map[kvledger.IdempotencyKey]kvledger.TaskState, len(snap.Tasks))
	for _, t := range snap.Tasks {
		byKey[t.Key] = t
	}
	expected := demoExpected()
	for _, t := range demoGraph {
		rec, ok := byKey[t.key]
		exp := expected[t.key]
		out := demoTaskOut{Task: string(t.key), Status: "missing", Expected: string(exp.status)}
		if ok {
			out.Kind, out.Status, out.Owner, out.Attempts = rec.Kind, string(rec.Status), run.nameOf(string(rec.Owner)), rec.Attempts
			out.Fence, out.BlockedBy, out.LastError = uint64(rec.Fence), string(rec.BlockedBy), rec.LastError
		}
		s.Tasks = append(s.Tasks, out)
		s.Counts.Tasks++
		switch rec.Status {
		case kvledger.StatusCompleted:
			s.Counts.Completed++
		case kvledger.StatusFailed:
			s.Counts.Failed++
		case kvledger.StatusBlocked:
			s.Counts.Blocked++
		default:
			s.Counts.Other++
		}
		if !ok || rec.Status != exp.status || rec.BlockedBy != exp.blockedBy {
			s.Problems = append(s.Problems, fmt.Sprintf("task %s is %s (blocked by %q), expected %s (blocked by %q)",
				t.key, out.Status, out.BlockedBy, exp.status, exp.blockedBy))
		}
		if t.key == demoRetried && ok && rec.Attempts != 2 {
			s.Problems = append(s.Problems, fmt.Sprintf("task %s took %d attempts, expected 2", t.key, rec.Attempts))
		}
		if t.key == demoCrashed && s.Crash != nil && ok {
			s.Crash.TakenBy, s.Crash.TakenFence = out.Owner, out.Fence
		}
	}
	if s.Leaders != 1 {
		s.Problems = append(s.Problems, fmt.Sprintf("%d leaders were elected, expected exactly 1", s.Leaders))
	}
	switch c := s.Crash; {
	case c == nil:
	case c.Worker == "":
		s.Problems = append(s.Problems, fmt.Sprintf("no worker was killed running %s", demoCrashed))
	case c.TakenBy == "" || c.TakenBy == c.Worker || c.TakenFence <= c.Fence:
		s.Problems = append(s.Problems, fmt.Sprintf("%s was not taken over with a larger fence", demoCrashed))
	case !c.LateRefused:
		s.Problems = append(s.Problems, fmt.Sprintf("a completion with the killed worker's fence was not refused (%q)", c.LateError))
	}
	s.OK = len(s.Problems) == 0
	return s
}

// summary prints the run's outcome in plain words, and with --detail the
// ledger underneath.
func (r *demoReport) summary(s demoSummary) error {
	w := r.w
	var done, failed, blocked []string
	for _, t := range s.Tasks {
		switch kvledger.Status(t.Status) {
		case kvledger.StatusCompleted:
			done = append(done, t.Task)
		case kvledger.StatusFailed:
			failed = append(failed, t.Task+" ("+t.LastError+")")
		case kvledger.StatusBlocked:
			blocked = append(blocked, t.Task)
		}
	}
	fmt.Fprintf(w, "\n%d tasks: %d completed, %d failed, %d blocked", s.Counts.Tasks, s.Counts.Completed, s.Counts.Failed, s.Counts.Blocked)
	if s.Counts.Other > 0 {
		fmt.Fprintf(w, ", %d unfinished", s.Counts.Other)
	}
	fmt.Fprintf(w, " in %.2fs\n", float64(s.ElapsedMS)/1000)
	fmt.Fprintf(w, "  completed  %s\n", strings.Join(done, ", "))
	if len(failed) > 0 {
		fmt.Fprintf(w, "  failed     %s\n", strings.Join(failed, ", "))
	}
	if len(blocked) > 0 {
		fmt.Fprintf(w, "  blocked    %s: they need %s, which failed, so they never ran\n", strings.Join(blocked, ", "), demoFailing)
	}
	if e, ok := r.retries[string(demoRetried)]; ok {
		fmt.Fprintf(w, "  retried    %s: attempt 1 failed (%s), attempt 2 completed\n", demoRetried, e)
	}
	fmt.Fprintf(w, "  leader     %s, elected among %d services: it submitted the graph and waited for it\n", dash(s.Leader), s.Services)
	if c := s.Crash; c != nil && c.Worker != "" {
		fmt.Fprintf(w, "  crash      %s was killed running %s; %s ran it again once the server expired the dead worker's claim\n",
			c.Worker, demoCrashed, dash(c.TakenBy))
	}
	if r.detail {
		if err := r.printDetail(s); err != nil {
			return err
		}
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
	if !s.OK {
		_, err := fmt.Fprintln(w, "outcome: NOT as predicted")
		return err
	}
	fmt.Fprintln(w, "outcome: as predicted")
	if !r.detail {
		_, err := fmt.Fprintln(w, "The ledger underneath all this: natscoord demo --detail")
		return err
	}
	return nil
}

// printDetail prints the ledger's events of the run, the final records
// with their fence tokens, and the stale fence refused.
func (r *demoReport) printDetail(s demoSummary) error {
	w := r.w
	fmt.Fprintf(w, "\nThe ledger underneath (bucket %s): its events, in order\n", s.Bucket)
	widths := [4]int{len(kvledger.TakenOverEvent), demoKeyWidth, len(kvledger.StatusCompleted), 0}
	for _, te := range r.events {
		widths[3] = max(widths[3], displayWidth(r.who(te.e)))
	}
	for _, te := range r.events {
		e := te.e
		fmt.Fprintf(w, "%6.2fs  %s %s %s %s fence %-2d rev %d\n", te.at.Seconds(), fitCell(string(e.Name), widths[0]),
			fitCell(e.Key, widths[1]), fitCell(e.Status, widths[2]), fitCell(r.who(e), widths[3]), e.Fence, e.Revision)
	}
	rows := make([][]string, 0, len(s.Tasks))
	for _, t := range s.Tasks {
		rows = append(rows, []string{t.Task, t.Kind, t.Status, dash(t.Owner), strconv.Itoa(t.Attempts), strconv.FormatUint(t.Fence, 10), dash(t.BlockedBy)})
	}
	fmt.Fprintln(w)
	if err := writeTable(w, []string{"TASK", "KIND", "STATUS", "OWNER", "ATTEMPTS", "FENCE", "BLOCKED-BY"}, rows); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "claims:  each worker's claims are held by one lease in bucket %s that it renews; the server expires it\n", r.run.claimsBucket())
	fmt.Fprintf(w, "         if the worker dies (TTL %v for the shell workers, %v for the services)\n", demoShellTTL, worker.DefaultClaimTTL)
	fmt.Fprintf(w, "leader:  %s (term %d, its fencing token; %d elected)\n", dash(s.Leader), s.Term, s.Leaders)
	if c := s.Crash; c != nil && c.Worker != "" {
		fmt.Fprintf(w, "fencing: %s held %s with fence %d when it was killed; %s took it over with fence %d;\n",
			c.Worker, demoCrashed, c.Fence, dash(c.TakenBy), c.TakenFence)
		fmt.Fprintf(w, "         a completion with the old fence %d (as from %s, had it only paused) was %s\n", c.Fence, c.Worker, refused(c))
	}
	return nil
}

// who is an event's actor column: the claim's owner, or what blocked it.
func (r *demoReport) who(e events.Event) string {
	if e.BlockedBy != "" {
		return "by " + e.BlockedBy
	}
	return r.run.nameOf(e.Owner)
}

func refused(c *crashReport) string {
	if c.LateRefused {
		return "refused (" + c.LateError + ")"
	}
	if c.LateError == "" {
		return "ACCEPTED"
	}
	return "rejected for another reason (" + c.LateError + ")"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
