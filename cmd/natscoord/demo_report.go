package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
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

func (p *progress) count(s kvledger.Status) int {
	n := 0
	for _, v := range p.status {
		if v == s {
			n++
		}
	}
	return n
}

// line is the progress line printed after each event.
func (p *progress) line() string {
	return fmt.Sprintf("[%2d/%d final: %d ok %d failed %d blocked, %d running]", p.final(), p.total,
		p.count(kvledger.StatusCompleted), p.count(kvledger.StatusFailed), p.count(kvledger.StatusBlocked),
		p.count(kvledger.StatusClaimed))
}

// demoEventWidths are the widths of the demo's event columns (event,
// key, status, who acted), fitting every value a run can print: the
// longest event name, the longest key of the graph, and a worker name or
// "by " and the key that blocked a task, whichever is longer.
var demoEventWidths = func() [4]int {
	w := [4]int{len(kvledger.TakenOverEvent), 0, len(kvledger.StatusCompleted), len("worker-16")}
	for _, t := range demoGraph {
		w[1] = max(w[1], displayWidth(string(t.key)))
		w[3] = max(w[3], displayWidth("by "+string(t.key)))
	}
	return w
}()

func printDemoEvent(w io.Writer, since time.Duration, e events.Event, p *progress) {
	who := e.Owner
	if e.BlockedBy != "" {
		who = "by " + e.BlockedBy
	}
	c := demoEventWidths
	fmt.Fprintf(w, "%7.2fs  %s %s %s %s fence %-2d %s\n", since.Seconds(), fitCell(string(e.Name), c[0]),
		fitCell(e.Key, c[1]), fitCell(e.Status, c[2]), fitCell(who, c[3]), e.Fence, p.line())
}

// demoSummary is the end of a demo run, also its --json output.
type demoSummary struct {
	OK        bool          `json:"ok"`
	Bucket    string        `json:"bucket"`
	Workers   int           `json:"workers"`
	Leader    string        `json:"leader"`
	Term      uint64        `json:"leader_term"`
	Leaders   int           `json:"leaders_elected"`
	ElapsedMS int64         `json:"elapsed_ms"`
	Counts    demoCounts    `json:"counts"`
	Tasks     []demoTaskOut `json:"tasks"`
	Fencing   stallReport   `json:"fencing"`
	Problems  []string      `json:"problems,omitempty"`
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
	Status    string `json:"status"`
	Owner     string `json:"owner,omitempty"`
	Fence     uint64 `json:"fence"`
	BlockedBy string `json:"blocked_by,omitempty"`
	Expected  string `json:"expected"`
}

// summarize compares the final snapshot with the predicted outcome.
func summarize(run *demoRun, snap kvledger.Snapshot, workers int, elapsed time.Duration) demoSummary {
	run.mu.Lock()
	s := demoSummary{
		Bucket: run.bucket, Workers: workers, Leader: string(run.leader), Term: run.term, Leaders: run.leaders,
		ElapsedMS: elapsed.Milliseconds(), Fencing: run.stall,
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
			out.Status, out.Owner, out.Fence, out.BlockedBy = string(rec.Status), string(rec.Owner), uint64(rec.Fence), string(rec.BlockedBy)
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
	}
	if s.Leaders != 1 {
		s.Problems = append(s.Problems, fmt.Sprintf("%d leaders were elected, expected exactly 1", s.Leaders))
	}
	switch f := s.Fencing; {
	case f.Worker == "":
		s.Problems = append(s.Problems, fmt.Sprintf("no worker paused on %s", demoStalling))
	case f.TakenBy == "" || f.TakenBy == f.Worker || f.TakenFence <= f.Fence:
		s.Problems = append(s.Problems, fmt.Sprintf("%s was not taken over with a larger fence", demoStalling))
	case !f.LateRefused:
		s.Problems = append(s.Problems, fmt.Sprintf("the paused worker's late Complete was not refused (%q)", f.LateError))
	}
	s.OK = len(s.Problems) == 0
	return s
}

func printDemoSummary(w io.Writer, s demoSummary) error {
	rows := make([][]string, 0, len(s.Tasks))
	for _, t := range s.Tasks {
		rows = append(rows, []string{t.Task, t.Status, dash(t.Owner), strconv.FormatUint(t.Fence, 10), dash(t.BlockedBy)})
	}
	fmt.Fprintln(w)
	if err := writeTable(w, []string{"TASK", "STATUS", "OWNER", "FENCE", "BLOCKED-BY"}, rows); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d tasks: %d completed, %d failed, %d blocked", s.Counts.Tasks, s.Counts.Completed, s.Counts.Failed, s.Counts.Blocked)
	if s.Counts.Other > 0 {
		fmt.Fprintf(w, ", %d unfinished", s.Counts.Other)
	}
	fmt.Fprintf(w, " in %.2fs with %d workers\n", float64(s.ElapsedMS)/1000, s.Workers)
	fmt.Fprintf(w, "leader:  %s (term %d, %d elected)\n", dash(s.Leader), s.Term, s.Leaders)
	if f := s.Fencing; f.Worker != "" {
		fmt.Fprintf(w, "fencing: %s paused holding %s (fence %d); %s took it over (fence %d); the late Complete with fence %d was %s\n",
			f.Worker, demoStalling, f.Fence, dash(string(f.TakenBy)), f.TakenFence, f.Fence, refused(f))
	}
	if s.OK {
		_, err := fmt.Fprintln(w, "outcome: as predicted")
		return err
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
	_, err := fmt.Fprintln(w, "outcome: NOT as predicted")
	return err
}

func refused(f stallReport) string {
	if f.LateRefused {
		return "refused (" + f.LateError + ")"
	}
	if f.LateError == "" {
		return "ACCEPTED"
	}
	return "rejected for another reason (" + f.LateError + ")"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
