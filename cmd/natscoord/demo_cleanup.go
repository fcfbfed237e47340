package main

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/kvlease"
)

// A demo run against someone's server (--server) leaves nothing behind:
// its events are its own ledger bucket's writes (live on
// "ledger.<bucket>.>"), and afterwards it deletes that bucket, its
// claims' lease bucket and its election's records in the lease bucket. --keep keeps the bucket for
// inspection.

// demoLockName is the kvlock Config.Name of the demo's election.
const demoLockName = "natscoord-demo"

// demoElection is the election of one run.
func demoElection(runID string) string { return "leader-" + runID }

// cleanUp deletes what the run created on the server. It runs after every
// worker closed (resigned), bounded by a few seconds.
func (r *demoRun) cleanUp(ctx context.Context, js jetstream.JetStream) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, b := range []string{r.bucket, r.claimsBucket()} {
		if err := js.DeleteKeyValue(ctx, b); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return
		}
	}
	// The election's lock and value record ("<name>.e.<election>",
	// "<name>.ev.<election>") stay after a resignation as a delete marker
	// and the last value. Purging their subjects from the lease bucket's
	// stream removes them, markers included.
	s, err := js.Stream(ctx, "KV_"+kvlease.DefaultBucket)
	if err != nil {
		return
	}
	base := "$KV." + kvlease.DefaultBucket + "." + demoLockName + ".*." + demoElection(r.runID)
	for _, subj := range []string{base, base + ".>"} {
		_ = s.Purge(ctx, jetstream.WithPurgeSubject(subj))
	}
}
