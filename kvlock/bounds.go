package kvlock

import "time"

// CallCeiling is the longest a TryAcquire, Release or Renew can take with
// this configuration (defaults applied), counting every retry: the one
// retry across operations is RetryPolicy (a policy on internal/retry,
// whose Ceiling this is), around kvlease operations that each
// take at most 2 × OpTimeout (one operation, whose internal kvx retries
// share its deadline, plus one read-back of an outcome-unknown write).
// So the ceiling is Attempts × 2 × OpTimeout plus the backoffs between
// the attempts. Acquire and Hold wait on top of it for as long as their
// ctx allows. A caller's later deadline never lifts it. In fair mode a
// TryAcquire makes three such retried steps (the queue's last ticket, the
// sync of its view, the lock's lease), so it can take three times the
// ceiling, still whatever the caller's deadline.
func (c Config) CallCeiling() time.Duration {
	c, err := c.withDefaults()
	if err != nil {
		return 0
	}
	return c.Retry.policy(c.OpTimeout).Ceiling()
}
