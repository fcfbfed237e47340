// Package dashboard is natscoord's live web dashboard: an http.Handler,
// mountable under a path prefix, that shows one task ledger (counts per
// phase, charts of the last hour's finished tasks and ready backlog, a
// paged task list with each task's last error, a task's
// arguments, result, attempts, timeline and dependency graph with the
// claim lease's real expiry, the live workers, idle ones included, with
// the kinds each handles, the kinds with pending tasks that no live
// worker handles, and the schedules, stored and seen), the
// leases, locks, semaphores and election leaders of one or more kvlease
// buckets with their holders, fences and TTL countdowns, and a live event
// stream. It also serves Prometheus metrics on /metrics (Families gives
// them, the Go runtime's aside, to a client_golang registry through the
// nested module opstats/promcollector).
//
// # Use
//
//	h, _ := dashboard.New(ctx, dashboard.Config{JS: js, Ledger: "natscoord_ledger", Prefix: "/ui"})
//	defer h.Close()
//	mux.Handle("/ui/", h)
//
// or `natscoord ui`. Without a token or basic auth it answers only
// loopback Host names.
//
// Every badge, filter and count names a task's phase, read through
// kvledger's TaskState.Phase: scheduled (its run-at is ahead), retrying
// (waiting out a backoff), cancelling (a running task asked to stop,
// whose handler has not returned yet) and cancelled are told apart from
// pending, running and failed. Nothing is written when a run-at passes, so the handler keeps
// one timer for the earliest run-at ahead and pushes each record whose
// run-at passed, as it pushes a write.
//
// Task actions (Config.Tasks): reopen, cancel and, when Config.Tasks also
// implements TaskRemover, rm, and TaskRunner, run now (bound to the
// record's revision the task page showed); each on one task from its page, or in bulk
// on keys or a filter (phase, kind, key prefix) from /bulk, whose
// confirmation page is the dry run listing each task and what would
// happen to it. The form then carries exactly the tasks listed, each
// with the revision listed, and each is one call of Config.Tasks bound to
// that revision (the ledger's compare-and-set at it:
// kvledger.AtRevision), so a task that moved since the listing (reopened
// and completed again, say) is refused and named, never acted on. The
// one-task confirmation page carries the revision its question shows in
// the same way. rm, like `natscoord ledger rm`, keeps a task that a
// pending or running task needs, naming it (kvledger.ErrNeeded).
//
// Kind actions (offered unless read-only): the overview's Kinds panel
// lists every kind with tasks or paused, with a Pause or Resume button
// that posts at once (no confirmation page: both are undone by the
// other). Pause creates the kind's pause if absent (kvledger.KVStore
// PauseKind); Resume carries the pause's revision the panel showed and
// is refused once the pause changed (ResumeKind at that revision). The
// paused kinds come from the same record watch as the tasks (its
// WatchRecordsAndControls), so the panel follows pauses by push.
//
// # Where the data comes from
//
//   - Tasks: the ledger store's record watch (kvledger's RecordWatcher,
//     one ordered consumer per store) delivers every record, then
//     every write, delete and retention expiry, into an in-memory view of
//     each record's summary (key, status, kind, owner, fence, needs,
//     times, the last error's first line cut at 200 bytes; never the
//     payload). The view is judged by the records only.
//   - A task's page: its record read from the store (as new as the
//     stream leader), with its arguments and result: indented when they
//     are JSON, else shown as text, escaped either way, the first 16 KiB
//     of each with a "truncated, N bytes" note (N the stored size).
//     Config.HidePayloads (natscoord ui --hide-payloads) keeps them off
//     the page, for payloads that hold secrets.
//   - Events: an ordered consumer on the ledger bucket's stream (its
//     writes are the events: kvledger.EventSource) fills the events page
//     and the event counters. Events never change a task's state on a
//     page (the record watch does), and only the ledger's own event names
//     get a series on /metrics (the rest count as "other").
//   - Charts (the overview), over the last hour a bar a minute, placed
//     by Config.Clock; neither writes anything. Finished per minute: the
//     ledger.completed events (kvledger.CompletedEvent; the Ledger-Status
//     header tells completed from failed; a cancellation is not one), by
//     the minute their write states (the record's UpdatedAt, the
//     writer's clock), counted by the same event consumer. It starts an
//     hour back (or at the 200 events the events page keeps, if those go
//     further back: one message read at start tells which), so a
//     restarted dashboard shows the hour before it started; of the writes
//     before those 200 only the completions are decoded. It shows what
//     the stream still holds: not a completion whose record was removed
//     (ledger rm, purge), expired under a Retention, or rewritten more
//     than kvledger.EventHistory times since. The throughput figures read
//     the same counts. Ready backlog per kind: the records in phase
//     pending (kvledger.PhasePending: due, not claimed, needs completed
//     or not, as the pending card counts them) per kind, from the task
//     view's kvledger.Tally as each minute ends; the last bar is now. It
//     starts with the dashboard (earlier minutes have no bar). The 8
//     kinds highest in the hour are named, the rest drawn as "other
//     kinds"; memory is fixed (an hour of seconds, 60 samples of at most
//     16 kinds).
//   - Leases: per lease bucket, a feed of the bucket's kvlease Manager
//     (Manager.ViewAll, View.Feed: the manager's one watch, which also
//     serves force releases) keeps the live entries in memory, decoded
//     by kvlease.DecodeHolder, and
//     classifies them by key: kvlock's keys by kvlock.ParseKey (locks,
//     election leaders, fair-mode waiters; its data keys are left out),
//     then semaphore slots ("<family>.<key>.<slot>") and plain leases
//     ("<family>.<key>").
//   - Timelines: a key's writes, read on demand from the bucket
//     (kvledger's KeyEvents: the last 64 of the key), together with the
//     dashboard's own actions on that key. Each write is one line, and an
//     attempt's error shows only on the event that ended it. The task's
//     attempts are read from the same events (kvledger.AttemptsOf).
//   - Workers: worker.LiveWorkersOf over the workers' leases in the lease
//     buckets shown (natscoord ui shows the runtime's
//     natscoord_task_claims by default; worker.IsWorkerLease): each
//     claimant lease with the claimed records whose Lease names it, and
//     each idle worker's presence lease (renewed once a minute), with the
//     kinds each lease states. A kind is flagged, on the workers page and
//     the overview, when it has pending tasks (kvledger.Tally's count)
//     and no live worker states it handles it; claimants that state no
//     kinds are counted beside the flag. Schedules: the stored ones (sched.<name>, from
//     the same record watch) and those seen only through the records
//     under the keys worker.PeriodKey makes (worker.ParsePeriodKey).
//
// Pages are rendered on the server (html/template) and fit a 1280 px
// wide window: long keys, holders, lease keys and errors wrap instead of
// pushing the page sideways (TestBrowserNoHorizontalOverflowAt1280). The browser keeps a
// single EventSource on /sse; the server pushes each ledger event, lease
// change and action as it happens, and the page updates rows in place or
// reloads one fragment. Nothing polls: with nothing happening, nothing is
// sent (the charts are moved along once a minute, and only while the
// last hour holds something to draw).
//
// # Scale
//
// The task list is paged by the server: a page walks the view from a
// cursor (admission order, newest first) and stops after one page of
// matches, so a page of 50 out of 100k records costs the records it
// skips, not the ledger (see BenchmarkTaskPage). The view holds a few
// hundred bytes per record; a record that is deleted or expires through
// the ledger's Retention leaves it, with its entries in the dependents
// index.
//
// # Security
//
//   - No secret reaches the page: leases are shown by holder id, host, pid,
//     revision (the fence) and TTL; the owner hash and transfer tokens are
//     never rendered. A task's arguments and result appear on its own
//     page only, and with Config.HidePayloads on none.
//   - Every key is shown through one function that quotes bytes that are
//     not printable UTF-8 and is then escaped by html/template or, in the
//     SVG graph, by the XML escaper. Keys travel in URLs query-escaped and
//     in server-sent events as that escaped reference, so any byte
//     sequence round-trips exactly.
//   - Actions are POST only, carry a per-handler CSRF token that only a
//     same-origin page can read, and pass net/http's cross-origin
//     protection (Sec-Fetch-Site / Origin). Config.ReadOnly removes them.
//   - Authentication is Config.Token (a bearer header or a cookie set by
//     visiting any page with ?token=; the cookie holds an HMAC of the
//     token, not the token) or Config.BasicAuth. The natscoord ui command
//     refuses a non-loopback listen address without one.
//   - Without either, only loopback names (and Config.AllowedHosts) are
//     accepted in the Host header, so a DNS-rebound page of another site
//     cannot use a loopback dashboard.
//
// # Failure modes
//
//   - A lost connection stops the consumers' deliveries; nats.go's
//     ordered consumers recreate themselves and resume after the last
//     sequence they delivered, so the view catches up when the connection
//     returns (a record watch that ends is started again, and records gone
//     meanwhile leave the view). Meanwhile the handler follows the
//     connection's status: the live badge says "NATS unreachable", pages
//     say they show the last known state, and a page or action that must
//     read answers 503 at once.
//   - A browser whose event buffer fills (a stalled tab), or that takes
//     longer than Config.StreamWriteTimeout to take one message, is
//     disconnected; EventSource reconnects and the page reloads its
//     fragments. At most Config.MaxStreams streams are open (503 beyond).
//   - The TTL countdown is a display: it counts from the server's
//     timestamp of the lease's last write. Only the server expires a
//     lease; the row disappears when its expiry marker arrives.
package dashboard
