package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/natscoord/natscoord/kvledger"
)

// RunNow makes each of keys ready at once when it waits for its time: a
// scheduled task (RunAt or Delay ahead) or one retrying after a failed
// attempt's backoff. Its attempts are unchanged (a retrying task runs
// its next attempt now, not a fresh one); needs not completed still
// hold it. Each is one compare-and-set on its record (kvledger's
// Ledger.RunNow, event "ledger.run_now"); a task that is pending and due
// already is left as it is, with no write. It tries every key and
// returns the errors joined: kvledger.ErrNotDelayed for a task that is
// running or ended, ErrNotFound for a key without a record.
func (c *Client) RunNow(ctx context.Context, keys ...kvledger.IdempotencyKey) error {
	if err := c.writing(); err != nil {
		return err
	}
	var errs []error
	for _, k := range keys {
		_, err := c.ledger.RunNow(ctx, c.cfg.Actor, k, c.cfg.Clock.Now())
		if errors.Is(err, kvledger.ErrNoKey) {
			err = fmt.Errorf("%w: %q", ErrNotFound, string(k))
		}
		if err != nil {
			errs = append(errs, closedErr(err))
		}
	}
	return errors.Join(errs...)
}
