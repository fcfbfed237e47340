// Package kvledger admits tasks once per idempotency key, hands them to
// workers under fenced leases, and blocks the dependents of failed tasks.
// Records live in a Store: MemStore in memory, or KVStore in a JetStream
// KV bucket shared by any number of processes. Every transition is
// published as an event (package events) on subjects "ledger.*".
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
//     owner that does not hold the claim holds no valid fence); on a
//     record that is not claimed they return ErrNotClaimed whatever the
//     token, as the reference ledger does. A lease is at most MaxLease
//     (24h). Fences
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
//     (NewClaimLeaseKey) with the claim's lease as TTL, abandoned at once
//     so it lives exactly that long on the server, also after the process
//     exits; Renew names a new one. Workers then leave such a claim alone
//     until the server expires it (natscoord ledger claim does this). A
//     claim that names no lease (a Ledger without a lease taker) is
//     judged by LeaseUntil against the caller's now, which its owner
//     moves with Renew: the ledger judges it by no clock of its own (the
//     one time it reads the clock is a Submission's default Now), and
//     callers must pass comparable clocks (see clock skew below); the runtime judges such
//     a claim by the per-record lease key (package worker's LeaseKey),
//     which its claimant must hold beside running workers.
//   - Failure propagation costs the affected subgraph: a reverse
//     dependency index (DependencyIndex) lists a key's dependents and
//     Claim/Takeover read only the needs closure.
//   - Events: each write publishes one event named after its transition.
//     With the JetStream bus, events are delivered once per write within
//     the stream's duplicate window and in per-key write order, also when
//     a writer dies between its write and its publish (see write in
//     write.go and StartRelay).
//
// # Failure modes
//
//   - Partition or crash after a write: the write stands (it is the commit
//     point); its event is published by the next write of that key or by a
//     relay. An operation that failed with an outcome-unknown error may or
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
//     operations (Claim, Takeover, Renew, Release, Complete, Finish,
//     Reopen, Cancel, Delete) with a KVStore confirm a missing record by a
//     write to the bucket's "sync" key, which only a leader with a quorum
//     acknowledges, and read again: there they fail with an unknown-outcome
//     error instead of returning a false ErrNoKey (absence.go). State,
//     Results and listings are reads and do not write.
//
// # Task runtime
//
// Records may carry what a task runtime needs (all optional, omitted
// from the stored JSON when zero): Kind, RunAt, Attempts, MaxAttempts,
// LastError, Cancelled, a bounded JSON Result, and Group and Priority,
// which the runtime's group limits and ready order read (records written
// before them decode with both zero). Submit and AdmitMany
// admit with them; a task is ready (Ready) when it is pending, its RunAt
// has passed and every need is completed. Claim keeps its contract (it
// does not look at needs' status beyond failures, nor at RunAt);
// ClaimIfReady and ClaimNext claim only ready tasks, ClaimNext by
// reading the whole ledger. Package worker is the runtime: it keeps a
// ready set from the store's record watch (RecordWatcher: one watch per
// KVStore, shared by the runtime, WaitFinal and any other watcher of the
// store in the process) and claims with
// ClaimLeased, a claim proven by a kvlease lease that the server
// expires, so no clock decides that a worker is dead. Finish records an
// attempt's outcome (completed with a result, failed, or pending again
// for a retry). WaitFinal waits by push for tasks to end.
//
// Operator actions are compare-and-sets with their own events: Reopen
// (a failed record back to pending with a new fence, and the records it
// blocked unblocked transitively, one UnblockedEvent each), Cancel (a
// pending or claimed record failed with Cancelled set; dependents are
// blocked) and Delete (a final record removed; fences keep rising).
// Events of these transitions carry the runtime fields too (Kind,
// Attempts, LastError, RunAt). A Delete's event cannot be re-published
// by a relay (no record remains to rebuild it from).
//
// # Events and availability
//
// With a bus, per-key event order beats availability: a write whose
// record's previous event is not known to be published first publishes
// that event, and when the events stream is unavailable (its leader gone,
// no quorum) the write is refused with ErrEventsUnavailable and nothing
// is written. So while the stream is down, the first write of a key
// succeeds (its own event fails and is reported to
// WithPublishErrorHandler; the write is the commit point), and the next
// write of that key fails until the stream is back. Once it is, the
// refused write can be retried and the key's events come out complete
// and in write order. The other choice (write on, publish later) would
// let consumers see a key's events out of order or with gaps for as long
// as no relay caught up, which breaks every consumer that follows a
// key's life from its events. Keep the events stream at least as
// available as the ledger's bucket (same cluster, same replicas).
//
// # Time bounds
//
// With T = KVStore.OpTimeout (the JetStream handle's default
// timeout, 5 s without one), every store operation and every event
// publish takes at most T, whatever the caller's deadline. A call is a
// bounded sequence of them: Claim and Takeover make a load, one read per
// key of the needs closure, a flush publish, the write, a read-back of an
// outcome-unknown write and its publish, so at most (5 + closure) × T;
// an owner-only operation that finds no record adds the confirming write
// and a second read (2T) before it returns ErrNoKey;
// Renew, Release and Complete at most 5T (Complete(failed) then walks the
// dependents, one load and one write each); Admit one index write per
// need, the needs reads (concurrent: T), the insert, a read-back, the
// publish and the recheck; AdmitMany, per atomic batch of up to 1000 new
// tasks, the batch insert and the batch's events (sent together, waited
// for within one T); a batch refused because keys already had records
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
// lease create; both are bounded by the lease manager's own operation
// timeout, not T. A lost
// compare-and-swap repeats the loop, which is contention, not a stall. On a stalled connection a call fails at its
// first operation, within 2T (TestStalledConnectionBoundedByOperationTimeout).
// Range and Snapshot stream the whole bucket and are bounded by the
// caller's ctx only.
package kvledger
