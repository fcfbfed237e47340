package kvlease

// reclaim runs, with opMu held, after one of the guard's compare-and-sets
// conflicted on revision rev. A conflict normally means the lease changed
// hands, but not always: under stream-leader changes on a replicated
// bucket, a write can be stored at another revision than the one this
// guard recorded (RELIABILITY.md: a release right after an acquisition
// conflicted with no other holder in between, and the lease stayed
// orphaned until its TTL). The owner hash is unique to this acquisition
// (every acquisition and restore writes a fresh one), so finding it at the
// server proves the lease is still ours: the guard adopts the stored
// revision and the caller retries once. Anything else (another owner, no
// value, a failed read) leaves the conflict to mean loss.
func (g *Guard) reclaim(rev uint64) (uint64, bool) {
	ctx, cancel := g.m.cleanupCtx()
	defer cancel()
	e, err := g.m.b.Get(ctx, g.key)
	if err != nil || e.Revision == rev || !ownedBy(e.Value, g.owner) {
		return 0, false
	}
	g.mu.Lock()
	g.rev = e.Revision
	g.mu.Unlock()
	g.m.stats.reclaimed.Add(1)
	g.m.log.Warn("kvlease: lease found at another revision than recorded; adopted it",
		"key", g.key, "recorded", rev, "stored", e.Revision)
	return e.Revision, true
}
