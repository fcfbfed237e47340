package taskstest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/natscoord/natscoord/tasks"
	"github.com/natscoord/natscoord/tasks/taskstest"
)

type Resize struct {
	Width int `json:"width"`
}

func (Resize) Kind() string { return "resize" }

// resize is the handler under test: it refuses a zero width for good.
func resize(ctx context.Context, t *tasks.Task[Resize]) error {
	if t.Args.Width == 0 {
		return tasks.Permanent(errors.New("width is zero"))
	}
	return nil
}

// In a test, pass the test's *testing.T; here a stand-in prints failures.
func Example() {
	t := &printT{}
	defer t.cleanup()
	c := taskstest.Start(t, tasks.Config{}, taskstest.Worker(resize))

	ctx := context.Background()
	ok, _ := c.Submit(ctx, Resize{Width: 640}, nil)
	bad, _ := c.Submit(ctx, Resize{}, nil)
	fmt.Println(taskstest.RequireCompleted(t, c, ok.Key).Status)
	fmt.Println(taskstest.RequireFailed(t, c, bad.Key, "width is zero").Status)
	// Output:
	// completed
	// failed
}

// printT is a taskstest.TB that prints failures and runs cleanups on
// demand, for this example only.
type printT struct{ cleanups []func() }

func (t *printT) Helper()                   {}
func (t *printT) Cleanup(f func())          { t.cleanups = append(t.cleanups, f) }
func (t *printT) Errorf(f string, a ...any) { fmt.Printf(f+"\n", a...) }
func (t *printT) Fatalf(f string, a ...any) {
	fmt.Printf(f+"\n", a...)
	runtime.Goexit()
}
func (t *printT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
