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
// idle client sends nothing. A worker that dies loses its claims when its
// lease expires on the server (Config.ClaimTTL after its last renewal),
// and other workers take them over; a worker that pauses or is cut off
// from the server past that window has its handlers' contexts cancelled
// before anyone else can take over. Failed attempts are retried with
// exponential backoff up to MaxAttempts; Permanent errors and panics are
// failed attempts too, the first without retry.
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
//     with its own clock; liveness never reads a wall clock.
//   - List reads the whole ledger per call; use it for operators and
//     dashboards, not on a hot path.
package tasks
