package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nuid"

	"github.com/natscoord/natscoord/kvledger"
)

// Args is a task's arguments. Its Kind routes the task to the worker
// added for that type, and its JSON is the stored payload: numbers,
// strings and bytes round-trip exactly (integers beyond 2^53 too), so a
// handler receives what was submitted.
type Args interface {
	// Kind names the task's kind. It must be constant for the type.
	Kind() string
}

// SubmitOpts are a submission's options. The zero value (or nil) is valid:
// every field states its default.
type SubmitOpts struct {
	// Key is the task's idempotency key: a second submission under a key
	// that has a record admits nothing (Submitted.Admitted is false).
	// Default: "<kind>.<nuid>", a new key every time.
	Key kvledger.IdempotencyKey
	// Seq is the submission's sequence: a submission with a higher Seq
	// rebases a pending task in place (new payload and needs), a lower or
	// equal one changes nothing. Default 1.
	Seq kvledger.Sequence
	// Needs are keys that must complete before this task runs; one that
	// fails blocks it. Default none.
	Needs []kvledger.IdempotencyKey
	// RunAt is the earliest time the task may start; Delay, when
	// positive, sets it to now plus Delay (not both). Default: at once.
	RunAt time.Time
	Delay time.Duration
	// MaxAttempts bounds the task's attempts. Default: the client's
	// Config.MaxAttempts (3), stored in the record so that every worker
	// obeys it.
	MaxAttempts int
	// Timeout bounds each attempt's handler: its ctx then ends with
	// cause ErrTimeout and the attempt fails (retried by the usual
	// rule; a handler that returns nil anyway completes the task). Stored
	// in the record in whole milliseconds, so every worker obeys it; at
	// most kvledger.MaxTimeout (a week). Default: the client's
	// Config.Timeout (0: none).
	Timeout time.Duration
	// Priority orders the ready tasks of the kind: higher starts first,
	// equal ones in the order they became ready. Default 0.
	Priority int
	// Group names the concurrency group the task counts against:
	// Config.GroupLimits bounds how many of its tasks run at once across
	// all workers. Default "": none.
	Group string
}

// Submitted is the outcome of one submission.
type Submitted struct {
	// Key is the task's key (the one generated when SubmitOpts.Key was
	// empty).
	Key kvledger.IdempotencyKey
	// Admitted is false when the key already had a record, which is
	// then unchanged unless the submission rebased it.
	Admitted bool
	// MissingNeeds are the needs (SubmitOpts.Needs) that had no record
	// when the task was admitted. The submission stands: a need may be
	// submitted later, and the task waits until it is and completes (as
	// `natscoord ledger admit` notes). Empty when not Admitted.
	MissingNeeds []kvledger.IdempotencyKey
}

// Submission pairs arguments with their options, for SubmitMany.
type Submission struct {
	Args Args
	Opts *SubmitOpts
}

// Submit admits one task. After Close it is ErrClosed. A task with
// needs is followed by a read of each need (Submitted.MissingNeeds); an
// error of those reads comes with Admitted as the admission left it.
func (c *Client) Submit(ctx context.Context, args Args, opts *SubmitOpts) (Submitted, error) {
	sub, err := submission(args, opts, c.cfg)
	if err != nil {
		return Submitted{}, err
	}
	if err := c.writing(); err != nil {
		return Submitted{Key: sub.Key}, err
	}
	ok, err := c.ledger.Submit(ctx, c.cfg.Actor, sub)
	if err != nil {
		return Submitted{Key: sub.Key}, closedErr(err)
	}
	out := Submitted{Key: sub.Key, Admitted: ok}
	return out, c.missingNeeds(ctx, &out, sub.Needs)
}

// missingNeeds sets out.MissingNeeds for an admitted task with needs.
func (c *Client) missingNeeds(ctx context.Context, out *Submitted, needs []kvledger.IdempotencyKey) error {
	if !out.Admitted || len(needs) == 0 {
		return nil
	}
	absent, err := c.ledger.Absent(ctx, needs...)
	out.MissingNeeds = absent
	return closedErr(err)
}

// SubmitMany admits tasks in batches (one round trip for up to 1000 new
// tasks without needs, where the server allows atomic batches), in order.
// On an error the returned slice says what was admitted before it.
func (c *Client) SubmitMany(ctx context.Context, subs []Submission) ([]Submitted, error) {
	out := make([]Submitted, len(subs))
	ks := make([]kvledger.Submission, len(subs))
	for i, s := range subs {
		sub, err := submission(s.Args, s.Opts, c.cfg)
		if err != nil {
			return nil, fmt.Errorf("submission %d: %w", i, err)
		}
		ks[i], out[i].Key = sub, sub.Key
	}
	if err := c.writing(); err != nil {
		return out, err
	}
	ok, err := c.ledger.AdmitMany(ctx, c.cfg.Actor, ks)
	for i := range ok {
		out[i].Admitted = ok[i]
	}
	if err != nil {
		return out, closedErr(err)
	}
	for i := range out {
		if err := c.missingNeeds(ctx, &out[i], ks[i].Needs); err != nil {
			return out, err
		}
	}
	return out, nil
}

// payloadOf returns args' kind and its JSON, the task's payload: what a
// submission and a schedule (Client.Schedule) store. Nil args, an empty
// kind or args that do not marshal are ErrInvalidArgs.
func payloadOf(args Args) (string, json.RawMessage, error) {
	if args == nil {
		return "", nil, fmt.Errorf("%w: nil Args", ErrInvalidArgs)
	}
	kind := args.Kind()
	if kind == "" {
		return "", nil, fmt.Errorf("%w: %T has an empty Kind", ErrInvalidArgs, args)
	}
	payload, err := json.Marshal(args)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %T: %w", ErrInvalidArgs, args, err)
	}
	return kind, payload, nil
}

// submission is the ledger's submission of args with opts, admitted at
// cfg's Clock's now; the client's defaults (cfg's MaxAttempts and
// Timeout) are stored when opts state none, so the record shows what
// bounds it (not 0) whichever worker claims it.
func submission(args Args, opts *SubmitOpts, cfg Config) (kvledger.Submission, error) {
	kind, payload, err := payloadOf(args)
	if err != nil {
		return kvledger.Submission{}, err
	}
	var o SubmitOpts
	if opts != nil {
		o = *opts
	}
	if o.Key == "" {
		o.Key = kvledger.IdempotencyKey(kind + "." + nuid.Next())
	}
	if o.Seq == 0 {
		o.Seq = 1
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = cfg.MaxAttempts
	}
	if o.Timeout == 0 {
		o.Timeout = cfg.Timeout
	}
	sub := kvledger.Submission{
		Key: o.Key, Seq: o.Seq, Task: payload, Needs: o.Needs,
		Kind: kind, RunAt: o.RunAt, Delay: o.Delay, MaxAttempts: o.MaxAttempts, Timeout: o.Timeout,
		Priority: o.Priority, Group: o.Group, Now: cfg.Clock.Now(),
	}
	return sub, validate(sub)
}

// validate is the one check of a submission's options, each on its own
// and together (RunAt and Delay), before anything is written: the
// ledger's rules (kvledger.Submission.Validate), reported as
// ErrInvalidArgs.
func validate(sub kvledger.Submission) error {
	if err := sub.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgs, err)
	}
	return nil
}
