package tasks

import (
	"context"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// Attempts returns key's attempts, oldest first: each one's number (of
// its MaxAttempts), owner, start and end, and how it ended with its
// error (kvledger.Attempts over the record's stored writes,
// Ledger.History). None when key has no record.
//
// The ledger bucket keeps as many writes per key as its History setting.
// A bucket that keeps one (History 1) holds only the last write, so only
// the attempt that write ended is shown (without its start) until the
// bucket keeps more.
func (c *Client) Attempts(ctx context.Context, key kvledger.IdempotencyKey) ([]kvledger.Attempt, error) {
	h, err := c.ledger.History(ctx, key)
	if err != nil {
		return nil, err
	}
	return kvledger.Attempts(h), nil
}

// Workers returns the workers of the ledger that are alive now, from any
// process: each one's lease (when the server expires it unless renewed)
// and the tasks its claims hold (worker.LiveWorkers). A worker holds its
// lease while it runs tasks and for ClaimTTL after; an idle worker is not
// listed. It scans the ledger: for an operator, not a hot path.
func (c *Client) Workers(ctx context.Context) ([]worker.LiveWorker, error) {
	return c.worker.LiveWorkers(ctx)
}
