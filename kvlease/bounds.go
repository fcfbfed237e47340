package kvlease

import "time"

// How long a call can take, from Config.OpTimeout (T). One
// operation is one server round trip together with the retries kvx makes
// inside it (no-responder retries, the create-over-marker steps of an
// acquisition): they share the operation's deadline, so they add no time.
// A caller's later deadline never lifts T.
//
//   - TryAcquire, Renew, Release, Holder, Export, Restore: at most 2T,
//     one operation plus one read-back that settles an outcome-unknown
//     write (a timeout may have landed: the key is read to find out).
//   - A release that hands the lease over (HandOver, kvlock's fair
//     hand-off): at most 5T. The hand-over write (T); while its outcome
//     stays unknown, its resend under the same write id (handOver, paced
//     by settlePauses, up to T: one cleanup context); the read-back that
//     tells whether it landed (T); and when it did not, the conditional
//     delete and its settling, as Release (2T).
//   - Release and HandOver first wait for a renewal of the same lease in
//     flight (it holds the lease's operation lock), outside these bounds:
//     that renewal is itself bounded (2T).
//   - Acquire and With: the wait, plus 2T.
//   - ForceRelease: at most 4T (up to four read-and-delete rounds while
//     the key keeps changing; a failing round returns at once).
//
// kvlease itself retries nothing else (its loops, casOwned,
// settleDeleteAt and the hand-over's resend under its write id while its
// outcome is unknown, run on the one retry primitive, internal/retry,
// within these bounds: each settling loop within one cleanup context, T);
// a layer above that retries (kvlock's RetryPolicy) multiplies these
// bounds by its attempts and adds its backoffs, and states its own
// ceiling.

// callBound is the bound of the 2T calls above.
func callBound(c Config) time.Duration {
	t := c.OpTimeout
	if t == 0 {
		t = DefaultOpTimeout
	}
	return 2 * t
}
