package worker

import (
	"fmt"
	"io"
	"strings"
)

// WritePrometheus writes s in the Prometheus text format, for a /metrics
// handler that serves it beside an opstats.Recorder's series (see
// RecorderObserver):
//
//   - natscoord_worker_running, natscoord_worker_ready (gauges):
//     Running and Ready;
//   - natscoord_worker_attempts_started_total: Started;
//   - natscoord_worker_attempts_total{result}: how attempts ended
//     (Completed, Retried, Failed, Released, Cancelled, Lost);
//   - natscoord_worker_panics_total, natscoord_worker_claims_contended_total,
//     natscoord_worker_claims_taken_over_total,
//     natscoord_worker_scheduled_total, natscoord_worker_group_full_total:
//     Panics, Contended, TakenOver, Scheduled and GroupFull.
//
// The series carry no label naming the worker: serve one worker's Stats
// per endpoint.
func (s Stats) WritePrometheus(w io.Writer) error {
	var b strings.Builder
	metric := func(name, typ, help string, values ...any) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for i := 0; i < len(values); i += 2 {
			fmt.Fprintf(&b, "%s%s %d\n", name, values[i], values[i+1])
		}
	}
	metric("natscoord_worker_running", "gauge", "Handlers running now.", "", s.Running)
	metric("natscoord_worker_ready", "gauge", "Tasks the worker knows to be ready and has not started.", "", s.Ready)
	metric("natscoord_worker_attempts_started_total", "counter", "Attempts whose handler started.", "", s.Started)
	metric("natscoord_worker_attempts_total", "counter", "Attempts finished, by result.",
		`{result="completed"}`, s.Completed, `{result="retried"}`, s.Retried, `{result="failed"}`, s.Failed,
		`{result="released"}`, s.Released, `{result="cancelled"}`, s.Cancelled, `{result="lost"}`, s.Lost)
	metric("natscoord_worker_panics_total", "counter", "Handler panics (also counted as retried or failed).", "", s.Panics)
	metric("natscoord_worker_claims_contended_total", "counter", "Claims another worker was first to.", "", s.Contended)
	metric("natscoord_worker_claims_taken_over_total", "counter", "Claims that took a task over from a worker whose lease had ended.", "", s.TakenOver)
	metric("natscoord_worker_scheduled_total", "counter", "Periodic tasks this worker admitted.", "", s.Scheduled)
	metric("natscoord_worker_group_full_total", "counter", "Tries for a group slot that found every slot held.", "", s.GroupFull)
	_, err := io.WriteString(w, b.String())
	return err
}
