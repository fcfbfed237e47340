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
//   - Release first waits for a renewal of the same lease in flight (it
//     holds the lease's operation lock, within its own 2T).
//   - Acquire and With: the wait, plus 2T.
//   - ForceRelease: at most 4T (up to four read-and-delete rounds while
//     the key keeps changing; a failing round returns at once).
//
// kvlease itself retries nothing else (its loops, casOwned,
// settleDeleteAt and the hand-over's resend under its write id while its
// outcome is unknown, run on the one retry primitive, internal/retry,
// within these bounds: the resend within the shared cleanup bound, T); a layer above that retries (kvlock's RetryPolicy)
// multiplies these bounds by its attempts and adds its backoffs, and
// states its own ceiling.

// callBound is the bound of the 2T calls above.
func callBound(c Config) time.Duration {
	t := c.OpTimeout
	if t == 0 {
		t = DefaultOpTimeout
	}
	return 2 * t
}
