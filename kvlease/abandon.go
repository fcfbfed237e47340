package kvlease

// Abandon ends g without deleting its lease: g stops renewing and ends
// with ErrAbandoned, and the lease stays held until the server expires
// it, its TTL after its last write. Nobody can renew or release it any
// more (its owner secret goes with g). It is for a lease that must
// outlive the process that took it, for exactly its TTL: kvledger's
// Claim from a one-shot command line names such a lease in the claimed
// record, so every other claimant judges the claim by the server's
// expiry. A guard that has already ended returns its cause.
func (g *Guard) Abandon() error {
	g.opMu.Lock() // no renewal or guarded write in flight
	defer g.opMu.Unlock()
	if err := g.Err(); err != nil {
		return err
	}
	if !g.end(ErrAbandoned, false, false) {
		return g.ended()
	}
	return nil
}
