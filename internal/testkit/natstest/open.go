package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/retry"
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
	ctx, cancel := context.WithTimeout(context.Background(), openTotal)
	defer cancel()
	var (
		v    T
		last error
	)
	err := openRetry.Do(ctx, func(ctx context.Context) (err error) {
		if v, err = open(ctx); err != nil && (last == nil || err.Error() != last.Error()) {
			t.Logf("%s: %v (retrying)", what, err)
		}
		last = err
		return err
	})
	if err != nil {
		t.Fatalf("%s: no success within %v: %v", what, openTotal, err)
	}
	return v
}

// openRetry is Open's policy on the one retry primitive (internal/retry):
// each attempt bounded by 8 s, 50 ms apart (a pause between attempts, not
// a wait for a condition: the condition is the next attempt's success),
// for openTotal in all.
var openRetry = retry.Policy{PerTry: 8 * time.Second, Pause: 50 * time.Millisecond, MaxPause: 50 * time.Millisecond}

const openTotal = 40 * time.Second
