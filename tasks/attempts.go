package tasks

import (
	"context"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// Attempts returns key's attempts, oldest first: each one's number (of
// its MaxAttempts, the client's Config.MaxAttempts for a record that
// states none), owner, start and end, and how it ended with its
// error (kvledger.Attempts over the record's stored writes,
// Ledger.History). None when key has no record.
//
// The ledger bucket keeps the last 64 writes of each record (History
// 64), which covers every attempt but those of a task retried more than
// about 30 times. A bucket of the older one-write layout, opened without
// the right to migrate it, holds only the last write: only the attempt
// that write ended is shown, without its start.
func (c *Client) Attempts(ctx context.Context, key kvledger.IdempotencyKey) ([]kvledger.Attempt, error) {
	h, err := c.ledger.History(ctx, key)
	if err != nil {
		return nil, err
	}
	as := kvledger.Attempts(h)
	for i := range as {
		// A record admitted without a limit (`ledger admit`) is bounded
		// by the worker's default: show it, not 0.
		if as[i].Max == 0 && as[i].N > 0 {
			as[i].Max = c.cfg.MaxAttempts
		}
	}
	return as, nil
}

// Workers returns the workers of the ledger that are alive now, from any
// process: each one's lease (when the server expires it unless renewed)
// and the tasks its claims hold (worker.LiveWorkers), with the kinds it
// handles. A worker holds its claim lease while it runs tasks and for
// ClaimTTL after; an idle worker is listed by its presence lease (Idle).
// It scans the ledger: for an operator, not a hot path.
func (c *Client) Workers(ctx context.Context) ([]worker.LiveWorker, error) {
	return c.worker.LiveWorkers(ctx)
}
