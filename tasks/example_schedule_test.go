package tasks_test

import (
	"context"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/tasks"
)

// ReportArgs is the argument of a periodic task.
type ReportArgs struct {
	Team string `json:"team"`
}

func (ReportArgs) Kind() string { return "report" }

// A schedule stored in the ledger: every worker that handles its kind
// admits one task per period, once per period however many run.
func ExampleClient_Schedule() {
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
	ran := make(chan string, 1)
	err = tasks.AddWorker(c, func(ctx context.Context, t *tasks.Task[ReportArgs]) error {
		select {
		case ran <- t.Args.Team:
		default:
		}
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

	// A spec that never runs is refused before anything is stored.
	_, err = c.Schedule(ctx, "never", "0 0 31 2 *", ReportArgs{Team: "ops"}, nil)
	fmt.Println(err)

	if _, err := c.Schedule(ctx, "ops-report", "@every 1s", ReportArgs{Team: "ops"}, nil); err != nil {
		fmt.Println(err)
		return
	}
	scheds, err := c.Schedules(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range scheds {
		fmt.Println(s.Name, s.Spec, s.Task.Kind, string(s.Task.Task))
	}
	fmt.Println("report for", <-ran)
	if err := c.Unschedule(ctx, "ops-report"); err != nil {
		fmt.Println(err)
		return
	}
	scheds, err = c.Schedules(ctx)
	fmt.Println(len(scheds), err)
	// Output:
	// kvledger: invalid schedule: schedule "0 0 31 2 *" never runs: no date matches it
	// ops-report @every 1s report {"team":"ops"}
	// report for ops
	// 0 <nil>
}
