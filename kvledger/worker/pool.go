package worker

// Attempt goroutines are reused: a goroutine that finished an attempt
// parks and takes the next one the dispatcher starts, instead of a new
// goroutine per attempt. A fresh goroutine starts on a small stack and
// an attempt's claim path grows it two or three times (the stack copies
// cost about 4% of the runtime's CPU in BenchmarkTaskRuntime); a parked
// one keeps its grown stack. There are never more goroutines than
// attempts have run at once (at most 2×Concurrency), and the parked ones
// end when Close cancels the worker's context.

// startAttemptLocked runs r on a parked goroutine, or on a new one.
func (w *Worker) startAttemptLocked(r *run) {
	if n := len(w.parked); n > 0 {
		ch := w.parked[n-1]
		w.parked = w.parked[:n-1]
		ch <- r // buffered 1, and only this send reaches it while unparked
		return
	}
	w.pool.Add(1)
	go w.attemptLoop(r)
}

// attemptLoop runs r, then each attempt handed to it while parked, until
// the worker's context ends.
func (w *Worker) attemptLoop(r *run) {
	defer w.pool.Done()
	ch := make(chan *run, 1)
	for {
		r.attempt()
		w.mu.Lock()
		if w.ctx.Err() != nil {
			w.mu.Unlock()
			return
		}
		w.parked = append(w.parked, ch)
		w.mu.Unlock()
		select {
		case r = <-ch:
		case <-w.ctx.Done():
			// The dispatcher starts attempts only before Close sets
			// draining (under mu, before it cancels the context), so a
			// hand-off made just before the cancellation is already in
			// the channel: run it rather than drop it.
			select {
			case r = <-ch:
			default:
				return
			}
		}
	}
}
