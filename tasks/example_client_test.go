package tasks_test

import (
	"context"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/tasks"
)

// SortArgs is a task's arguments; its Kind routes it to its worker.
type SortArgs struct {
	Values []int `json:"values"`
}

func (SortArgs) Kind() string { return "sort" }

// A typed task, a worker, a submit and a wait.
func Example() {
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
	err = tasks.AddWorker(c, func(ctx context.Context, t *tasks.Task[SortArgs]) error {
		fmt.Println("sorting", t.Args.Values, "attempt", t.Attempt)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}

	sub, err := c.Submit(ctx, SortArgs{Values: []int{3, 1, 2}}, &tasks.SubmitOpts{Key: "sort-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	final, err := c.Wait(ctx, sub.Key)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sub.Key, final[sub.Key].Status)
	// Output:
	// sorting [3 1 2] attempt 1
	// sort-1 completed
}
