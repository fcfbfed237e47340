package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/tasks"
)

// PingArgs is a task that fails its first attempt.
type PingArgs struct{}

func (PingArgs) Kind() string { return "ping" }

// A task's attempts, each with the error it ended with, and the workers
// alive while it runs.
func ExampleClient_Attempts() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Options{InProcessOnly: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = srv.Shutdown(context.Background()) }()
	js, err := srv.JetStream()
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := tasks.NewClient(ctx, js, tasks.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = c.Close(context.Background()) }()
	err = tasks.AddWorker(c, func(ctx context.Context, t *tasks.Task[PingArgs]) error {
		ws, err := c.Workers(ctx)
		if err != nil {
			return err
		}
		for _, w := range ws {
			fmt.Println("a worker alive, running", len(w.Tasks), "task; the server expires its lease at a known time:", !w.Holder.Expires.IsZero())
		}
		return errors.New("no answer")
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	sub, err := c.Submit(ctx, PingArgs{}, &tasks.SubmitOpts{Key: "ping-1", MaxAttempts: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.Wait(ctx, sub.Key); err != nil {
		fmt.Println(err)
		return
	}
	as, err := c.Attempts(ctx, sub.Key)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range as {
		fmt.Printf("attempt %d of %d: %s: %s\n", a.N, a.Max, a.Outcome, a.Error)
	}
	// Output:
	// a worker alive, running 1 task; the server expires its lease at a known time: true
	// attempt 1 of 1: failed: no answer
}
