package worker

import "sync/atomic"

// Stats counts a worker's activity since New.
type Stats struct {
	// Running is the number of handlers running now; Ready the tasks the
	// worker knows to be ready and not yet started (its ready set, tasks
	// waiting for a group slot included).
	Running int
	Ready   int
	// Started counts attempts started; Completed, Retried, Failed,
	// Released, Cancelled and Lost count how they ended, each once the
	// Observer's OnFinish for it has returned (a reader that sees the
	// count finds the Observer called); Panics counts handler panics
	// (also counted as Retried or Failed).
	Started, Completed, Retried, Failed, Released, Cancelled, Lost, Panics uint64
	// Snoozed counts attempts whose handler returned Snooze (not
	// counted as attempts of the task).
	Snoozed uint64
	// Contended counts claims that another worker was first to: the
	// record was claimed since this worker saw it, or is no longer
	// ready, or names a lease that is still held.
	Contended uint64
	// TakenOver counts claims that took a task over from a worker whose
	// lease had ended.
	TakenOver uint64
	// Scheduled counts periodic tasks this worker admitted (a period
	// another process admitted first is not counted).
	Scheduled uint64
	// GroupFull counts tries for a group slot (Config.GroupLimits) that
	// found every slot held: the task waited for one, and no attempt
	// was counted.
	GroupFull uint64
}

type counters struct {
	started, completed, retried, failed, released, cancelled, lost, panics atomic.Uint64
	contended, takenOver, scheduled, groupFull                             atomic.Uint64
	snoozed                                                                atomic.Uint64
}
