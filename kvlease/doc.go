// Package kvlease provides typed, time-limited ownership ("leases") kept in
// a JetStream KV bucket, with explicit loss, fencing tokens, transfer
// between processes, guarded writes and counting semaphores.
//
// # Use
//
//	m, _ := kvlease.NewManager(ctx, js, kvlease.Config{Holder: "worker-1"})
//	defer m.Close(ctx)
//	reports, _ := kvlease.Define[string]("reports", kvlease.StringCodec{}).Bind(m)
//	g, ok, err := reports.TryAcquire(ctx, "2026-11", 10*time.Second) // ok false: someone holds it
//	// ... work, passing g.Fence() to anything that must refuse a stale holder ...
//	_ = g.Release(ctx)
//
// Guarantees, failure modes and the design follow.
//
// # Model
//
// A lease is one key of a bucket created with History 1 and per-key TTLs
// (LimitMarkerTTL). Its value is JSON naming the holder (public holder id,
// host, pid, what it says of itself when it acquired with
// TryAcquireKeyInfo, acquisition time, TTL) and the SHA-256 of the holder's random
// owner secret; the secret itself never leaves the process except inside
// an exported Token.
//
//   - Acquire is create-if-absent with a per-key TTL: one publish expecting
//     the key's last revision to be that of its delete/expiry marker. The
//     manager remembers marker revisions (its own releases, force releases,
//     and watch events seen by waiters), so re-acquiring a key is one round
//     trip instead of three.
//   - Renew is a compare-and-set on the current revision that also sets a
//     fresh TTL (a raw publish with an expected last subject sequence and
//     Nats-TTL; kv.Update would drop the TTL).
//   - Release is a delete conditional on the current revision: a late
//     release never removes a newer holder's lease.
//   - Expiry is the server's: a crashed holder's lease vanishes by itself.
//     No process judges another's lease by its own clock.
//
// Every mutation is conditional on the key's revision, and a write whose
// outcome is unknown (timeout, lost connection) is resolved by reading the
// key back from the stream leader and comparing the owner hash, never by
// guessing. Transient errors are returned as errors: they are never
// reported as contention and never, by themselves, as loss.
//
// Keys are "<family>.<token>": the family name (Define) and the codec's
// string for the resource key, escaped into one KV token (bytes outside
// [A-Za-z0-9_/-] become "=HH"), so any key is representable and distinct
// keys never share a lease. Semaphore slots are "<family>.<token>.<i>".
//
// # Guard states
//
//	          Acquire / TryAcquire / Restore
//	                      |
//	                      v
//	Renew, scheduler  +--------+   Release, Close,          +----------+
//	renewals -------> |  held  |-- caller ctx cancelled --->| released |
//	(window restarts) +--------+   (then conditional delete)+----------+
//	                   |      |
//	 CAS conflict on   |      |  Export (no delete;
//	 renew/guarded     |      |  the token now owns it)     +----------+
//	 write; window     |      +---------------------------->| exported |
//	 ran out           v                                    +----------+
//	               +------+
//	               | lost |  (if only the window ran out: conditional
//	               +------+   delete, in case the key is still ours)
//
// A guard's Context is cancelled on leaving "held", with ErrReleased,
// ErrExported or ErrLost as its cause; Done closes once the final delete
// (if any) has finished. The states are final.
//
// # Validity window
//
// The holder's own view of its lease ends at
//
//	validUntil = sent + ttl - margin,   margin = max(50ms, ttl/10)
//
// where sent is the time (monotonic clock) at which the last write that
// the server confirmed was SENT. The server starts the TTL when it stores
// the write, which is after it was sent, so send latency only makes the
// server's expiry later than the holder's. The margin covers what can make
// it earlier or make the holder late: a difference in clock RATE between
// holder and server (NTP slews at most 500 ppm, i.e. 0.05% of ttl), the
// server measuring the TTL on a new stream leader whose clock differs after
// a leader change, the scheduler's timer firing late (GC, CPU starvation),
// and the time the protected work needs to notice its cancelled context.
// The server expires a key at or after its TTL, never before, and a
// renewal is one round trip (BENCHMARKS.md has both), so ttl/10 leaves
// room for pauses of a tenth of the TTL.
//
// TTLs are MinTTL (1s) to MaxTTL (24h). The server counts TTLs in whole
// seconds and truncates, so fractions are rounded UP on the server (1.5s
// becomes 2s) while the holder's window uses the requested 1.5s: the
// holder always gives up first.
//
// Automatic renewal (StartRenewing, With) runs every TTL/3 by default. A
// renewal that fails transiently is retried every max(50ms, min(ttl/15,
// 2s)) until the window ends; only then is the lease declared lost. A
// renewal that finds the key at another revision holding another owner's
// value is loss at once (one still carrying this guard's owner hash is
// written again at the stored revision: see casOwn). All guards of a
// manager share one scheduler goroutine (a min-heap of due times) and a
// fixed pool of 8 renewal workers, so a manager costs the same goroutines
// with ten leases or ten thousand, and idle guards cost no timer.
//
// # Guarantees
//
//   - Mutual exclusion at the server: at most one holder's value is stored
//     under a key at any revision; every change is a compare-and-set.
//   - A holder's context is cancelled no later than the end of its window,
//     which ends before the server can expire the lease, provided the
//     margin assumptions hold. A holder that cannot reach the server loses
//     its lease, locally, before anyone else can acquire it.
//   - Err checks the window synchronously: a process that was paused past
//     its window (GC, SIGSTOP, VM migration) sees ErrLost on its first
//     check after waking, before timers catch up.
//   - Restore is single-use: it requires the token's secret to match the
//     stored hash and replaces the owner in one compare-and-set.
//
// # Fencing: what it gives and what it does not
//
// Guard.Fence is the revision at which the lease was acquired (or
// restored). Revisions are the bucket stream's sequence numbers: they
// increase strictly across deletes, expiry, restarts and leader changes, so
// every later holder has a greater fence than every earlier one. A resource
// that records the highest fence it has accepted and refuses smaller ones
// ("accept f >= highest") cannot be written by a stale holder, however
// long it was paused. Guard.Revision changes on every renewal; it is what
// Proof writes are conditional on, and resources should not compare it.
//
// Cancellation alone cannot stop a paused process from finishing a write
// it had already started: without fencing (or a guarded write via Proof,
// which the server checks atomically against the lease key), a write
// issued just before a pause can land after the lease passed to someone
// else. Fencing needs the resource's cooperation; a plain external API
// that ignores fences is not protected. Fences are comparable only within
// one bucket: deleting and re-creating the bucket restarts revisions at 1.
//
// # Partitions, clock skew and pauses
//
// A holder cut off from the server cannot renew: its renewals fail, it
// retries within the window, and its context is cancelled when the window
// ends. The server expires the lease one margin later at the earliest, and
// only then may another process acquire it. A waiter cut off from the
// server simply does not acquire. With an R3 bucket a minority side cannot
// write at all, so it can neither acquire nor renew.
//
// Right after a partition heals, a deposed stream leader may still answer
// for a moment, refusing writes at once from its stale state while the
// real leader stores them: a refusal is not proof, only an acceptance
// (which needs a quorum) is. Release therefore settles a refused or
// unanswered delete by the delete's own identity (its Nats-Msg-Id, on the
// stored marker or in a duplicate acknowledgment) and reports ErrLost only
// when another holder's value, an expiry or another writer's delete is
// seen; otherwise its error is an unknown outcome.
//
// Clock OFFSET between machines does not matter: the holder measures its
// window with its own monotonic clock from its own send time, and the
// server measures the TTL with its own clock. Clock RATE differences and
// server-side clock offsets across a stream leader change are covered by
// the margin, up to a tenth of the TTL.
//
// A pause longer than the margin is the one case this package cannot
// prevent: the process may resume believing for an instant that it holds
// the lease. Check Err (or the context) right before protected work, and
// fence the resource.
//
// # Waiting
//
// Acquire with a wait is push-driven. The manager has one shared watch of
// its bucket (one ordered consumer, started by the first wait). A waiter
// subscribes to its keys in that watch (before its first try once the
// watch runs, else after one failed try) and tries again, so a release
// between the try and the subscription is not missed.
//
// The subscription tells the waiter what it can know without a read:
//
//	From   every change of its keys after this revision will reach it
//	Known  each key's latest change the watch had delivered (held, or a
//	       marker at some revision), for up to 4096 keys
//
// A key known to be held is not tried; a key free at a known marker (or at
// the marker of this manager's own release, if newer) is tried with one
// publish. A publish made on such a revision that loses is not read back:
// the watch reports the winner a moment later. If nothing comes within
// 250 ms (a refusal that was not a lost race, as R3 leader changes can
// produce), the waiter reads the key. A release or expiry wakes the waiter,
// which tries at the marker's revision. A safety re-check fires after the
// longest TTL a holder could still have; there is no polling loop. This is
// what a hand-written watch-and-retry loop does, and BENCHMARKS.md measures
// the two side by side.
//
// A waiter on several keys (a semaphore's slots) woken by a release tries
// the freed key only: the others were held when last seen, and their own
// events will say when they are not. A release of one slot of a full
// 64-slot semaphore with 4 waiters costs 4 tries (Stats.Attempts), not one
// per waiter per slot. A lost publish whose winner the watch does not
// report in time is read back alone, and only the safety re-check tries
// every key.
//
// # Releasing
//
// Release sends its conditional delete from the calling goroutine. Its ctx
// bounds only the wait: when ctx ends with the delete in flight, Release
// returns and a goroutine of the manager settles the delete by reading the
// key (and deleting again if the key is still at the guard's revision).
//
// # Observing
//
// Config.Observer receives one call per acquisition, renewal, release and
// loss, with its duration and error: the same four hooks as kvlock's
// Observer. RecorderObserver feeds an opstats.Recorder (counts and
// latency histograms, Prometheus text format); Observers fans out to
// several.
//
// # Why there is no in-memory backend
//
// kvlease deliberately has one implementation. Its whole contract is the
// server's: per-key TTLs that expire a crashed holder, compare-and-set on
// stream revisions, fencing tokens that are those revisions, read-backs
// that settle a write whose answer was lost, and push-woken waiting on
// one watch. An in-memory Manager would be a second lease engine with none
// of those failure modes, so tests run against it would prove little
// about production, and every change would have to be made twice. Code
// that wants a server-free stand-in should depend on kvlock.Service, whose
// in-process implementation (kvlock.NewMemory) is held to the same
// conformance suite (kvlock/locktest) as the NATS one; code that needs
// kvlease itself in a test starts an embedded server in-process
// (embedded.Start with InProcessOnly), which takes milliseconds and runs
// the real engine.
//
// # Layering
//
// Packages built on kvlease with their own key namespace (kvlock) use the
// raw-key entry points and never read or write the bucket themselves:
//
//   - Manager.TryAcquireKey, AcquireKey and ForceReleaseKey, or a
//     StringCodec family from Define;
//   - Manager.AcquireKeyDetached and TryAcquireKeyDetached, whose lease is
//     not tied to the acquiring context (it bounds only the attempt and
//     the wait): the layer above gives the lease its lifetime once,
//     instead of detaching the context and re-attaching it;
//   - Guard.StartRenewing, so the manager's one scheduler renews the guard
//     at the layer's interval, and Guard.OnAutoRenew, a hook after every
//     such renewal (kvlock's Observer);
//   - Guard.AfterEnd, a cheap end hook;
//   - DecodeHolder, Manager.HolderOfKey and Manager.ReadKey to read leases
//     and records kept next to them, and Manager.Ticket and LastTicket, a
//     sequencer for queues (kvlock's fair mode);
//   - Guard.HandOver and Manager.Adopt, which pass a held lease straight
//     to a waiter whose queue entry is a lease of the same bucket: one
//     compare-and-set writes the entry's value into the lease key, and the
//     waiter takes it over without a write (handover.go says why its
//     validity window is safe).
//
// # Time bounds
//
// With T = Config.OpTimeout, one operation (a round trip and the
// retries kvx makes inside it, which share its deadline) takes at most T,
// whatever the caller's deadline; a stalled connection therefore costs T,
// not the caller's patience. TryAcquire, Renew, Release, Holder, Export
// and Restore take at most 2T (an operation and the read-back that
// settles an outcome-unknown write); Acquire and With the wait plus 2T;
// ForceRelease at most 4T. kvlease retries nothing beyond that (see
// bounds.go); TestStalledConnectionBoundedByOperationTimeout checks it
// through a stalled proxy.
package kvlease
