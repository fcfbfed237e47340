// Package kvledger admits tasks once per idempotency key, hands them to
// workers under fenced leases, and blocks the dependents of failed tasks.
// Records live in a Store: MemStore in memory, or KVStore in a JetStream
// KV bucket shared by any number of processes. Every transition is one
// stored write, and that write is its event (see "Events").
//
// Most programs run tasks through package tasks, which is built on this
// one; use kvledger directly for the records and their fences.
//
// # Use
//
//	store, _ := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: "tasks"})
//	l, _ := kvledger.New(store)
//	l.Admit(ctx, "ci", "build", 1, job, time.Now())           // false on a duplicate
//	l.Admit(ctx, "ci", "deploy", 1, nil, time.Now(), "build") // needs build
//	fence, _ := l.Claim(ctx, "w1", "build", "w1", 30*time.Second, time.Now())
//	_ = l.Complete(ctx, "w1", "build", "w1", fence, kvledger.StatusCompleted, time.Now())
//	final, _ := l.WaitFinal(ctx, "deploy") // by push, no polling
//
// A stale claimant's Renew or Complete fails with ErrFenced; a failed
// task blocks everything that needs it. The sections below give the
// life cycle, then the guarantees and failure modes.
//
// # Life cycle
//
//	           Admit                 Claim / Takeover (stale lease)
//	 (none) ─────────► pending ───────────────────────► claimed ──┐
//	   │                 ▲  ▲                              │  │   │ Renew
//	   │                 │  └──────── Release ─────────────┘  │ ◄─┘
//	   │                 │  Admit(higher seq): rebase          │
//	   │                 └─────────────────────────────────────┤
//	   │                                                       │ Complete
//	   │ Admit, a need failed/blocked          ┌───────────────┴───────┐
//	   ▼                                       ▼                       ▼
//	blocked ◄──── a need failed (walk), ── completed                failed
//	   ▲          or Claim/Takeover found                              │
//	   └───────── a failed/blocked need ◄──────────────────────────────┘
//	              (pending and claimed records only)    its dependents
//
// completed, failed and blocked are final: nothing changes them again
// (Admit with a higher sequence returns false).
//
// # Guarantees
//
//   - Idempotency: a key is admitted once; a duplicate or older submission
//     returns false, nil. With MemStoreOptions.MaxEntries or
//     KVStoreConfig.Retention the guarantee becomes a window on purpose.
//   - Keys: an IdempotencyKey is any non-empty valid UTF-8 string
//     without control characters (U+0000-U+001F, U+007F-U+009F), which
//     admission and Restore refuse with ErrInvalidState: the task runtime
//     hands a key to a command in an environment variable, which cannot
//     hold NUL, and tables and logs show it on one line. A key,
//     a need or an owner that is not valid UTF-8 is refused with
//     ErrInvalidState before anything is written: records, snapshots and
//     events carry them as JSON strings, which replace invalid bytes with
//     U+FFFD, so the key would be stored as another one. A stored value
//     that is not a valid record (one written that way by an earlier
//     version, or by hand) is one bad record, not a failed listing: Range
//     and Snapshot return every other record and name it, with its key, in
//     a *CorruptRecordsError; KVStore.ForceDelete removes it.
//   - Fencing: Claim and Takeover return a token larger than any earlier
//     token of that key, also after the record was deleted and admitted
//     again; Renew, Release and Complete refuse an older token, and the
//     right token presented under another owner's name (ErrFenced: an
//     owner that does not hold the claim holds no valid fence). The order
//     is the seed ledger's: Release and Complete check ErrNoKey, then
//     ErrFenced (the token is not the record's, whatever its status: the
//     losers of a race to Complete are fenced), then ErrNotClaimed (the
//     record's own token on a record that is not claimed); Renew checks
//     ErrNoKey, ErrNotClaimed, ErrFenced. The runtime's outcome is
//     checked as Complete. A lease is at most MaxLease (24h). Fences
//     never wrap: a record at MaxFence cannot be claimed again
//     (ErrFenceExhausted), and a record above it is refused wherever it
//     enters (Load, Decode, Restore).
//   - Payloads: a KVStore stores Task as JSON and reads its numbers back
//     as json.Number, so every digit survives a read and the rewrite of
//     the record that follows (a claim, a completion).
//   - Every write is a compare-and-swap on the record's revision; a lost
//     race reloads and re-decides, so concurrent Ledgers never overwrite
//     each other.
//   - One judgement of a claim, whichever API made it: a claim that
//     names a lease (TaskState.Lease: the runtime's ClaimLeased) has
//     ended only when that lease is gone on the lease bucket's stream
//     leader (LeaseEnded, a leader read: the server expires a dead
//     claimant's lease by its TTL). Claim, Takeover, ClaimIfReady and
//     ClaimNext read it through WithLeases, and without WithLeases never
//     take such a claim; the runtime's takeover reads it the same way. Its
//     LeaseUntil is the claim time plus the TTL, for operators only:
//     ClaimLease reads the lease's real expiry (kvlease.Holder.Expires).
//     A Ledger whose WithLeases reader can take leases (a
//     *kvlease.Manager) makes its own claims (Claim, Takeover,
//     ClaimIfReady, ClaimNext) hold one as well: a fresh lease key
//     (NewClaimLeaseKey) with the claim's lease as TTL, abandoned once the
//     claim is written so it lives exactly that long on the server, also
//     after the process exits; Renew renews it in place when this Ledger
//     took it (a Renew from another process names a new one), and a claim
//     that fails, Release, Complete and the runtime's outcomes (awaited
//     and pipelined) delete it. Workers then leave such a claim alone
//     until the server expires it (natscoord ledger claim does this). A
//     claim that names no lease (a Ledger without a lease taker) is
//     judged by LeaseUntil against the caller's now, which its owner
//     moves with Renew: the ledger judges it by no clock of its own (it
//     reads the system clock only for the defaults of a Submission's Now
//     and a Schedule's UpdatedAt), and
//     callers must pass comparable clocks (see clock skew below); the runtime judges such
//     a claim by the per-record lease key (package worker's LeaseKey),
//     which its claimant must hold beside running workers.
//   - A record that a task needs is kept while that task has not ended
//     (it is pending or claimed): a need without a record is never
//     completed, so its dependents would wait for good. Delete refuses
//     to remove it (ErrNeeded, naming them; cancel them, or wait for
//     them to end; Needed asks without removing), and under KVStoreConfig.Retention it does not expire:
//     its Retention runs from the end of the last task that needs it
//     (RetainedEvent). A record whose dependents have all ended can be
//     removed, and expires, as any other.
//   - Failure propagation costs the affected subgraph: a reverse
//     dependency index (DependencyIndex) lists a key's dependents and
//     Claim/Takeover read only the needs closure.
//   - Events: each stored write is exactly one event, named after its
//     transition; the client publishes nothing (see "Events").
//
// # Failure modes
//
//   - Partition or crash after a write: the write stands (it is the commit
//     point) and so does its event, which is the write. An operation that failed with an outcome-unknown error may or
//     may not have written: read the key with State.
//   - Clock skew (claims made by Claim only; a runtime claim is judged
//     by its lease on the server): staleness is LeaseUntil <= now with
//     the now the caller passes. A worker whose clock runs behind sees its lease as live for
//     longer; a claimant whose clock runs ahead takes over early. Bound
//     skew below the lease, renew well before LeaseUntil, and rely on the
//     fence: a worker that lost its claim cannot write.
//   - Pauses (GC, SIGSTOP): a paused worker may wake after a takeover; its
//     next Renew/Complete returns ErrFenced. Side effects outside the
//     ledger must carry the fence token to be safe.
//   - Store faults are returned as they are; they are never reported as
//     contention (false) or as a missing key.
//   - A stream leader cut off from its quorum answers reads from its last
//     state for a few seconds, so a client on its side of a partition can
//     read "no such record" for a task admitted on the majority. Owner-only
//     operations (Claim, Takeover, Renew, Release, Complete, the
//     runtime's outcome, Reopen, Cancel, Delete) with a KVStore confirm a missing record by a
//     write to the bucket's "sync" key, which only a leader with a quorum
//     acknowledges, and read again: there they fail with an unknown-outcome
//     error instead of returning a false ErrNoKey (absence.go). State,
//     Results and listings are reads and do not write.
//
// # Task runtime
//
// Records may carry what a task runtime needs (all optional, omitted
// from the stored JSON when zero): Kind, RunAt, Attempts, MaxAttempts,
// LastError, Cancelled, CancelRequested (a running task asked to stop),
// a bounded JSON Result, and Group and Priority, which the runtime's
// group limits and ready order read (records written
// before them decode with both zero). Submit and AdmitMany
// admit with them; a task is ready when it is pending, no live lease
// holds it, its RunAt has passed and every need is completed. That rule is
// stated once, in Judge (readiness.go), which every reader calls with what
// it knows (ClaimIfReady and ClaimNext from the store, the runtime's index
// from its watches, the dashboard from its view); the attempt limit and
// the runtime's retry-or-fail decision likewise, in attempt_limit.go
// (AttemptLimit is the exported part). Claim keeps its contract (it
// does not look at needs' status beyond failures, nor at RunAt);
// ClaimIfReady and ClaimNext claim only ready tasks, ClaimNext by
// reading the whole ledger. Package worker is the runtime: it keeps a
// ready set from the store's record watch (RecordWatcher: one watch per
// KVStore, shared by the runtime, WaitFinal and any other watcher of the
// store in the process) and claims as ClaimLeased does, a claim proven
// by a kvlease lease that the server expires, so no clock decides that a
// worker is dead; its outcome of an attempt is completed with a result,
// failed, or pending again for a retry.
//
// The calls only the runtime makes (its claim from the record its watch
// saw, its outcome, awaited or pipelined, and the retry-or-fail decision)
// are not exported: runtime_hooks.go hands them to package worker
// through kvledger/internal/ledgerrt, which only kvledger and the
// packages below it can import. They can then change with the runtime
// without binding the ledger's users, and no user writes an outcome
// outside the runtime's bookkeeping. A user that claims without the
// runtime (Claim, ClaimIfReady, ClaimNext, or ClaimLeased beside workers
// under the per-record lease worker.LeaseKey) ends the claim with
// Complete or Release. WaitFinal waits by push for tasks to end. Attempts reads
// a task's attempts, each with the error it ended with, from the writes
// the bucket keeps of its record (the last 64; see "Events").
//
// Operator actions are compare-and-sets with their own events: Reopen
// (a failed record back to pending with a new fence, and the records it
// blocked unblocked transitively, one UnblockedEvent each), Cancel (a
// pending record failed with Cancelled set at once, its dependents
// blocked; a claimed one asked to stop, below), RunNow (a scheduled or
// retrying record made ready at once, RunAt cleared, attempts kept:
// RunNowEvent) and Delete (a final record removed; fences keep rising;
// refused with ErrNeeded while a pending or claimed task needs it).
// AtRevision binds each to the record as its caller read it: a record
// written since is refused with ErrMoved (a confirmation page acts only
// on what it showed). A handler's snooze is the runtime's outcome, named
// SnoozedEvent (pending again, uncounted, Snoozes one higher).
//
// Cancel never ends a claim under its handler: that would let a Reopen
// run the task again beside it. Cancel of a claimed record is one
// compare-and-set that sets CancelRequested (LastError the reason,
// CancelRequestedEvent, phase cancelling) and keeps Owner, Fence and
// the claim's lease. The claim then ends the one way every claim ends,
// by its owner, after the handler returned: whatever the owner writes
// (the runtime's outcome, Complete, Release), the record ends failed
// with Cancelled set (CancelledEvent) and its dependents are blocked
// (endClaim). A claimant that dies first leaves its lease to expire; the
// claim that then finds it ended (Claim, Takeover, ClaimIfReady,
// ClaimNext, the runtime's) ends it cancelled with a new fence instead
// of claiming it, runs nothing, counts no attempt and returns
// ErrNotClaimed. Reopen and Delete refuse a cancelling record (ErrNotFailed,
// ErrNotFinal, naming the phase). Cancel returns once the request is
// stored; WaitFinal (`ledger cancel --wait`) waits for the end. We chose
// a flag on the claimed record over a new status so that everything
// that judges a claim (Judge, the leases, the fences) stays as it is.
// Events of these transitions carry the runtime fields too (Kind,
// Attempts, MaxAttempts, LastError, RunAt, Cancelled), so a key's events
// tell its attempts as its records do (AttemptsOf). A Delete's event is its delete marker: it
// names the transition and the previous revision, not a status.
//
// A KVStore also keeps what every worker of the ledger obeys beside the
// records, outside the Store interface (a MemStore has neither): stored
// schedules (Schedule, "sched.<name>") and paused kinds (Pause,
// "ctl.pause.<kind>": PauseKind creates one if absent, ResumeKind
// deletes it at its revision; a kind nobody paused has no key and costs
// no write). Neither is a task write nor an event. The store's one
// record watch covers their keys, and WatchRecordsAndControls hands
// them to the runtime and the dashboard in the records' order, so a
// task admitted after a pause reaches each worker after the pause.
//
// # Events
//
// The ledger bucket's own stream is the event log. Chosen over a client
// publish per write (and a relay for dead writers, and de-duplication by
// message id) because a write that is its own event cannot be lost when
// its writer dies, cannot be delivered twice, needs no de-duplication
// window, keeps per-key order by construction, and costs no round trip:
// BENCHMARKS.md measures the three stored writes per task with and
// without client events. Chosen over a second stream that sources the
// bucket because sourcing is asynchronous and skips revisions the bucket
// dropped before it read them, and costs one more stored write per
// transition (nats-server facts: TestServerFactsForEventsFromTheBucket).
//
//   - Layout: NewKVStore creates the bucket with History EventHistory
//     (64, the most the KV API allows) so each key keeps its writes, and a
//     RePublish of $KV.<bucket>.task.> to ledger.<bucket>.> (LiveSubject).
//   - What carries what: the key is a subject token
//     ($KV.<bucket>.task.<key>, live ledger.<bucket>.<key>), so following
//     one key is a consumer's filter subject; the transition is the header
//     Ledger-Event (EventHeader: one of EventNames) and the record's
//     status after it the header Ledger-Status (StatusHeader), so
//     following one kind of transition or one outcome (ledger.cancelled;
//     ledger.completed with status failed: events.Filter Names and
//     Statuses) reads headers and decodes no body; the body is the stored
//     record (JSON naming status and last_event), so `nats sub 'ledger.>'`
//     is legible as it is.
//     Its format is defined once, by TaskState's json tags: snapshots
//     (Encode) and json.Marshal of a TaskState write the same fields, and
//     the stored record's encoder and decoder are generated from the tags
//     (kv_record_codec.go).
//     The server adds Nats-Sequence (the revision), Nats-Subject and
//     Nats-Time-Stamp to the live copies; every write keeps the
//     Nats-Expected-Last-Subject-Sequence it was made with, the key's
//     previous revision, also in atomic batches (AdmitMany).
//   - Names: the seed ledger's operations keep the seed's names
//     (AdmittedEvent, ClaimedEvent, RenewedEvent, ReleasedEvent,
//     TakenOverEvent, CompletedEvent, BlockedEvent), so a consumer written
//     against the seed sees what it expects: CompletedEvent fires once per
//     successful Complete whatever its outcome, the record's status
//     (completed or failed, in the event and in StatusHeader) telling
//     them apart. The runtime's own transitions and the operators' have
//     names of their own, also those a person tells apart: ScheduledEvent
//     (admitted with RunAt ahead), RetriedEvent (an outcome that
//     schedules a retry), CancelRequestedEvent (a running task asked to
//     stop: still claimed), CancelledEvent (status failed, never
//     CompletedEvent), ReopenedEvent, UnblockedEvent, DeletedEvent (the
//     delete marker), RestoredEvent (Restore's writes) and ExpiredEvent
//     (the server's marker at the end of a Retention) and RetainedEvent (a
//     final record written again unchanged to hold or restart its
//     Retention; see "Retention with history").
//   - The runtime's final outcome is the seed's Complete. A worker ends
//     its claim with the outcome of the attempt: a retry (RetriedEvent)
//     or a release (ReleasedEvent) gives the claim back, but a final
//     success or failure ends it exactly as its owner's Complete would,
//     through the same checks (ErrFenced first), the same record (final,
//     keeping Owner and Fence) and the same dependency walk; a consumer
//     that counts Completes must count it, or every task a worker fails
//     would be missing. So it is CompletedEvent, success or failure, and
//     so is a claim that finds the last allowed attempt lost with its
//     claimant (its failure ends that attempt on the claimant's behalf).
//     Only a cancelled task's end is a failure under a name of its own
//     (CancelledEvent), whoever writes it: Cancel of a pending task, or
//     the end of a claim Cancel asked to stop.
//   - Earlier names: a build before this one wrote a failed completion as
//     "ledger.failed". Such writes read as the transition is named now
//     (CompletedEvent, status failed) wherever a write is decoded (the
//     record's last_event, DecodeEvent, KeyEvents, Attempts, AttemptsOf),
//     and EventSource's Renamed lets the events package's name filter
//     match them before decoding; a filter that asks for "ledger.failed"
//     is refused rather than left to match nothing.
//   - Durable: events.SubscribeDurable on EventSource is a durable consumer
//     of the bucket's stream: each write once, in stream (so per-key)
//     order, resumed after the last acknowledgement also across a server
//     restart or a stream leader change (the consumer is part of the
//     stream's replicated state).
//   - Live: the RePublish is at most once (the leader publishes, nothing
//     retries, a slow subscriber drops); events.SubscribeLive reads it.
//     The durable path is the stream.
//   - Retention and gaps: a key keeps its last 64 writes. A consumer that
//     falls further behind on a key, or behind a purge, a roll-up or the
//     bucket's limits, is told: each write names the key's previous
//     revision, and a subscriber that delivered the key at revision r and
//     then sees a write naming another previous revision reports an
//     events.Gap (key, last delivered, last missed) before delivering it;
//     a durable consumer resuming behind the stream's first message gets
//     a Gap over the whole stream. A key none of whose writes is left when
//     the consumer reaches it (its record expired under Retention) is not
//     a gap: the record is gone as configured.
//   - Retention with history: under KVStoreConfig.Retention a final
//     write carries the per-key TTL; with the key's history kept, its
//     expiry alone would expose the key's previous write (a claimed record
//     would come back: the server removes only the expired message). So a
//     final write under a Retention also rolls its key up (Nats-Rollup:
//     sub): the key then holds that one write, and its expiry leaves the
//     key empty (TestRetentionFinalWriteDoesNotResurrect). Every delete
//     marker that expires (DeleteRecord, ForceDelete, the index cleanup)
//     rolls its key up for the same reason (TestRetentionDeleteDoesNotResurrect,
//     TestKVStoreRetentionRemovesIndex). A consumer that had not read the
//     key's earlier writes gets a Gap for them. A final record that a
//     pending or claimed task needs is written again without its TTL
//     (after its own final write, or after the insert of a dependent
//     that needs it), and once the last such task has ended it is
//     written again with the Retention (kv_retention.go): each of these
//     writes is the record unchanged, a RetainedEvent, and rolls the key
//     up. They are best effort after a write that stands: one that fails
//     leaves the record as it was until the next dependent's write looks
//     again (TestRetentionKeepsANeedWhileADependentRuns). Under a
//     Retention each final write, and each admission with needs, adds
//     the dependency index scan and the reads this takes.
//   - Migration: a bucket of the layout before (History 1, no RePublish)
//     is migrated in place by NewKVStore, one stream update (the server
//     takes both changes on a live stream). A caller that may not update
//     the stream gets ErrOldLayout, which names `natscoord ledger migrate
//     --bucket B` (TestMigrateOldLayout). The LEDGER stream of the layout
//     before (every bucket's events on ledger.<event>, captured as
//     ledger.>) would record a migrated bucket's live feed too; NewKVStore
//     leaves other streams alone, and `natscoord ledger migrate` narrows
//     it to ledger.* (old events only), and deletes it when asked
//     (--delete-old-stream --yes) once no ledger bucket is left
//     unmigrated (TestLedgerMigrateOldStream).
//   - MemStore keeps the same log in memory (mem_store_log.go): every
//     write with its name and previous revision, EventHistory per key
//     (KeyEvents), and Follow for a follower in write order; storetest
//     checks both stores against one definition.
//   - Short TTLs: with History > 1 the server raises every per-message TTL
//     to at least the bucket's LimitMarkerTTL, so keys with short TTLs
//     (leases) never share a ledger bucket: they live in kvlease buckets.
//
// # Spreading one ledger over several buckets
//
// One bucket is one stream with one leader, which bounds a ledger's write
// rate. The layout does not rule out spreading one ledger's keys over N
// buckets (say tasks_0..tasks_{N-1}, the bucket chosen by a hash of the
// key, each created with its stream leader on a different node by
// placement tags): every rule above is per key, and a key lives in one
// bucket, so per-key order, fencing (revisions are per stream, compared
// only within a key) and gap detection hold per bucket unchanged. A
// consumer follows N streams (N durable consumers, one per bucket, each
// with its own EventSource); order across keys of different buckets was
// never promised. What would need work: dependencies across buckets (the
// rdep index and the needs reads would name the bucket of each key), and
// listings that merge N buckets. Nothing in the record or subject format
// has to change.
//
// # Time bounds
//
// With T = KVStore.OpTimeout (the JetStream handle's default
// timeout, 5 s without one), every store operation takes at most T,
// whatever the caller's deadline. A call is a bounded sequence of them:
// Claim and Takeover make a load, one read per key of the needs closure,
// the write and a read-back of an outcome-unknown write, so at most
// (3 + closure) × T;
// an owner-only operation that finds no record adds the confirming write
// and a second read (2T) before it returns ErrNoKey;
// Renew, Release and Complete at most 3T (Complete(failed) then walks the
// dependents, one load and one write each); Delete (and Needed) reads the
// key's dependents first, one index scan and one load per dependent; Admit one index write per
// need, the needs reads (concurrent: T), the insert, a read-back and the
// recheck; AdmitMany, per atomic batch of up to 1000 new tasks, the batch
// insert; a batch refused because keys already had records
// adds one read per key of the batch (32 at a time) and one more batch
// insert per refusal; for each task it admits one by one (one with
// needs, a key that already had a record, or every task on a server
// without atomic batches) what Admit takes. Atomic batches need no
// enabling step: NewKVStore allows them on a bucket it creates, and the
// first AdmitMany on an older bucket allows them there (one stream
// update); a server before nats-server 2.12, or a caller that may not
// update the stream, gets the one-by-one path. Claim and Takeover of a
// claim that names a lease add one lease read, and with a lease taker
// (WithLeases) Claim, Takeover, ClaimIfReady, ClaimNext and Renew add one
// lease create, and every write that ends a claim whose lease this
// Ledger took (Release, Complete, Cancel, the runtime's outcomes) adds
// its lease's delete (one more write, a renewal, when the lease is past
// half its TTL: kvlease's Adopt); these are bounded by the lease
// manager's own operation timeout, not T. A lost compare-and-swap repeats
// the loop, which is contention, not a stall. On a stalled connection a
// call fails at its first operation, within 2T
// (TestStalledConnectionBoundedByOperationTimeout).
// Range and Snapshot stream the whole bucket and are bounded by the
// caller's ctx only.
package kvledger
