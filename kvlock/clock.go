package kvlock

import (
	"time"

	"github.com/natscoord/natscoord/internal/clock"
)

// Clock is the time source of the in-process Locker (NewMemory): TTLs,
// validity windows and Hold's renewals run on it. The NATS Locker always
// uses real time, because there the server's clock expires locks. It is
// natscoord's one clock interface (internal/clock): Now, and AfterFunc,
// which calls f once after d unless the stop it returns (reporting
// whether it prevented the call) runs first.
type Clock = clock.Clock

// RealClock returns the system clock.
func RealClock() Clock { return clock.Real() }

// ManualClock is a Clock that moves only when Advance is called, so a test
// can let a TTL pass at once and deterministically. Timer functions run
// on the goroutine that calls Advance, in due order. It is safe for
// concurrent use.
type ManualClock = clock.Manual

// NewManualClock returns a ManualClock reading start (a fixed date when
// start is zero).
func NewManualClock(start time.Time) *ManualClock { return clock.NewManual(start) }
