// Package kvlock provides distributed locks with fencing tokens, a managed
// Hold with a renewal watchdog, optional fair (first-come, first-served)
// waiting, and leader election, all kept in a JetStream KV bucket.
//
// It is a thin layer over kvlease, which does every lease operation:
// create-if-absent with a server-side per-key TTL, renewal by
// compare-and-set with a fresh TTL, owner-conditional release, push-woken
// waiting and the holder's validity window. kvlock adds the lock-shaped
// API, key conventions, the watchdog, fairness, elections, retries of
// transient errors, logging and observer hooks.
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
//	n.t.<key>            fair-mode ticket sequencer
//	n.e.<name>           an election's lock; n.ev.<name> its value record
//	n.eq.<name>.<t>, n.et.<name>   an election's queue and tickets
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
// Hold acquires, starts a watchdog that renews every RenewInterval (at
// most TTL/3), and returns a context carrying the token. The holder's view
// of its lock ends at
//
//	validUntil = (send time of the last confirmed renewal) + TTL - margin
//
// with margin = max(50ms, TTL/10) (kvlease.Margin). The server starts the
// TTL when it stores the write, after it was sent, so validUntil comes at
// least one margin before the server can expire the lock and anyone else
// can acquire it. The context is cancelled with ErrLost at validUntil if
// no renewal was confirmed (kvlease's scheduler fires then), or as soon as
// a renewal finds the key changed: after a kvlease ForceRelease the holder
// learns within one RenewInterval (measured: 200.5ms with a 200ms interval).
// A renewal that fails transiently is retried every max(50ms,
// RenewInterval/4) until the window ends.
//
// # Barging (default) and fair waiting
//
// By default waiters barge: each waits on kvlease's shared watch of the
// bucket, a release (or expiry) wakes all of them and the first publish
// wins. Fair mode (Config.Fair) serves waiters in arrival order, like
// etcd's revision-ordered waiters: each draws a ticket (the stream
// sequence of a publish to the key's ticket subject), creates a queue
// entry named by the ticket (a TTL'd lease renewed every RenewInterval, so
// a crashed waiter leaves by expiry), and watches only its predecessor's
// entry. The head takes the lock; a holder deletes the lock before its
// entry, so one release wakes exactly one waiter. A waiter whose own entry
// vanished stops with ErrQueueEntryLost. The ticket is in the entry's name
// because KV revisions change on every renewal, so, unlike etcd's create
// revision, they cannot order live entries.
//
// Barging is the default because it is faster: with 8 clients on one key
// (internal/bench, BENCHMARKS.md) barging ran at 0.82 of a raw
// watch-and-retry loop's rate and fair mode at 0.27. Fair mode costs a
// ticket publish, an entry create, a leader read for the first look at the
// queue (the queue itself is read from the Locker's shared watch, not
// listed) and an entry delete per acquisition, and serializes handovers
// through watch events. Use it
// when starvation matters more than throughput. All
// Lockers of one Name and bucket must use the same mode: a barging
// acquirer ignores the queue.
//
// # Elections
//
// An Election is a lock plus a value record. Campaign blocks until the
// candidate holds the election's lock, starts the watchdog and writes the
// record {value, term, holder, owner} with a guarded write that the server
// accepts only while the lock is at the leader's current revision; Proclaim
// rewrites it the same way, so a deposed leader cannot overwrite its
// successor's value. The term is the lock's fencing token. Readers trust a
// record only while the live lock names the same owner, so a stale record
// is never reported. Leader returns ErrNoLeader while vacant (and during
// the instant a winner has not written its value). Observe watches the
// lock and the record and reports every leader, value change and vacancy
// (resignation, expiry of a crashed leader, force release) - etcd's
// Observe does not report vacancies. A leader that loses its lease stops
// leading at once: Done closes and Context is cancelled with ErrLost,
// before the server can elect anyone else. When a leader's process stops
// without resigning, its lock expires after TTL and the next candidate is
// elected (measured: 0.996s with TTL 1s).
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
// release and loss with its duration and error (SlogObserver logs them;
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
// RetryPolicy is the one retry budget of the stack: kvx's retries live
// inside one operation's deadline and kvlease only reads back an
// outcome-unknown write. So TryAcquire, Release and Renew take at most
// Config.CallCeiling: Attempts × 2 × OpTimeout plus the backoffs between
// attempts (3 × 2 × 5 s + 150 ms with the defaults), whatever the caller's
// deadline; Acquire and Hold wait on top of it for as long as their ctx
// allows. TestStalledConnectionBoundedByCallCeiling checks it through a
// stalled proxy.
package kvlock
