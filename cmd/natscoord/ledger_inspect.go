package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// This file shows what the task runtime's inspection reads: a task's
// attempts (ledger show) and the live workers (ledger workers), each by
// the one rule its package states (kvledger.Attempts,
// worker.LiveWorkers).

// shownTask is `ledger show --json`: the record's fields and its attempts.
type shownTask struct {
	kvledger.TaskState
	AttemptHistory []kvledger.Attempt `json:"attempt_history"`
}

// printAttempts prints the attempts table under a task's record.
func (a *app) printAttempts(as []kvledger.Attempt) error {
	if len(as) == 0 {
		return nil
	}
	rows := make([][]string, 0, len(as))
	for _, at := range as {
		n := strconv.Itoa(at.N)
		if at.Max > 0 {
			n += " of " + strconv.Itoa(at.Max)
		}
		rows = append(rows, []string{n, string(at.Outcome), dash(string(at.Owner)), strconv.FormatUint(uint64(at.Fence), 10),
			timeOrDash(at.Started), timeOrDash(at.Ended), dash(oneLineText(at.Error))})
	}
	if _, err := fmt.Fprintln(a.stdout); err != nil {
		return err
	}
	return writeTable(a.stdout, []string{"ATTEMPT", "OUTCOME", "OWNER", "FENCE", "STARTED", "ENDED", "ERROR"}, rows)
}

// workerJSON is one live worker in `ledger workers --json`.
type workerJSON struct {
	Owner    string           `json:"owner"`
	Lease    string           `json:"lease"`
	Holder   string           `json:"holder"`
	Host     string           `json:"host,omitempty"`
	PID      int              `json:"pid,omitempty"`
	TTLMs    int64            `json:"ttl_ms"`
	Revision uint64           `json:"revision"`
	Expires  time.Time        `json:"expires"`
	Tasks    []workerTaskJSON `json:"tasks"`
	// Kinds the worker handles, as its lease states them (absent for a
	// claimant that states none); Idle: listed by its presence lease.
	Kinds []string `json:"kinds,omitempty"`
	Idle  bool     `json:"idle,omitempty"`
}

type workerTaskJSON struct {
	Key      kvledger.IdempotencyKey `json:"key"`
	Kind     string                  `json:"kind,omitempty"`
	Fence    kvledger.FenceToken     `json:"fence"`
	Attempts int                     `json:"attempts,omitempty"`
}

func (a *app) ledgerWorkers(lf *ledgerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "workers",
		Short: "List the live workers of the ledger, their lease expiry and the tasks they run",
		Long: "workers lists the claimants of the ledger whose lease in --lease-bucket is live: the\n" +
			"workers of `natscoord work` and of the Go runtime (and Ledger claims made with leases).\n" +
			"EXPIRES is when the server expires the worker's lease unless it is renewed: the server's\n" +
			"time of the lease's last write plus its TTL. TASKS are the claimed records naming the lease.\n" +
			"A worker holds its lease while it runs tasks and for its claim TTL after; an idle worker\n" +
			"is listed by its presence lease (renewed once a minute; RUNNING 0, EXPIRES up to 3 minutes\n" +
			"ahead), so a worker killed while idle stays listed until that expires. --json also gives\n" +
			"the kinds each worker handles. It reads the whole ledger: for an operator, not a loop.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withJS(cmd.Context(), func(ctx context.Context, js jetstream.JetStream) error {
				l, err := openLedger(ctx, js, lf.bucket, ledgerInspect)
				if err != nil {
					return err
				}
				defer closeStore(l)
				lr := &claimLeases{js: js, bucket: lf.leaseBucket}
				defer lr.close()
				var ws []worker.LiveWorker
				m, err := lr.manager(ctx, false)
				var nb noBucketError
				switch {
				case errors.As(err, &nb):
					// No lease bucket: no worker has ever claimed a task.
				case err != nil:
					return err
				default:
					if ws, err = worker.LiveWorkers(ctx, m, l); err != nil {
						return err
					}
				}
				return a.printWorkers(ws)
			})
		},
	}
}

func (a *app) printWorkers(ws []worker.LiveWorker) error {
	if a.json {
		out := make([]workerJSON, 0, len(ws))
		for _, w := range ws {
			j := workerJSON{Owner: string(w.Owner), Lease: w.Lease, Holder: w.Holder.ID, Host: w.Holder.Host, PID: w.Holder.PID,
				TTLMs: w.Holder.TTLMillis, Revision: w.Holder.Revision, Expires: w.Holder.Expires, Tasks: []workerTaskJSON{},
				Kinds: w.Kinds, Idle: w.Idle}
			for _, t := range w.Tasks {
				j.Tasks = append(j.Tasks, workerTaskJSON{Key: t.Key, Kind: t.Kind, Fence: t.Fence, Attempts: t.Attempts})
			}
			out = append(out, j)
		}
		return writeJSON(a.stdout, out)
	}
	rows := make([][]string, 0, len(ws))
	for _, w := range ws {
		keys := make([]string, 0, len(w.Tasks))
		for _, t := range w.Tasks {
			keys = append(keys, string(t.Key))
		}
		rows = append(rows, []string{string(w.Owner), dash(w.Holder.Host), strconv.Itoa(w.Holder.PID), timeOrDash(w.Holder.Expires),
			strconv.Itoa(len(w.Tasks)), dash(strings.Join(keys, ","))})
	}
	return writeTable(a.stdout, []string{"WORKER", "HOST", "PID", "EXPIRES", "RUNNING", "TASKS"}, rows)
}
