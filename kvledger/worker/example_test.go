package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A two-step pipeline: "fetch" leaves a result that "shout" reads; a
// third task fails permanently and blocks the one that needs it.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Options{InProcessOnly: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = srv.Shutdown(ctx) }()
	js, err := srv.JetStream()
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: "example_jobs"})
	if err != nil {
		fmt.Println(err)
		return
	}
	led, _ := kvledger.New(store)

	w, err := worker.New(ctx, js, led, worker.Config{Owner: "worker-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = worker.HandleJSON(w, "fetch", func(ctx context.Context, t *worker.Task, url string) error {
		return t.SetResult("hello from " + url)
	})
	_ = w.Handle("shout", func(ctx context.Context, t *worker.Task) error {
		var got string
		if _, err := t.NeedResult(ctx, "fetch", &got); err != nil {
			return err
		}
		return t.SetResult(strings.ToUpper(got))
	})
	_ = w.Handle("broken", func(ctx context.Context, t *worker.Task) error {
		return worker.Permanent(errors.New("no such host"))
	})
	if err := w.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = w.Close(ctx) }()

	for _, s := range []kvledger.Submission{
		{Key: "shout", Kind: "shout", Needs: []kvledger.IdempotencyKey{"fetch"}},
		{Key: "fetch", Kind: "fetch", Task: "example.com"},
		{Key: "broken", Kind: "broken"},
		{Key: "after-broken", Kind: "shout", Needs: []kvledger.IdempotencyKey{"broken"}},
	} {
		if _, err := led.Submit(ctx, "example", s); err != nil {
			fmt.Println(err)
			return
		}
	}
	final, err := led.WaitFinal(ctx, "fetch", "shout", "broken", "after-broken")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range []kvledger.IdempotencyKey{"fetch", "shout", "broken", "after-broken"} {
		r := final[k]
		fmt.Printf("%-12s %-9s attempts=%d result=%s error=%q\n", k, r.Status, r.Attempts, r.Result, r.LastError)
	}
	// Output:
	// fetch        completed attempts=1 result="hello from example.com" error=""
	// shout        completed attempts=1 result="HELLO FROM EXAMPLE.COM" error=""
	// broken       failed    attempts=1 result= error="permanent: no such host"
	// after-broken blocked   attempts=0 result= error=""
}
