package kvlease

// AfterEnd arranges for f to run, in a goroutine of the manager, once the
// guard has ended (its context is cancelled by then, so context.Cause of
// it says why). If the guard has already ended, f runs at once. stop
// unregisters f; it returns true if that kept f from running, false if f
// has been started (or stop was called before).
//
// It is context.AfterFunc(g.Context(), f) without the context machinery:
// packages layered on kvlease (kvlock) hook every lock's end this way, and
// an AfterFunc registration (a context, a child map and a closure per
// lock) was most of what a lock cost beyond its lease (BENCHMARKS.md).
// Close waits for hooks that have started.
func (g *Guard) AfterEnd(f func()) (stop func() bool) {
	h := &endHook{f: f}
	g.mu.Lock()
	if g.cause != nil {
		g.mu.Unlock()
		g.m.goOwned(f)
		return func() bool { return false }
	}
	g.hooks = append(g.hooks, h)
	g.mu.Unlock()
	return func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, x := range g.hooks {
			if x == h {
				g.hooks = append(g.hooks[:i], g.hooks[i+1:]...)
				return true
			}
		}
		return false
	}
}

type endHook struct{ f func() }

// runHooks starts the hooks taken from an ended guard (after its context
// has been cancelled).
func (g *Guard) runHooks(hooks []*endHook) {
	for _, h := range hooks {
		g.m.goOwned(h.f)
	}
}
