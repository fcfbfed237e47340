// Package taskstest runs a user's task handlers in tests against a real
// NATS server: Start starts an in-process embedded server and a
// tasks.Client with the given workers, and the Require helpers wait,
// bounded, for a task's outcome.
//
//	c := taskstest.Start(t, tasks.Config{}, taskstest.Worker(sendEmail))
//	sub, _ := c.Submit(ctx, SendEmail{To: "a@example.com"}, nil)
//	taskstest.RequireCompleted(t, c, sub.Key)
//
// It needs nothing but the TB interface (which *testing.T and *testing.B
// satisfy), so it adds no test dependency to a module that imports it.
package taskstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/tasks"
)

// Timeout bounds every wait of this package: starting the server and the
// client, and each Require helper.
const Timeout = 30 * time.Second

// TB is the part of testing.TB the kit uses.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Worker adapts a work function for Start.
func Worker[T tasks.Args](fn tasks.WorkFunc[T]) func(*tasks.Client) error {
	return func(c *tasks.Client) error { return tasks.AddWorker(c, fn) }
}

// Start starts an in-process server and a client on it configured by cfg,
// adds workers and starts them. Both are closed when the test ends (the
// client drains first).
func Start(t TB, cfg tasks.Config, workers ...func(*tasks.Client) error) *tasks.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Options{InProcessOnly: true})
	if err != nil {
		t.Fatalf("taskstest: embedded server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	js, err := srv.JetStream()
	if err != nil {
		t.Fatalf("taskstest: %v", err)
	}
	c, err := tasks.NewClient(ctx, js, cfg)
	if err != nil {
		t.Fatalf("taskstest: %v", err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := c.Close(cctx); err != nil {
			t.Errorf("taskstest: closing the client: %v", err)
		}
	})
	for _, add := range workers {
		if err := add(c); err != nil {
			t.Fatalf("taskstest: adding a worker: %v", err)
		}
	}
	if err := c.Start(ctx); err != nil {
		t.Fatalf("taskstest: %v", err)
	}
	return c
}

// RequireCompleted waits for key to end and fails the test unless it
// completed. It returns the final record.
func RequireCompleted(t TB, c *tasks.Client, key kvledger.IdempotencyKey) kvledger.TaskState {
	t.Helper()
	rec := final(t, c, key)
	if rec.Status != kvledger.StatusCompleted {
		t.Fatalf("taskstest: task %q ended %s, not completed (last error: %q)", key, rec.Phase(time.Now()), rec.LastError)
	}
	return rec
}

// RequireFailed waits for key to end and fails the test unless it failed
// (not cancelled) with a last error that contains errContains.
func RequireFailed(t TB, c *tasks.Client, key kvledger.IdempotencyKey, errContains string) kvledger.TaskState {
	t.Helper()
	rec := final(t, c, key)
	if p := rec.Phase(time.Now()); p != kvledger.PhaseFailed {
		t.Fatalf("taskstest: task %q ended %s, not failed", key, p)
	}
	if !strings.Contains(rec.LastError, errContains) {
		t.Fatalf("taskstest: task %q failed with %q, which does not contain %q", key, rec.LastError, errContains)
	}
	return rec
}

// RequireBlocked waits for key to end and fails the test unless it is
// blocked by the key by.
func RequireBlocked(t TB, c *tasks.Client, key, by kvledger.IdempotencyKey) kvledger.TaskState {
	t.Helper()
	rec := final(t, c, key)
	if rec.Status != kvledger.StatusBlocked || rec.BlockedBy != by {
		t.Fatalf("taskstest: task %q ended %s (blocked by %q), not blocked by %q", key, rec.Phase(time.Now()), rec.BlockedBy, by)
	}
	return rec
}

// final waits, within Timeout, for key to end.
func final(t TB, c *tasks.Client, key kvledger.IdempotencyKey) kvledger.TaskState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	recs, err := c.Wait(ctx, key)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			msg = fmt.Sprintf("it did not end within %v", Timeout)
		}
		t.Fatalf("taskstest: waiting for task %q: %s", key, msg)
	}
	return recs[key]
}
