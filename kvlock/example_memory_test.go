package kvlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/kvlock"
)

// RunReport is a user's code: it depends on kvlock.Service, not on a
// server, and runs the report only while it holds the lock.
func RunReport(ctx context.Context, locks kvlock.Service, report func(ctx context.Context, token uint64) error) error {
	hctx, release, err := locks.Hold(ctx, kvlock.Key("report", "daily"))
	if err != nil {
		return err
	}
	defer release()
	token, _ := kvlock.TokenFromContext(hctx)
	return report(hctx, token)
}

// A unit test of RunReport on the in-process Locker: no server, and a
// manual clock that lets a TTL pass at once.
func ExampleNewMemory() {
	ctx := context.Background()
	clock := kvlock.NewManualClock(time.Time{})
	locks, err := kvlock.NewMemory(kvlock.Config{TTL: 5 * time.Second}, kvlock.WithClock(clock))
	if err != nil {
		panic(err)
	}
	defer locks.Close(ctx)

	// While another replica holds the lock, the report waits.
	other, _, _ := locks.TryAcquire(ctx, kvlock.Key("report", "daily"))
	var ran uint64
	waited := make(chan error, 1)
	go func() {
		waited <- RunReport(ctx, locks, func(ctx context.Context, token uint64) error {
			ran = token
			return nil
		})
	}()
	// The other replica crashes: its lock is never renewed and expires.
	clock.Advance(5 * time.Second)
	fmt.Println("other replica lost its lock:", errors.Is(other.Err(), kvlock.ErrLost))
	fmt.Println("report:", <-waited)
	fmt.Println("report ran with a newer token:", ran > other.Token())
	// Output:
	// other replica lost its lock: true
	// report: <nil>
	// report ran with a newer token: true
}
