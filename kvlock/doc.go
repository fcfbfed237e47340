// Package kvlock provides distributed locks with fencing tokens, a managed
// Hold renewed by kvlease's scheduler, optional fair (first-come, first-served)
// waiting, and leader election, all kept in a JetStream KV bucket.
//
// # Use
//
//	l, _ := kvlock.New(ctx, js, kvlock.Config{TTL: 10 * time.Second})
//	defer l.Close(ctx)
//	hctx, release, err := l.Hold(ctx, kvlock.Key("conv", id)) // waits; renewed until release
//	defer release()
//	token, _ := kvlock.TokenFromContext(hctx) // the fencing token; hctx ends if the lock is lost
//
// Guarantees, failure modes and the design follow.
//
// It is a thin layer over kvlease, which does every lease operation:
// create-if-absent with a server-side per-key TTL, renewal by
// compare-and-set with a fresh TTL, owner-conditional release, push-woken
// waiting and the holder's validity window. kvlock adds the lock-shaped
// API, key conventions, Hold, fairness, elections, retries of
// transient errors, logging and observer hooks.
//
// A Locker costs the server one consumer on its bucket for its locks and
// elections: its manager's watch wakes barging waiters, and the same
// watch keeps the Locker's view of its keys (kvlease.Manager.View), which
// fair waiters look at and are woken by. The watch starts at the first
// wait and becomes a view (restarting once, with the keys' current
// values) at the first fair wait or Observe; an idle Locker watches
// nothing. Election.Observe reads the same watch through an ordered feed
// of the view (kvlease.Feed): every state in order, without a consumer
// of its own; an observer whose reader falls far behind is caught up
// with the current state rather than waited for.
//
// # Keys
//
// A lock key is dot-separated tokens of [A-Za-z0-9_/=-] (ValidateKey);
// Key(parts...) builds one from arbitrary strings by escaping each part
// into one token, e.g. Key("conv", id) for a per-conversation lock. In the
// bucket, with Config.Name n (default "lock"):
//
//	n.l.<key>            the lock (a kvlease lease)
//	n.q.<key>.<ticket>   fair-mode queue entries (leases too)
//	n.q.<key>.t          fair-mode ticket sequencer (one-second TTL)
//	n.e.<name>           an election's lock; n.ev.<name> its value record
//	n.eq.<name>.<t>, n.eq.<name>.t   an election's queue and tickets
//
// # Lock states
//
//	Acquire / TryAcquire / Hold
//	          |
//	          v
//	      +--------+  Release, Close,       +----------+
//	      |  held  |--Hold's ctx cancelled->| released |  ctx cause ErrReleased
//	      +--------+                        +----------+
//	          |  renewal finds the key taken (force release, expiry),
//	          |  or the validity window ends without a confirmed renewal
//	          v
//	      +------+
//	      | lost |  ctx cause ErrLost (also matches kvlease.ErrLost)
//	      +------+
//
// # Guarantees
//
//   - Mutual exclusion at the server: every change of a lock key is a
//     compare-and-set on its revision, so at most one holder's value is
//     stored at any revision.
//   - Fencing: Lock.Token (and TokenFromContext) is the KV revision at
//     which the lock was acquired. Every later holder has a strictly
//     greater token; a resource that refuses tokens below the highest it
//     has accepted cannot be written by a stale holder, however long it
//     was paused. Tokens are comparable within one bucket only.
//   - Release is owner-conditional: a delete conditional on the lock's
//     current revision. A late or repeated release never deletes a newer
//     holder's lock; it returns ErrLost instead.
//   - A crashed holder's lock is freed by the server after TTL (rounded up
//     to whole seconds). No process judges another's lock by its clock.
//   - Transient server errors are never reported as contention or loss.
//
// # Hold and its validity window
//
// Hold acquires and hands the lock to kvlease's renewal scheduler, which
// renews it every RenewInterval (at most TTL/3), and returns a context
// carrying the token. There is no goroutine or timer per held lock: the
// manager renews all its leases from one timer heap and a fixed set of
// workers (10,000 held locks: 16 goroutines, BENCHMARKS.md), and the
// Observer sees each renewal through kvlease's renewal hook.
//
// Lifetimes are set once per layer: kvlock acquires every lease detached
// from the caller's context (kvlease.Manager.AcquireKeyDetached), so a Lock
// lives until Release, loss or Close; Hold's context is a child of the
// caller's, and one registration on it releases the lock when it ends. The
// holder's view of its lock ends at
//
//	validUntil = (send time of the last confirmed renewal) + TTL - margin
//
// with margin = max(50ms, TTL/10) (kvlease.Margin). The server starts the
// TTL when it stores the write, after it was sent, so validUntil comes at
// least one margin before the server can expire the lock and anyone else
// can acquire it. The context is cancelled with ErrLost at validUntil if
// no renewal was confirmed (kvlease's scheduler fires then), or as soon as
// a renewal finds the key changed: after a kvlease ForceRelease the holder
// learns within one RenewInterval.
// A renewal that fails transiently is retried every max(50ms, TTL/15)
// (at most 2s) until the window ends.
//
// # Barging (default) and fair waiting
//
// By default waiters barge: each waits on kvlease's shared watch of the
// bucket, a release (or expiry) wakes all of them and the first publish
// wins. Fair mode (Config.Fair) serves waiters in arrival order, like
// etcd's revision-ordered waiters, and costs little when nobody waits:
//
//   - Nobody queued: Acquire and TryAcquire read one key, the lock's ticket
//     key, wait until the Locker's view of its keys has applied that
//     revision, and, finding no entry, try the lock as barging does. One
//     read more than barging, no queue entry. (On a single-replica bucket
//     the read is a direct get, which that server answers inline; on a
//     replicated one the stream leader answers.)
//   - Someone queued, or the lock held: the caller draws a ticket (the
//     revision of an unconditional publish to the ticket key,
//     kvlease.Manager.Ticket), creates a queue entry named by it (a TTL'd
//     lease renewed by the scheduler, so a crashed waiter leaves by
//     expiry), and waits until it is first in line. Its first look waits
//     for the view to apply its own entry's revision: every entry created
//     before it is then in the view, with no read at all.
//   - A waiter watches its predecessor's entry and the lock; only the
//     events that concern it wake it: its predecessor leaving or taking
//     the lock, the lock handed to it, or the lock freed while it is first
//     in line. The holder's entry, and every entry before it, counts as
//     served (the holder was first in line when it took the lock).
//   - A release hands the lock straight to the longest waiter in the
//     releaser's view (kvlease.Guard.HandOver): one compare-and-set on the
//     lock's revision writes that waiter's entry value, which names its
//     owner, into the lock with the entry's TTL. The waiter sees the lock
//     carry its own value on the watch and adopts it (kvlease.Manager.Adopt)
//     without a write: a handover is one round trip of the releaser and one
//     watch event, and the fencing token is the revision of that write.
//     With nobody queued in the releaser's view it is a plain release,
//     and the first in line takes the lock with one publish.
//   - The adopted lock's validity window starts from the send time of the
//     waiter's entry's first write (the releaser saw the entry, so it was
//     stored before the handover, and the server's TTL starts later); when
//     less than half of it is left (a wait of more than about half the
//     TTL), Adopt renews once before Acquire returns.
//   - The new holder deletes its entry while it holds the lock, and its
//     release waits for that delete, so no served entry is ever taken for
//     a waiter. A waiter whose own entry vanished stops with
//     ErrQueueEntryLost, unless the lock was handed to it.
//   - The handover is not conditional on the waiter's entry (an atomic
//     batch would be, but the server stages and syncs each batch on a
//     single-replica file store, far dearer than a publish). So a
//     waiter that gives up just as it is handed the lock still receives
//     it: its Locker watches the lock for one TTL after it left and
//     passes on a lock that arrives. A waiter that dies with its entry
//     live may be handed the lock, which its TTL then frees, as a crashed
//     holder's lock is freed.
//
// The ticket is in the entry's name because KV revisions change on every
// renewal, so, unlike etcd's create revision, they cannot order live
// entries. Two arrivals whose tickets and entries interleave (each drew its
// ticket before the other created its entry) may both take themselves for
// first in line; kvlease's compare-and-set on the lock decides between
// them, so mutual exclusion never depends on the queue.
//
// Barging is the default because it is faster under contention: fair mode
// costs a ticket, an entry create and an entry delete per contended
// acquisition, and the holder's release waits for its entry's delete.
// BENCHMARKS.md ("Fair mode and semaphore waiting, 2026-12-01", and
// "Fair mode: handover in the release") has the measured ratios.
// Use it when starvation matters more than throughput. All Lockers of one
// Name and bucket must use the same mode: a barging acquirer ignores the
// queue.
//
// # Elections
//
// An Election is a lock plus a value record. Campaign blocks until the
// candidate holds the election's lock, hands it to the renewal scheduler and writes the
// record {value, term, holder, owner} with a guarded write that the server
// accepts only while the lock is at the leader's current revision; Proclaim
// rewrites it the same way, so a deposed leader cannot overwrite its
// successor's value. The term is the lock's fencing token. Readers trust a
// record only while the live lock names the same owner, so a stale record
// is never reported. Leader returns ErrNoLeader while vacant (and during
// the instant a winner has not written its value). Observe follows the
// lock and the record in the Locker's view of its keys (no watch of its
// own) and reports every leader, value change and vacancy
// (resignation, expiry of a crashed leader, force release) - etcd's
// Observe does not report vacancies. A leader that loses its lease stops
// leading at once: Done closes and Context is cancelled with ErrLost,
// before the server can elect anyone else. When a leader's process stops
// without resigning, its lock expires after TTL and the next candidate is
// elected about one TTL later. Resign deletes the value record
// before the lock (conditionally on the record's revision, so a
// successor's is never touched): an election that ends by resignation
// leaves no record in the bucket; when leadership ends otherwise (loss,
// the Locker's Close) the record is removed the same way as soon as the
// lease has ended. Only a leader whose process dies leaves its record,
// until the next leader overwrites it; readers ignore it meanwhile.
//
// # Interfaces and the in-process backend
//
// Service, Held and Candidate are what a service depends on: acquire,
// try, hold, release and token; campaign, proclaim, resign and observe.
// Locker.Service adapts the NATS Locker (*Lock and *Election already are
// Held and Candidate). NewMemory is an in-process Service for unit tests
// and single-replica development, with the same semantics: tokens rise,
// an unrenewed lock ends with ErrLost at the end of its validity window
// (TTL - margin) and its key is free from then on, Hold renews every
// RenewInterval, ForceRelease ends the holder with ErrLost, and Config is
// validated by the same rules. Its time is a Clock: RealClock, or a
// ManualClock that a test moves with Advance (timers run on the caller's
// goroutine, in due order). It coordinates nothing across processes. A
// release hands the lock to the longest waiter, so it is first-come,
// first-served in both modes. Package kvlock/locktest is the conformance
// suite both backends pass; it imports only the testing package.
//
// # Choosing a backend by configuration
//
// Open takes a Backend (Kind nats or memory, plus the Locker's Config);
// OpenURL takes "nats://host:4222" (tls://, ws://, wss://, several URLs
// comma-separated) or "memory:". An empty or unknown Kind, or a URL of
// another scheme, fails with ErrUnknownBackend instead of defaulting to
// anything. "embedded:" needs a server started in-process, which a
// library never does: kvlock.Open refuses it, and package kvlock/embedlock
// (which imports package embedded) serves it, for main packages that
// choose to. kvlock's own import graph has no nats-server (a test checks).
// A Service made from a URL owns its connection (or embedded server) and
// closes it after the Locker (OnClose).
//
// # Circuit breaker
//
// Every server operation that goes through the retry policy also passes a
// circuit breaker (BreakerPolicy; default on: 5 consecutive transient
// failures open it for 2s). While it is open, acquisitions, fair-queue
// tickets and election writes fail at once with ErrCircuitOpen, wrapping
// the failure that opened it; after the cool-down one operation goes
// through as a probe (half-open) and its outcome closes or reopens the
// breaker. Renewals of locks already held are never refused, because a
// refused renewal would lose a lock the server still keeps; their
// outcomes count. Contention and loss are answers from the server and
// count as success; an operation its caller cancelled does not count.
// State changes are logged at Warn and reach a Config.Observer that
// implements BreakerObserver. The in-process backend has no breaker.
//
// # TTLs: defaults and the one-second floor
//
// Config.TTL defaults to 10s and RenewInterval to TTL/3 when they are
// zero; negative values are refused with ErrInvalidConfig. The smallest
// TTL is one second (kvlease.MinTTL), not the 10ms that Redis-based lock
// libraries accept: the NATS server keeps per-key TTLs in whole seconds,
// at least one, so a crashed holder's lock cannot be freed sooner than a
// second after its last renewal. A shorter TTL is an error, never rounded
// up silently. Code that relied on locks of a few milliseconds to
// serialize very short work should hold a lock across the whole batch.
// The in-process Locker (NewMemory) applies the same rules, so tests see
// production's; on its ManualClock a test passes a one-second TTL at once.
//
// # Retries, timeouts and observability
//
// Every server operation without an earlier deadline is bounded by
// OpTimeout. Transient errors (no responders, no stream leader, not
// connected, and for acquisitions a timeout) are retried up to
// Retry.Attempts with doubling backoff. A write whose outcome is unknown is
// never retried blindly: kvlease resolves it by reading the key back from
// the stream leader and comparing the stored owner; a renewal is retried
// only for errors that prove it was never processed (retrying a renewal
// that landed would look like a takeover). Config.Logger receives slog
// lines; Config.Observer receives one call per acquisition, renewal,
// release and loss with its duration and error (Observers fans out to
// several; RecorderObserver keeps counts and latency histograms in an
// opstats.Recorder, shared with kvlease and kvledger and written in the
// Prometheus text format; SlogObserver logs them;
// the OpenTelemetry adapter is the separate module kvlock/otelobserver,
// so kvlock itself does not import OTel).
//
// # Partitions, clock skew and pauses
//
// A holder cut off from the server cannot renew; its context is cancelled
// at validUntil, one margin before the server can expire the lock. A
// waiter cut off simply does not acquire; a fair waiter cut off loses its
// queue entry and stops with ErrQueueEntryLost. On an R3 bucket a minority
// side can neither acquire nor renew. Clock offsets between machines do
// not matter (each side measures its own intervals); clock rate
// differences and timer lateness up to the margin (a tenth of the TTL) are
// covered. A pause longer than the margin (GC, SIGSTOP, VM migration) can
// let a process resume believing for an instant that it still holds the
// lock: check Lock.Err right before protected work (it checks the window
// synchronously) and fence the resource with the token. Cancellation alone
// cannot stop a write that was already on its way.
//
// # Time bounds
//
// RetryPolicy is the one retry budget that spans operations: every retry
// loop of the stack runs on the one retry primitive (internal/retry), and
// the others (kvx's resends, kvlease's owned writes and release settling)
// live inside one operation's deadline, with kvlease only reading back
// an outcome-unknown write. So TryAcquire, Release and Renew take at most
// Config.CallCeiling: Attempts × 2 × OpTimeout plus the backoffs between
// attempts (3 × 2 × 5 s + 150 ms with the defaults), whatever the caller's
// deadline (three times that for a fair TryAcquire, whose queue read, view
// sync and lease are each retried); Acquire and Hold wait on top of it for
// as long as their ctx allows. TestStalledConnectionBoundedByCallCeiling checks it through a
// stalled proxy.
package kvlock
