package natstest

import (
	"context"
	"testing"
	"time"
)

// Open calls open until it succeeds and returns its result: how tests make
// a bucket, manager or Locker, which on a fresh cluster may need a moment
// before replicated streams are accepted. Each attempt has a deadline of
// its own (8 s, 40 s in all) and each new error is logged, so an attempt
// that hangs fails with its own error and is tried again. (A condition
// passed to require.Eventually runs on a goroutine that is not waited for:
// a hung one failed the test silently, and its error, logged only after
// the test's context was cancelled, read "context canceled".)
func Open[T any](t testing.TB, what string, open func(ctx context.Context) (T, error)) T {
	t.Helper()
	const attempt, total = 8 * time.Second, 40 * time.Second
	deadline := time.Now().Add(total)
	var last error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), attempt)
		v, err := open(ctx)
		cancel()
		if err == nil {
			return v
		}
		if last == nil || err.Error() != last.Error() {
			t.Logf("%s: %v (retrying)", what, err)
		}
		last = err
		if time.Now().After(deadline) {
			t.Fatalf("%s: no success within %v: %v", what, total, err)
		}
		// A pause between attempts, not a wait for a condition: the
		// condition is the next attempt's success.
		pause := time.NewTimer(50 * time.Millisecond)
		<-pause.C
	}
}
