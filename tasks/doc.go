// Package tasks runs background tasks on NATS: one Client submits typed
// tasks to a durable ledger, runs the workers that handle them, and
// answers what happened to each.
//
//	type SendEmail struct {
//		To      string `json:"to"`
//		Subject string `json:"subject"`
//	}
//
//	func (SendEmail) Kind() string { return "send_email" }
//
//	c, err := tasks.NewClient(ctx, js, tasks.Config{}) // ledger "natscoord_ledger"
//	err = tasks.AddWorker(c, func(ctx context.Context, t *tasks.Task[SendEmail]) error {
//		return send(ctx, t.Args.To, t.Args.Subject, t.Fence)
//	})
//	err = c.Start(ctx)
//	defer c.Close(context.Background()) // drains running handlers
//
//	sub, err := c.Submit(ctx, SendEmail{To: "a@example.com"}, &tasks.SubmitOpts{Key: "welcome.42"})
//	final, err := c.Wait(ctx, sub.Key)
//
// # What it guarantees
//
// A task is admitted once per key (SubmitOpts.Key; a generated key
// otherwise), runs when the tasks it needs have completed, and is blocked
// when one of them fails. Each attempt runs under a claim whose fence
// token (Task.Fence) rises with every claim: the outcome of an attempt
// whose claim was lost or taken over is refused, so a task ends once,
// with the outcome of its last claim. Arguments round-trip exactly as
// their JSON (integers beyond 2^53 too).
//
// Workers find ready tasks by push, from the ledger bucket's watch; an
// idle client sends nothing but its workers' presence, one write a minute
// each (kvledger/worker's doc, "Presence"). A worker that dies loses its claims when its
// lease expires on the server (Config.ClaimTTL after its last renewal),
// and other workers take them over; a worker that pauses or is cut off
// from the server past that window has its handlers' contexts cancelled
// before anyone else can take over. Failed attempts are retried with
// exponential backoff up to MaxAttempts; Permanent errors and panics are
// failed attempts too, the first without retry. GiveBack hands a task back
// without counting the attempt, for a cause that lies with the worker.
//
// # Controls
//
// Each is stored in the task's record, so every worker obeys it, and
// adds no write to a task that does not use it.
//
//   - RunNow makes a scheduled or retrying task ready at once, its
//     attempts unchanged: one compare-and-set per task (event
//     "ledger.run_now"). `natscoord ledger run-now` and the dashboard's
//     Run now button do the same.
//   - SubmitOpts.Timeout (default Config.Timeout) bounds each attempt:
//     the handler's ctx ends with cause ErrTimeout, and the attempt
//     fails with that error and is retried by the usual rule. The claim
//     is kept until the handler has returned, so the task never runs
//     twice at once.
//   - A handler that returns Snooze(d) runs its task again after d, the
//     attempt not counted. The bound: a task snoozed Config.MaxSnoozes
//     times (default 100) fails at its next snooze.
//
// Config.Backoff, BackoffBase and BackoffMax shape the retry pauses;
// Config.Observer is the one hook for logs, metrics and traces
// (worker.SlogObserver, worker.RecorderObserver, the otelworker module).
//
// # Inspection
//
// Attempts lists a task's attempts: each one's number of its maximum,
// owner, start and end, and how it ended with its own error (a success
// after two failures shows the two errors on the two failed attempts and
// none on the third). It reads the writes the ledger bucket keeps of the
// record (kvledger.Attempts over Ledger.History), the last 64 of them; a
// bucket of the older one-write layout not yet migrated (`natscoord
// ledger migrate`) shows only the attempt its last write ended.
//
// Workers lists the workers that are alive now, in any process: each
// one's owner id, its lease as kvlease reads it (Holder.Expires: when
// the server expires it unless renewed), the kinds it handles and the
// tasks its claims hold. A worker holds its claim lease while it runs
// tasks and for ClaimTTL after; an idle one is listed by its presence
// lease (LiveWorker.Idle), renewed once a minute. `natscoord ledger show KEY` and
// `natscoord ledger workers` print the same, and the dashboard's task and
// workers pages use the same rules.
//
// # Schedules
//
// Schedule stores a periodic task in the ledger (cron or "@every 1m"):
// every worker that handles its kind admits one task per period, once per
// period however many workers run, and starts or stops the schedule as it
// is stored or removed (Unschedule). A spec that does not parse or never
// fires ("0 0 31 2 *") is refused. Periods missed while no worker ran, or
// while the server could not be reached, run at most once (the latest
// of them). `natscoord ledger schedule add|ls|rm` does the same from the
// command line.
//
// # Pausing a kind
//
// Pause stores a pause of a kind in the ledger, which every worker obeys
// as its watch delivers it: the kind's ready tasks wait, in their
// places, claimed by nobody and using no attempt; running ones finish;
// Submit still admits the kind's tasks. Resume starts them at once, by
// push. Schedules of the kind keep admitting unless PauseOpts.Schedules
// is set (then their periods are skipped while the pause lasts). Paused
// lists the paused kinds; `natscoord ledger pause|resume KIND`, `ledger
// stats` and the dashboard's overview do the same.
//
// # Layers
//
// The client wires the layers below it, which stay usable on their own:
// kvledger (the ledger: admission, fenced claims, dependency blocking),
// kvledger/worker (the runtime) and events (the ledger's transitions: the
// ledger bucket's own writes, live on "ledger.<bucket>.>"). Ledger returns the ledger for what the client does not
// wrap; the CLI (`natscoord ledger ...`) reads and repairs the same
// bucket, and taskstest runs handlers in tests against an embedded server.
//
// # Failure modes
//
//   - A server that is unreachable fails Submit after the connection's
//     timeout; nothing is admitted twice when a submission is repeated
//     under the same key.
//   - Clock skew matters only for RunAt and Delay, which a worker compares
//     with its own clock (Config.Clock, for the client and its worker);
//     liveness never reads a wall clock.
//   - List and Workers read the whole ledger per call; use them for
//     operators and dashboards, not on a hot path.
package tasks
