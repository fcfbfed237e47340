package tasks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/natscoord/natscoord/kvledger"
)

// Get returns key's record; found is false when it has none.
func (c *Client) Get(ctx context.Context, key kvledger.IdempotencyKey) (rec kvledger.TaskState, found bool, err error) {
	return c.ledger.State(ctx, key)
}

// Wait blocks until every key has ended (completed, failed, cancelled or
// blocked), woken by the ledger's watch, and returns the final records.
// A key that has no record when Wait starts is ErrNotFound, naming it,
// at once (as `natscoord ledger wait` exits 1): submit before waiting.
// ctx bounds the wait.
func (c *Client) Wait(ctx context.Context, keys ...kvledger.IdempotencyKey) (map[kvledger.IdempotencyKey]kvledger.TaskState, error) {
	absent, err := c.ledger.Absent(ctx, keys...)
	if err != nil {
		return nil, err
	}
	if len(absent) > 0 {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, absent)
	}
	return c.ledger.WaitFinal(ctx, keys...)
}

// Filter picks tasks for List. The zero value picks every task.
type Filter struct {
	// Phases keeps tasks in one of these phases. Default: any.
	Phases []kvledger.Phase
	// Kind keeps tasks of this kind. Default: any.
	Kind string
	// Prefix keeps tasks whose key starts with it. Default: any.
	Prefix string
	// After starts the page after this key (the previous page's Next).
	// Default: the first key.
	After kvledger.IdempotencyKey
	// Limit bounds the page. Default 100.
	Limit int
}

// Page is one page of List, in key order.
type Page struct {
	Tasks []kvledger.TaskState
	// Next is the Filter.After of the next page; empty on the last page.
	Next kvledger.IdempotencyKey
}

// List returns the tasks f picks, a page at a time, in key order. It
// reads the whole ledger (a snapshot) per call: for a dashboard or an
// operator, not for a hot path.
func (c *Client) List(ctx context.Context, f Filter) (Page, error) {
	snap, err := c.ledger.Snapshot(ctx)
	if err != nil {
		return Page{}, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	slices.SortFunc(snap.Tasks, func(a, b kvledger.TaskState) int { return strings.Compare(string(a.Key), string(b.Key)) })
	now := c.cfg.Clock.Now()
	var p Page
	for _, t := range snap.Tasks {
		switch {
		case f.After != "" && t.Key <= f.After,
			f.Kind != "" && t.Kind != f.Kind,
			!strings.HasPrefix(string(t.Key), f.Prefix),
			len(f.Phases) > 0 && !slices.Contains(f.Phases, t.Phase(now)):
			continue
		}
		if len(p.Tasks) == limit {
			p.Next = p.Tasks[len(p.Tasks)-1].Key
			break
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p, nil
}
