// Package worker is the task runtime of kvledger: workers that find
// ready tasks by push, run a handler per task kind under a claim that the
// server judges, renew it on one shared scheduler, retry with backoff,
// admit periodic tasks, and drain on shutdown.
//
// # Using it
//
//	w, _ := worker.New(ctx, js, ledger, worker.Config{Concurrency: 16})
//	_ = w.Handle("resize", func(ctx context.Context, t *worker.Task) error {
//		var img Image
//		if err := t.Decode(&img); err != nil {
//			return worker.Permanent(err) // never retried
//		}
//		return resize(ctx, img, t.Fence()) // error: retried with backoff
//	})
//	_ = w.Start(ctx)
//	defer w.Close(context.Background()) // drain
//
// Tasks are admitted with kvledger.Ledger.Submit (kind, run-at or delay,
// max attempts, priority, group) or AdmitMany; WaitFinal waits, by push,
// for tasks to end.
//
// # The runtime's protocol with the ledger
//
// The worker makes three calls on a kvledger.Ledger that no user of the
// ledger makes: the claim of a task from the record its watch saw, under
// the worker's one lease and its default attempt limit; the outcome of
// an attempt, sent without waiting (pipelined) or awaited; and the
// retry-or-fail decision of a failed attempt (with its rule, whether a
// task used its last attempt). They are not kvledger's exported API:
// kvledger hands them to this package through kvledger/internal/ledgerrt,
// which Go lets only kvledger and the packages below it import, so the
// protocol can change with the runtime without binding the ledger's
// users, and a user cannot write an outcome that bypasses the runtime's
// bookkeeping. protocol.go asserts each to its type when the package
// loads (TestProtocolHooks). A user that claims without the runtime
// (kvledger.Ledger.Claim, ClaimIfReady, ClaimNext, ClaimLeased) ends its
// claim with Complete or Release. Each decision is made in one place in
// kvledger: the claim (claim_ready.go), the record an outcome makes
// (finish.go), the retry-or-fail decision (attempt_limit.go).
//
// A handler that cannot run its task for a cause of its own (a command
// that is gone, a missing local resource) returns GiveBack(err): the task
// is pending again after the first retry's pause, the attempt not
// counted, err its last error.
//
// # Controls on an attempt
//
// Two controls shape an attempt, both decided in controls.go and reaching
// the attempt at two points only (the handler's call and the outcome in
// run.go): a timeout, the record's TimeoutMS (kvledger.Submission.
// Timeout) else Config.Timeout, armed on Config.Clock when the handler
// starts, ends the handler's context with cause ErrTimeout, and the
// attempt fails with it (retryOrFail, the usual rule) once the handler
// has returned: the claim is held, renewed, until then. A handler's
// Snooze(d) gives the claim back pending at now+d, uncounted, with the
// record's Snoozes one higher (kvledger.SnoozedEvent); the snooze after
// Config.MaxSnoozes fails the task (ErrSnoozeLimit), the bound that
// stops a task from snoozing forever. Neither costs a task that does
// not use it anything: no timer, no write.
//
// # Readiness
//
// A task is ready when its record is pending, its RunAt (if any) is not
// after the worker's clock, and every need is completed. Only ready tasks
// reach handlers: the claim itself (the runtime's claim, above) checks
// readiness again against the store, so a worker whose picture is behind
// the store claims nothing early. A need that failed blocks the task, as
// everywhere in kvledger.
//
// # Discovery by push
//
// Each worker watches the ledger's records (kvledger.RecordWatcher: the
// store's one watch of "task.*", shared with every other watcher of the
// store in the process) and its lease keys (a kvlease.Feed of its lease
// manager's view: the manager's one watch of the lease bucket) and keeps,
// in memory: every record's status, kind,
// run-at time, needs, priority and group; per need, the pending tasks
// waiting for it; per kind, a queue of ready keys by priority; per
// limited group, its held slots and the tasks waiting for one; one timer
// heap of run-at times. A change
// costs O(1) plus the dependents of the changed key, so picking the next
// task costs the same on 100k records as on 1k; the whole ledger is read
// once, at Start, as the watch's initial values. When nothing is ready
// and no run-at time is ahead the worker has no timer armed and sends
// nothing but its presence's renewal, once a minute ("Presence"): the
// only other traffic is what the server pushes (the idle test,
// TestIdleWorkerSendsNothing, counts the messages of an idle second).
//
// A claim starts from the record the watch delivered: one
// compare-and-swap on that revision (the runtime's claim, above), no read; a record
// that changed meanwhile is refused by the server and read again. A task
// costs two record writes (claim, outcome), which are also their events
// (kvledger/doc.go, "Events"): nothing else is published. The worker's
// one lease (below) is shared by all its claims, so no lease is written
// per task.
// Concurrency counts running handlers; claims ahead wait outside it (up
// to ClaimAhead); recording the outcome holds no slot, so the next task
// starts while the last one's writes land.
//
// # Claims ahead and pipelined outcomes
//
// A handler waits on no write but its own claim, and usually not even
// that. While all Concurrency handlers run, the worker claims up to
// Config.ClaimAhead more ready tasks (default: Concurrency, at most 64;
// -1 for none), in order (below, "Order"), each claim its own
// compare-and-swap with its own answer (several in flight at once; never
// an atomic batch, where one lost race would refuse them all). A claimed
// task waits for a handler slot, and slots are handed in order, not in
// the order the claims' answers come back: a freed slot goes to the
// first waiting task, unless a task before it is still being claimed,
// for which the slot is kept, for up to 500 ms from the start of that
// claim (orderHold: a claim takes a millisecond or two, but one that
// meets a moving stream leader may wait for OpTimeout, and must not idle
// every handler meanwhile). Claims ahead never put a task before one
// that was known ready when it was claimed, except past that hold. When
// a higher task becomes ready after tasks were claimed ahead, it goes
// next: the slot that frees up first is kept for it while it is claimed,
// and the tasks claimed ahead keep their claims (none is given back for
// it) and start after it, in order (TestClaimAheadYieldsToAHigherTask).
// Claims ahead count against KindConcurrency and GroupLimits like
// running tasks (a task claimed ahead holds its group slot), so a kind or
// group at its limit gets none; a task under a rate limit is never
// claimed ahead ("Rate limits", below). The window trades a little fairness for
// throughput: up to ClaimAhead tasks claimed by this worker wait for its
// handlers while another worker may be idle; workers with long handlers
// should keep ClaimAhead small or set it to -1
// (TestClaimAheadStartsByPriority, TestClaimAheadRespectsLimits).
//
// A task claimed ahead is claimed like any other: its record names the
// worker's one lease, its attempt is counted by the claim, its handler's
// context exists from the claim on. Its handler has not started, so
// however its wait ends, the claim is given back with its attempt taken
// back (# Attempts, below):
//   - Close releases every task claimed ahead at once, before it waits
//     for running handlers: pending again, the attempt not counted, so
//     other workers start them without waiting for the drain
//     (TestClaimAheadGivenBackOnClose);
//   - an operator's cancel ends its wait with ErrCancelled, its handler
//     never runs, and its claim ends cancelled
//     (TestClaimAheadCancelledWhileWaiting);
//   - when the worker's lease ends (a pause, a partition, a server
//     restart longer than ClaimTTL), its wait ends with ErrClaimLost, as
//     a running handler's context does, and the claim is given back as
//     soon as the server answers, unless another worker took it over
//     first (TestClaimAheadLostWithTheWorkersLease,
//     TestWorkOutageGivesBackClaimsAhead);
//   - when the worker dies, the server expires its lease ClaimTTL after
//     its last renewal (default 10 s; rounded up to whole seconds), and
//     other workers take over its claims ahead with the rest of its
//     claims, each counted as an attempt, as after any crash: nobody but
//     the dead worker knew whether its handler had started.
//
// A claim ahead taken over that way counts an attempt its handler may
// never have run. So a task whose claim would use its last allowed attempt is never
// claimed ahead: it waits in the ready queue, in its place, until a
// handler slot would be its at once, and nothing is claimed ahead past it
// meanwhile, so no task behind it starts before it
// (TestClaimAheadSparesTheLastAttempt, TestBacklogStartsInOrder). A claim
// ahead lost with a dead worker can therefore cost a task a retry, never
// fail it unrun.
//
// An outcome is sent without the attempt waiting for it: its
// compare-and-swap on the claim's revision leaves
// (the runtime's pipelined outcome), and the attempt's goroutine goes on to
// the next task. The worker's one collector goroutine waits for the
// answers in the order the outcomes were sent: a refused outcome
// (ErrFenced: the claim was taken over) is dropped and counted lost, as
// before; a transient failure goes through the same retries as an
// awaited outcome; only then is the key filed again (and its group slot
// released), so this worker's next write of the key, a retry's claim,
// always follows its outcome (TestPipelinedOutcomesAllLand). Goroutines
// stay independent of the number of claims: at most 2×Concurrency +
// ClaimAhead attempt goroutines (an outcome in flight holds none), plus
// the collector.
//
// # Order
//
// One producer decides what starts next (produceLocked in dispatch.go):
// it claims ready tasks and hands handler slots to the claimed ones, both
// by one rule (placeBefore in index.go, and readyBefore of the tasks it
// picked, which differs only for fair kinds: below). Ready tasks of a kind start
// highest Priority first (Submission.Priority, default 0, any int), then
// in the order they became ready. A task became ready at a revision of
// the ledger's stream, which the server assigns (unique and increasing,
// the same for every worker; no clock is compared):
//   - the revision of the write that made it ready: its own last write
//     (its admission, a retry's write, a release) or the completion of
//     its last need, whichever came later;
//   - for a task that waited for its RunAt, or for the lease of a claim
//     to end (a takeover), the last revision this worker's watch had
//     delivered when that happened: it goes after every task already
//     ready then;
//   - for the backlog Start finds (every task ready before the worker
//     watched), its own last write or its needs' completions, whichever
//     is later;
//   - ties (tasks made ready by one write, or at one point of the watch)
//     go by their own last write's revision.
//
// A task keeps its place while its record does not change: filed again
// after a claim that failed or a full group, it is still first among its
// equals. Its record changing (a retry's write, a release) makes it ready
// anew, in a new place. This holds with a backlog at Start, with claims
// ahead (above), with retries and with tasks on their last attempt
// (TestBacklogStartsInOrder, five rounds, and through the CLI,
// TestWorkStartsBacklogInOrder). Kinds are still taken in turn, and a
// priority says nothing across kinds or workers: it orders what one
// worker starts next, not which worker wins a record. A running task is
// never pre-empted, and a task's priority is the one its record had when
// it became ready (TestPriorityOrdersReadyTasks).
//
// # Paused kinds
//
// A kind paused in the ledger (kvledger.Pause: tasks.Client.Pause,
// `natscoord ledger pause`) reaches the worker through its record watch,
// with the records and stored schedules, in store order, with nothing
// polled (pause.go). While it is paused the producer skips the kind's
// ready queue: its tasks stay ready, in their places, claimed by nobody
// (claims ahead included) and using no attempt; a task admitted after
// the pause reaches the worker after it, so it never starts (except
// across a catch-up of a watch that fell behind, kvledger.RecordWatcher,
// which delivers the latest records in no order among keys). Running
// tasks of the kind finish, and a task claimed ahead before the pause
// arrived starts when a handler slot frees up (it holds an attempt
// already). A resume wakes the producer, which starts the kind's tasks at
// once, in order (TestPauseHoldsAKindAcrossWorkers in package tasks).
// Schedules of the kind keep admitting while it is paused unless the
// pause says Schedules: then the worker admits no period of them, and
// the periods that pass are skipped, not admitted on resume
// (TestPauseAndSchedules). Config.IgnoreStoredSchedules does not turn
// pauses off. The check costs a map look-up per kind the producer visits,
// and nothing for a kind nobody paused.
//
// # Fair groups
//
// For a kind in Config.FairKinds the rule within one priority is turns by
// group (a record's Group; tasks without one form one group): the producer
// starts the first task of each group with ready tasks in turn (round
// robin), each group's own tasks in the order above. Priority still goes
// first. A group joins the turns at their end when its first task becomes
// ready; the groups of the backlog Start finds join at once, in the order
// of their first tasks. A task filed back unstarted (a claim that failed,
// a full group, its last attempt) keeps its turn while its record does
// not change, as it keeps its place above; a task found taken (by another
// worker) when its turn comes uses its group's turn. Claims ahead follow
// the same order: a picked task's place (readyBefore) is its pick, so
// handler slots go to claimed tasks in the order they were picked, and a
// task of another group that becomes ready meanwhile takes its turn after
// them (TestFairKindTakesGroupsInTurn, TestFairKindKeepsPriority,
// TestFairKindLetsALateGroupIn; through the CLI, TestWorkFairTakesGroupsInTurn).
//
// The turns are each worker's: a worker alternates among the groups it
// sees ready, and nothing is shared between workers, so across several
// workers every worker's starts interleave the groups, and the groups'
// tasks are interleaved overall, but not strictly (two workers may start
// two tasks of one group in a row; TestFairKindAcrossWorkers). Cost, for fair kinds only: one heap
// per (priority, group) with ready tasks and one heap of those groups by
// turn, so a pick is O(log g) in the groups with ready tasks plus
// O(log t) in its group's tasks (BenchmarkIndexPickGroups); the index
// keeps two more numbers per record (a picked task's turn). Other kinds
// keep their one heap and their order.
//
// # Group limits
//
// A record's Group (Submission.Group, at most kvledger.MaxGroupBytes of
// UTF-8) names a concurrency group across kinds: a tenant, an API a
// task calls. Config.GroupLimits bounds, per group, the tasks of the
// group that run at once across every worker of the ledger; a task of a
// group with no limit (or of no group) is not bounded. The limit is a
// counting semaphore, as kvlease's semaphores are: slot i of group g is
// the lease "kvledger.<bucket>.g.<token of g>.<i>" in the workers' lease
// bucket, created if absent with ClaimTTL and renewed on the lease
// manager's one scheduler. An attempt of a limited task takes a free
// slot (tried in random order) before its claim, holds it through its
// handler and the recording of its outcome, and deletes it after. A task
// that finds every slot held is not claimed, so it stays pending and no
// attempt is counted (Stats.GroupFull counts such tries); it waits,
// parked, while the tasks behind it of other groups go on. The slot keys
// live under the ledger's lease prefix, which the lease watch already
// delivers: the worker knows which slots are held and learns that one
// freed up by push (its delete, or the server's expiry marker), with no
// timer and no message sent while it waits (TestGroupWaitSendsNothing).
// A worker that dies loses its slots when the server expires them,
// ClaimTTL after its last renewal (TestGroupSlotOfKilledWorkerComesBack);
// one that closes gives them back as its attempts end
// (TestGroupSlotOfClosedWorkerComesBack). Three workers, four handlers
// each, never ran more than the limit at once
// (TestGroupLimitAcrossWorkers).
//
// Every worker of a ledger should state the same limits. They share the
// slot keys, so when they disagree the largest limit bounds the group,
// and a worker stating N takes only slots 0..N-1: it starts a task only
// while one of those is free. A worker that states no limit for the
// group runs its tasks without a slot, unbounded. A slot lost while its
// handler runs (renewals failed for a whole ClaimTTL: the worker was cut
// off from the server) is logged; the handler is cancelled then anyway,
// since the worker's lease, of the same TTL on the same scheduler, ends
// too, but until the handler returns another worker may hold that slot.
//
// # Rate limits
//
// Config.RateLimits bounds the starts of a kind's tasks, or of a group's
// (of any kind), across every worker of the ledger: at most N in any
// window of Period (worker.RateLimit). It is judged by the server, the
// way group limits are: token i of a limit is the key
// "kvledger.<bucket>.r.k.<token of the kind>.<i>" (a group's "r.g.") in
// the workers' lease bucket, and an attempt of a limited task takes a
// free token (a create-if-absent write with a per-key TTL of Period,
// tried in random order) just before its claim. The token is never
// released or renewed: the server expires it Period after it stored the
// write, and the lease watch, which already delivers every key under the
// ledger's prefix, reports the expiry. So a token is taken at most once
// per Period by anyone, whichever worker, and no process compares its
// clock with another's. A task that finds every token taken is not
// claimed and uses no attempt: it waits, parked like a task of a full
// group, while the tasks behind it of other limits go on, and the
// token's expiry wakes it by push (no timer, nothing sent while it
// waits). A task under both its kind's and its group's limit takes a
// token of each.
//
// Precision. The server counts a TTL in whole seconds, so Period is
// whole seconds (1s to 24h; New refuses others), and expires a key at
// or after its TTL, never before: measured here 0–260 ms after it (the
// server's expiry runs on a timer; on an R3 bucket a leader change
// measures the rest of the TTL on the new leader's clock). A start is
// counted at its token's write; its claim follows it by one round trip
// (and the worker's lease's acquisition when it holds none), its handler
// starts as the claim lands: a task under a rate limit is never claimed
// ahead, so it never waits for a handler slot after taking its token
// (and, as for a last attempt, nothing is claimed ahead past it while it
// waits for one). So the claims, as the server timestamps them, are at
// most N in any window of Period less that round trip
// (TestRateLimitAcrossWorkers: two workers, 3 per 2 s, the third claim
// after any claim came 2.00–2.26 s later, or 4.0 s when a token was
// spent, below).
//
// Cost. One write per start of a limited task, its token, and none for
// a task under no limit; a token whose expiry marker the bucket still
// keeps (a minute) is created in kvlease's three round trips (a create
// refused, a read of the marker, the create at its revision), still one
// stored write. A token taken is spent whatever follows: a claim that
// then fails (another worker claimed the task first, the record changed)
// or a second limit with no token free does not give it back. Workers
// racing for the same ready task can so spend more than one token on one
// start, and a limit then runs below N per Period, never above it
// (two workers: 10 starts at 3 per 2 s took 6.0 to 8.0 s, not 6 s).
// Every worker of a ledger should state the same limits: workers share
// the token keys, so the largest N bounds the limit, and a worker
// stating a smaller N takes only tokens 0..N-1; the Period is each
// worker's own (the TTL it writes), so different periods bound each
// worker's starts by its own. A worker that states no limit for a kind
// or group starts its tasks without tokens.
//
// # Liveness: leases judged by the server
//
// Each worker holds one kvlease lease, "kvledger.<bucket>.w.<token of
// owner and a nuid>" in the lease bucket (Config.Leases or LeaseBucket;
// all workers of a ledger must share it), acquired at its first claim
// (create-if-absent with a per-key TTL, Config.ClaimTTL) and renewed
// every ClaimTTL/3 on the lease manager's one scheduler. Every claim the
// worker makes names it: the claimed record's Lease holds its key. Its
// key is new on every acquisition, so a lease that ended never comes
// back: a record that names it stays free for takeover. Between workers
// that race for a record the record's compare-and-swap decides (the
// loser counts it in Stats.Contended). When a worker dies its lease
// expires on the server; the expiry marker reaches every worker through
// the lease watch, which keeps the set of live lease keys and, per
// lease, the claimed records naming it; each of those records is then a
// takeover candidate, and the first worker whose claim lands takes it
// over with a new fence: within ClaimTTL (rounded up to whole seconds)
// after the last renewal, plus the watch's delivery and one claim
// (TestTakeoverWithinTTL, ClaimTTL 2s: taken over 1.99 s after the
// worker's connection was closed).
//
// The server keeps an expiry marker for a minute (the lease bucket's
// LimitMarkerTTL), and a lease watch resumed after a longer outage of
// the surviving worker's connection would never deliver that expiry. So
// whenever the lease watch resumes after its connection came back
// (kvlease.FeedItem Resumed: kvx's hub swaps in a new watch at once),
// the worker reads every lease its index holds live again, from the
// lease bucket's stream leader (kvledger.LeaseEnded), and takes over the
// claims of those that ended. However long the outage, a dead worker's
// claims are then taken over within ClaimTTL after its last renewal or,
// when later, the reconnect plus that read: one read per live lease
// (each bounded by OpTimeout, up to 5 tries 0.2–1 s apart while a
// restarted server's JetStream does not answer yet) and one claim
// (TestTakeoverAfterOutageLongerThanExpiryMarker: outage past ClaimTTL
// and the marker's lifetime, taken over about 20 ms after the
// reconnect). A record naming a lease the watch
// has not reported (it ended before the watch started, or its create is
// still on its way) is read from the lease bucket's stream leader before
// a takeover. A claimed record that names no lease (written before
// records named their lease, or by a process holding LeaseKey) is
// judged by its per-record key "kvledger.<bucket>.<key>". Nobody
// compares LeaseUntil (kept in the record for operators) with a clock:
// kvledger's Claim and Takeover judge a runtime claim by the same lease
// read (kvledger.LeaseEnded), so `natscoord ledger claim --takeover`
// cannot take a live worker's claim either.
// A worker idle for ClaimTTL releases its lease (it sends nothing while
// idle but its presence, below) and acquires a new one at its next claim.
//
// # Presence
//
// From Start to Close a worker also holds a presence lease
// ("kvledger.<bucket>.p.<owner and a nuid>", TTL three minutes), renewed
// once a minute: an idle process sends nothing but this, at most one
// write a minute. It lists the worker in LiveWorkers (and so on
// `natscoord ledger workers` and the dashboard) while it claims nothing,
// and for up to three minutes after it died. Both of a worker's leases
// state the kinds it handles (kvlease.Holder.Info: {"kinds":[...]}),
// written with the lease and its renewals, so stating them costs no write.
//
// Since one lease carries all of a worker's claims, they live and die
// together: a worker that pauses (GC, SIGSTOP) or is cut off from the
// server past its validity window loses every claim it holds at once,
// every handler's ctx is cancelled with ErrClaimLost, and other workers
// take all of them over within ClaimTTL plus a margin of the watch's
// delivery; the worker's next claim acquires a fresh lease.
//
// A handler's ctx is cancelled as soon as the claim can no longer be
// confirmed, by kvlease's validity-window rule: the window ends at (send
// time of the last confirmed renewal) + ClaimTTL - Margin, on the
// worker's monotonic clock, which is before the server can expire the
// lease (for all the claims under that lease alike). context.Cause says
// ErrClaimLost. It is also cancelled when the
// record moves to another claim (ErrClaimLost) or an operator cancels
// the task (ErrCancelled: Ledger.Cancel's request, CancelRequested on the
// claim), seen through the record watch.
//
// Completion is fenced: the outcome is one compare-and-set that presents
// the claim's fence, and a worker whose claim was taken over gets
// ErrFenced and writes nothing. Once its lease has ended the worker
// writes only two things, both safe without it since no handler runs
// under the claim any more: an outcome whose answer was lost (the server
// went away while it was sent), and the give-back of a claim whose
// handler never started. Each is tried until the server answers (about a
// minute at most, ended by Close) and is refused once another worker
// took the claim over; an outcome found already stored counts as
// written. What the worker reports (Observer, Stats, `natscoord work`'s
// lines) is then what the record holds.
//
// # Retries
//
// A handler that returns an error is retried after Config.Backoff
// (default exponential from 1s, doubling, capped at 1h, with jitter in
// [d/2, d]) until the task's MaxAttempts (record, else
// Config.MaxAttempts, default 3); then the task fails and its
// dependents are blocked. Permanent(err) fails it at once. A panic is a
// failed attempt and never reaches the worker's caller. A task never
// runs more than MaxAttempts times: when the
// claim of its last allowed attempt is lost (the worker crashed or
// paused past its lease), the worker that would take it over writes it
// failed instead, in the same compare-and-set and with a new fence, with
// a LastError naming the lost attempt (kvledger.ErrAttemptsExhausted). The record and its events carry Attempts, LastError and
// RunAt (the next attempt's time).
//
// A claim that fails transiently (a 503 while the ledger's stream has no
// quorum or leader, a timeout, no responders), or fails for what it needs
// (the worker's lease, a group slot, a read of a claim's lease), is tried
// again only after a pause, whichever way the attempt ends: the n-th such
// failure in a row stops every claim of the worker for 250 ms doubling to
// 1 s (claimRetry in run.go, on internal/retry); the task keeps its
// place, so it is the first tried again. A key is so tried at most 4
// times in its first 2 s of failures and once a second after that
// (TestFailedClaimKeepsItsPause: 3 tries per key in 3 s of 503s, where
// the run's end used to file the key straight back, some 1000 a second).
// An outcome write is tried 3 times, 50 and 100 ms apart (finishRetry);
// one that still failed (not refused) leaves the claim to this worker's
// takeover, after the same pause.
//
// # Attempts
//
// An attempt counts when its handler started. The claim's own write
// counts it (Attempts + 1): on the common path the handler starts as soon
// as the claim lands, so claim, handler and outcome cost two writes and
// no more. A claim whose handler never started (a claim ahead still
// waiting for a handler slot) is ended by a write that takes its count
// back in the same compare-and-set that gives the task back
// (kvledger.Outcome Uncount): the record is pending again with its
// Attempts as before the claim, named ReleasedEvent, and it shows as
// given back (ResultReleased, the "released" attempt of
// kvledger.Attempts), never lost. That holds however the wait ended: a
// drain, the worker's lease ending (the give-back is tried until the
// server answers again, about a minute at most, ended by Close), the
// worker's Close; an operator's cancel writes the record itself. So the
// record counts the handlers that ran, with two exceptions, both stated
// where they arise: a handler that returns GiveBack is uncounted by the
// same write (its cause is the worker's, not the task's), and a claim
// ahead taken over from a worker that died, or stayed away past ClaimTTL
// and did not give it back first, stays counted: only that worker knew
// whether its handler had started, and counting it is what stops a task
// that crashes its workers from running for ever (which is also why a
// task's last attempt is never claimed ahead). Writing the start instead
// (a write when a claim ahead's handler starts) would make three writes
// per task under a backlog, where nearly every task is claimed ahead.
//
// Each ending is reported as the record holds it: completed, retried,
// failed (the record's outcome), released (given back, uncounted),
// cancelled (an operator's cancel), lost (taken over, nothing of this
// worker's written; also when a write tried until the server answered
// never got an answer). An outcome whose answer was lost is sent again
// until the server answers, and one found already stored counts as
// written, so the Observer, Stats and `natscoord work` never call an
// attempt lost that `ledger show` shows completed
// (TestOutcomeAnswerLostPastTheLeaseIsReportedAsStored).
//
// # Time
//
// Delayed tasks (RunAt) wait on the worker's one timer heap: a task is
// filed there when the watch delivers it and moved to the ready queue
// when its time comes; the claim checks RunAt again. Periodic tasks
// (Schedule: @every, @hourly..., five-field cron) are admitted by every
// worker that registers the schedule, at the start of each period, under
// the key PeriodKey(name, period start): the ledger's idempotency keeps
// exactly one admission per period, with no elected scheduler. Schedules
// stored in the ledger (kvledger.Schedule: `natscoord ledger schedule
// add`, tasks.Client.Schedule) run the same way on every worker that has
// a handler for their kind, unless Config.IgnoreStoredSchedules: the
// record watch delivers the schedule keys too, so one is started or
// stopped as soon as it is written or removed, in the same loop as those
// registered with Schedule. Periods missed while a worker was paused or
// cut off run once, the latest of them. A cron pattern names wall times
// of its zone: one that a change of offset skips fires once when the gap
// ends (02:30 at 03:00 the night clocks go forward, so a daily job runs
// every day), one that it repeats fires once; each next period is found
// within eight years and in under a millisecond, always after the last,
// so the loop never stalls at a change of offset.
//
// We use the watch and local timers rather than the server's message
// schedules (Nats-Schedule): a schedule message fires into a stream,
// which then needs a consumer per worker and a way to turn the fired
// message into one admission; the idempotency key already gives
// exactly-once admission, so the server schedule would add a stream, a
// consumer and a dependency on nats-server >= 2.12 whose behaviour
// across R3 leader changes is not yet measured, for no gain in
// correctness. An idle worker with no schedules has no timer at all.
//
// # Drain
//
// Close (or the end of Run's ctx) stops claiming, gives back at once the
// tasks claimed ahead (their handlers never started), lets running
// handlers finish for up to DrainTimeout, then cancels the rest
// (ErrDraining). Each cancelled handler's claim is given back when the
// handler returns, not before: the record goes back to pending with its
// attempt not counted (a handler that returns nil completes the task),
// so another worker's watch sees it and starts the task at once, and
// never beside the handler. Close then stops the watches and, once
// every handler has returned, deletes the worker's lease, so a claim
// that could not be given back is free for takeover at once too. (Each
// attempt runs on one goroutine, reused for the next attempt once it is
// done, so at most as many exist as attempts ran at once.) Every
// goroutine of the worker has ended when Close returns nil. A handler
// that ignores its cancelled context is waited for as long as Close's
// ctx allows: when ctx ends first, Close returns its cause, the handler
// keeps its claim, and the worker's lease, and the lease manager the
// worker made, stay and renew until it returns; a later Close waits for
// that.
//
// # Never two runs of a task at once
//
// A claim ends in one place, after its handler: its outcome (completed,
// failed, a retry, given back) is written once the handler has returned,
// and nothing gives the claim back while the handler runs. For each way
// an attempt ends early:
//   - a drain, with DrainTimeout or -1, and Close with an ended ctx:
//     above; the claim is kept, renewed, for as long as the handler
//     runs (TestDrainGivesBackOnlyAfterTheHandlerReturned);
//   - a task cancelled by an operator: Cancel of a running task only
//     asks (CancelRequested on the claim, phase cancelling): the claim,
//     its fence and the worker's lease stay, so no other worker can
//     claim it and Reopen refuses it. The worker cancels the handler's
//     ctx (ErrCancelled; `natscoord work`: SIGTERM, SIGKILL after
//     --grace) and, once it returned, records its outcome, which the
//     ledger writes as cancelled (never retried; dependents blocked).
//     If the worker dies first, the claim that finds its lease expired
//     ends the task cancelled without running it
//     (TestCancelNeverRunsBesideTheHandler,
//     TestCancelOfADeadWorkersTaskEndsItCancelled);
//   - a worker that dies: its handlers die with it, and the server
//     expires its lease ClaimTTL after the last renewal;
//   - a lost lease: when the worker cannot renew its lease (the server
//     is unreachable, restarting or on the other side of a partition),
//     it cannot keep its claims, since renewing is the server's act.
//     Every handler's ctx is then cancelled (ErrClaimLost) at the end of
//     the lease's validity window: the send time of its last confirmed
//     renewal + ClaimTTL - Margin, where Margin is kvlease.Margin(ClaimTTL)
//     = max(50 ms, ClaimTTL/10). The server expires the lease no sooner
//     than ClaimTTL (rounded up to whole seconds) after that renewal
//     reached it, so no other worker can start the task sooner than
//     Margin (1 s at the default ClaimTTL of 10 s) after the window's
//     end. That is the bound: a handler that returns within Margin of
//     the window's end (less the time the worker's timer and the handler
//     take to notice it: a few ms, more on a starved machine;
//     TestTakeoverWithinTTL measures it) never runs beside the task's
//     next run. `natscoord work` kills the
//     command's whole process tree at once (SIGKILL, no --grace) on a
//     lost claim for that reason. As long as the worker can renew, the
//     lease lives, whatever its handlers do.
//
// A process paused past its lease (SIGSTOP, a long GC pause) is the one
// case no worker can stop: its handlers run on when it wakes, while the
// task may have been taken over. Their writes are fenced (below), and
// side effects outside the ledger must carry the fence.
//
// # Metrics
//
// Config.Observer sees every attempt start and finish (Event);
// Observers fans out to several. RecorderObserver records into an
// opstats.Recorder, the one recorder kvlock and kvlease record into too,
// whose WritePrometheus serves them all (Prometheus text, labels
// component, name, op, outcome; name is the task's kind, never its key):
//
//   - natscoord_operations_total{component="worker",op="attempt",outcome=R}
//     and natscoord_operation_duration_seconds{...}: finished attempts by
//     kind and Result R (completed, retried, failed, released, cancelled,
//     lost), with the handler's run time: the tasks that ended each way.
//   - natscoord_operation_duration_seconds{component="worker",op="pickup"}:
//     pickup latency, from when the task became due (Event.Due: its
//     RunAt, else its record's last write) to the claim that started it;
//     tasks with needs and takeovers are not measured, their records
//     not dating when they became due.
//   - component="kvlease", name the lease bucket: the claim lease's
//     acquisitions, renewals (op "renew") and losses (op "lost"), when
//     Config.Leases is a manager whose kvlease.Config.Observer is
//     kvlease.RecorderObserver on the same Recorder.
//
// Stats.Families adds the worker's own counters, for opstats.WriteText
// to write with the Recorder's Families (Stats.WritePrometheus alone):
// natscoord_worker_running and _ready (gauges),
// natscoord_worker_attempts_started_total,
// natscoord_worker_attempts_total{result}, natscoord_worker_panics_total,
// natscoord_worker_claims_contended_total,
// natscoord_worker_claims_taken_over_total,
// natscoord_worker_scheduled_total and natscoord_worker_group_full_total. A gauge of the ledger's tasks by
// status is the ledger's, not a worker's. `natscoord work
// --metrics-listen ADDR` serves all of these on GET /metrics. For
// OpenTelemetry (a span per attempt, the same histograms) use the
// separate module kvledger/worker/otelworker; for a client_golang
// registry, the Recorder's Families and Stats.Families through the
// separate module opstats/promcollector.
//
// # Failure modes, partitions, skew and pauses
//
//   - Crash: the worker's lease expires on the server after ClaimTTL;
//     other workers take over all its claims with higher fences. The
//     crashed attempts count (its claims ahead too: see Attempts); a
//     crash in a task's last allowed attempt fails the task.
//   - Partition from the server: renewals fail; the handler's ctx is
//     cancelled at the end of the validity window, at least Margin
//     before the server can expire the lease (the bound, above); the
//     worker then writes nothing. A minority side of an R3 cluster can
//     neither claim nor renew.
//   - Clock skew: liveness does not use wall clocks at all (the server
//     measures the TTL, the holder its monotonic window), so a worker
//     whose clock is off by any amount keeps its claim for as long as
//     it renews and nobody takes it over early. Skew matters only for
//     RunAt, which a worker compares with its own clock: a worker ahead
//     by d starts delayed tasks up to d early; bound skew below the
//     delays you need. The same holds for schedule periods.
//   - Pauses (GC, SIGSTOP): a worker paused past its window finds its
//     lease lost on waking (kvlease checks the window synchronously),
//     for all its claims at once; any that were taken over have their
//     outcome writes fenced. Side effects
//     outside the ledger must carry the fence (Task.Fence, FenceFrom).
//   - The ledger's stream leader moves (a step-down, the leading node
//     restarting): a claim or outcome in flight across the move may go
//     unanswered until OpTimeout, holding its own slot that long; the
//     claimed tasks after it wait for it 500 ms at most. A worker is so
//     idle with a task ready for at most OpTimeout + 1 s (the claims'
//     longest pause) + 500 ms (pickupBound; 8.5 s at the defaults), when
//     every one of its Concurrency+ClaimAhead slots holds such a claim.
//     Measured on a 3-node cluster with OpTimeout 2 s, a task admitted
//     every 20 ms, three step-downs and three restarts of the leading
//     node per run (TestPickupAfterLedgerLeaderMoves): the longest idle
//     with a task ready was under 0.5 s in all but two of some 50 runs,
//     1.6 s and 3.0 s in those (a claim whose write, or whose read of the
//     record after a refused swap, went unanswered across the move until
//     OpTimeout).
//   - Watch failure: a record or lease watch that ends for good (its
//     bucket or stream deleted: nats.go gives up on the watch's consumer
//     about 20 s later) closes the worker: it stops claiming (it would no
//     longer see changes), running handlers finish within DrainTimeout,
//     Done closes, and Run and Close return the error naming the watch
//     (TestWatchEndStopsRun).
//   - Mixing: kvledger's Claim, Takeover, ClaimIfReady and ClaimNext do
//     not take a worker's claim while its lease lives on the server
//     (kvledger.LeaseEnded; the Ledger needs kvledger.WithLeases on the
//     workers' lease bucket, and without it never takes such a claim).
//     The other way round, a Ledger with WithLeases on a lease manager of
//     the workers' lease bucket makes claims that hold a lease there
//     (kvledger.NewClaimLeaseKey), which workers judge like their own:
//     they take such a claim over only once the server expired it
//     (TestLedgerClaimHoldsOffWorkers; natscoord ledger claim does this).
//     A claim with no lease (a Ledger without one) is judged by its
//     per-record lease key (LeaseKey), which its claimant must hold for
//     as long as the claim lives.
package worker
