package worker

import (
	"io"

	"github.com/natscoord/natscoord/opstats"
)

// WritePrometheus writes s in the Prometheus text format, for a /metrics
// handler that serves it beside an opstats.Recorder's series (see
// RecorderObserver):
//
//   - natscoord_worker_running, natscoord_worker_ready (gauges):
//     Running and Ready;
//   - natscoord_worker_attempts_started_total: Started;
//   - natscoord_worker_attempts_total{result}: how attempts ended
//     (Completed, Retried, Failed, Released, Cancelled, Lost, Snoozed);
//   - natscoord_worker_panics_total, natscoord_worker_claims_contended_total,
//     natscoord_worker_claims_taken_over_total,
//     natscoord_worker_scheduled_total, natscoord_worker_group_full_total:
//     Panics, Contended, TakenOver, Scheduled and GroupFull.
//
// The series carry no label naming the worker: serve one worker's Stats
// per endpoint.
func (s Stats) WritePrometheus(w io.Writer) error { return opstats.WriteText(w, s.Families()...) }

// Families returns the series WritePrometheus writes, for a handler that
// serves them with others through opstats.WriteText.
func (s Stats) Families() []opstats.Family {
	one := func(name string, kind opstats.Kind, help string, v uint64) opstats.Family {
		return opstats.Family{Name: name, Help: help, Kind: kind, Samples: []opstats.Sample{{Value: float64(v)}}}
	}
	attempts := opstats.Family{Name: "natscoord_worker_attempts_total", Help: "Attempts finished, by result.", Kind: opstats.Counter}
	for _, r := range []struct {
		res Result
		n   uint64
	}{{ResultCompleted, s.Completed}, {ResultRetried, s.Retried}, {ResultFailed, s.Failed},
		{ResultReleased, s.Released}, {ResultCancelled, s.Cancelled}, {ResultLost, s.Lost}, {ResultSnoozed, s.Snoozed}} {
		attempts.Samples = append(attempts.Samples, opstats.Sample{Labels: []opstats.Label{{Name: "result", Value: string(r.res)}}, Value: float64(r.n)})
	}
	return []opstats.Family{
		one("natscoord_worker_running", opstats.Gauge, "Handlers running now.", uint64(max(0, s.Running))),
		one("natscoord_worker_ready", opstats.Gauge, "Tasks the worker knows to be ready and has not started.", uint64(max(0, s.Ready))),
		one("natscoord_worker_attempts_started_total", opstats.Counter, "Attempts whose handler started.", s.Started),
		attempts,
		one("natscoord_worker_panics_total", opstats.Counter, "Handler panics (also counted as retried or failed).", s.Panics),
		one("natscoord_worker_claims_contended_total", opstats.Counter, "Claims another worker was first to.", s.Contended),
		one("natscoord_worker_claims_taken_over_total", opstats.Counter, "Claims that took a task over from a worker whose lease had ended.", s.TakenOver),
		one("natscoord_worker_scheduled_total", opstats.Counter, "Periodic tasks this worker admitted.", s.Scheduled),
		one("natscoord_worker_group_full_total", opstats.Counter, "Tries for a group slot that found every slot held.", s.GroupFull),
	}
}
