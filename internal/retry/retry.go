// Package retry is the one retry primitive of natscoord: every loop that
// tries an operation again after a transient failure runs on a Policy,
// so each loop states its ceiling (how many tries, and the pauses between
// them) in one value next to its code, and its pauses end with its ctx.
//
//	err := retry.Policy{Tries: 3, Pause: 50 * time.Millisecond, MaxPause: time.Second,
//		Transient: isTransient}.Do(ctx, func(ctx context.Context) error { return op(ctx) })
//
// Do is for an operation that either succeeds or fails; Start is the same
// loop for a caller that decides between tries from what each try found
// (kvx.Bucket.AcquireAs, kvlease's owned writes and release settling).
//
// Its users, each with the policy stated where it lives: kvx's
// no-responder resends (Bucket.send and CreateBatchAs), kvx.Idempotent,
// the wait for a new bucket's stream leader (statusWithLeader), a kvx
// hub's or ScanLatest's watch start that overran its op timeout
// (startRetry), a hub's replacement after a reconnect (replaceRetry), the
// spurious-conflict pauses (kvx.SpuriousConflict: AcquireAs, kvlease's
// owned writes), kvlease's release settling (settleDeleteAt) and its
// hand-over's resend of a write of unknown outcome (handOver), kvlock's
// RetryPolicy, the task runtime's outcome write (worker's finish) and its
// claims' pause (claimRetry, on the worker's timers: PauseAfter), and
// watches started again after they failed (the dashboard's record feed,
// natscoord ledger wait), the dashboard's looks at a lease bucket it waits
// for (awaitLeaseBucket), and the test kit natstest. ARCHITECTURE.md lists
// them with their ceilings.
//
// Pauses double from Pause up to MaxPause without jitter: the loops retry
// a server's passing state (no stream leader yet, a stale answer), so
// clients pausing in step do not meet one contended resource, and a fixed
// schedule keeps each stated ceiling exact.
package retry

import (
	"context"
	"errors"
	"time"
)

// Policy is a retry loop's ceiling and pauses. The zero Policy tries again
// after every error, at once, until ctx ends.
type Policy struct {
	// Tries is the ceiling on tries, the first included. 0 means no
	// ceiling of the policy's own: the loop runs until ctx ends (its
	// deadline, or its owner's Close for a loop that lives as long as its
	// owner), so ctx must be able to end (Start refuses one that cannot:
	// ErrNoCeiling).
	Tries int
	// Pause is the pause before the second try; each later pause doubles,
	// up to MaxPause (MaxPause at or below Pause: Pause every time). 0
	// means no pause.
	Pause, MaxPause time.Duration
	// PerTry bounds each try of Do (its op's ctx); 0 leaves tries bounded
	// by ctx alone.
	PerTry time.Duration
	// Transient reports the errors Do tries again after; any other error
	// ends it at once. Nil means every error is transient.
	Transient func(error) bool
}

// ErrNoCeiling is returned when a Policy without Tries runs under a ctx
// that cannot end (context.Background): such a loop would have no end.
var ErrNoCeiling = errors.New("retry: a policy without Tries needs a ctx that can end")

// Do runs op until it returns nil or an error Transient refuses, the
// tries run out, or ctx ends during a pause. It returns op's last error
// (nil on success), joined with ctx's error when ctx ended during a
// pause, so that both errors.Is checks hold. The first try runs whatever
// ctx's state, so op reports an ended ctx in its own terms.
func (p Policy) Do(ctx context.Context, op func(ctx context.Context) error) error {
	var err error
	l := p.Start(ctx)
	for l.Next() {
		tctx, cancel := ctx, context.CancelFunc(nil)
		if p.PerTry > 0 {
			tctx, cancel = context.WithTimeout(ctx, p.PerTry)
		}
		err = op(tctx)
		if cancel != nil {
			cancel()
		}
		if err == nil || p.Transient != nil && !p.Transient(err) {
			return err
		}
	}
	if err == nil {
		err = ErrNoCeiling // the loop never started
	}
	if lerr := l.Err(); lerr != nil && !errors.Is(err, lerr) {
		err = errors.Join(err, lerr)
	}
	return err
}

// Ceiling is the longest a loop on p can take: Tries × PerTry plus every
// pause between the tries. It is 0 when p has no ceiling of its own
// (Tries 0), and counts no time for tries when PerTry is 0.
func (p Policy) Ceiling() time.Duration {
	if p.Tries <= 0 {
		return 0
	}
	total := time.Duration(p.Tries) * p.PerTry
	pause := p.Pause
	for range p.Tries - 1 {
		total += pause
		pause = p.next(pause)
	}
	return total
}

// PauseAfter is the pause after the n-th failed try in a row (n >= 1):
// the one a Loop on p makes before try n+1. It is for a loop that waits
// on a timer of its own rather than on a goroutine (the task runtime's
// claims, which wait on the worker's due-time heap).
func (p Policy) PauseAfter(n int) time.Duration {
	pause := p.Pause
	for i := 1; i < n && pause < p.MaxPause; i++ {
		pause = p.next(pause)
	}
	return pause
}

// next is the pause after one of pause.
func (p Policy) next(pause time.Duration) time.Duration {
	if p.MaxPause <= p.Pause {
		return p.Pause
	}
	return min(2*pause, p.MaxPause)
}

// Start begins a loop on p under ctx, for a caller that decides between
// tries itself:
//
//	for l := p.Start(ctx); l.Next(); {
//		... one try; return on an outcome, or l.NoPause() after a lost race ...
//	}
//	// the ceiling was reached, or ctx ended (l.Err)
func (p Policy) Start(ctx context.Context) Loop {
	l := Loop{p: p, ctx: ctx, try: -1, pause: p.Pause}
	if ctx.Done() == nil && p.Tries <= 0 {
		l.err = ErrNoCeiling
	}
	return l
}

// Loop is one run of a Policy (Start).
type Loop struct {
	p       Policy
	ctx     context.Context
	try     int
	pause   time.Duration
	skip    bool
	stopped bool
	err     error
}

// Next reports whether to make another try: the first at once, each
// later one after its pause. It returns false once the tries are used up
// or ctx ended during a pause (Err).
func (l *Loop) Next() bool {
	if l.stopped || l.err != nil {
		return false
	}
	if l.try+1 >= l.p.Tries && l.p.Tries > 0 {
		l.stopped = true
		return false
	}
	if l.try >= 0 {
		if !l.skip && l.pause > 0 {
			t := time.NewTimer(l.pause)
			select {
			case <-l.ctx.Done():
				t.Stop()
				l.stopped, l.err = true, l.ctx.Err()
				return false
			case <-t.C:
			}
		}
		if !l.skip {
			l.pause = l.p.next(l.pause)
		}
		if l.p.Tries <= 0 && l.ctx.Err() != nil {
			l.stopped, l.err = true, l.ctx.Err()
			return false
		}
	}
	l.skip = false
	l.try++
	return true
}

// Try is the index of the current try, from 0.
func (l *Loop) Try() int { return l.try }

// Last reports whether the current try is the last the ceiling allows.
func (l *Loop) Last() bool { return l.p.Tries > 0 && l.try+1 >= l.p.Tries }

// NoPause makes the next try follow at once, without using up a pause:
// for a failure that was no fault, such as a race lost to another writer,
// where the next try has new information. It still counts against Tries.
func (l *Loop) NoPause() { l.skip = true }

// Err is why the loop stopped: ctx's error when ctx ended during a pause,
// ErrNoCeiling, or nil (the tries were used up, or it has not stopped).
func (l *Loop) Err() error { return l.err }
