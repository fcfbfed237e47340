package promcollector_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
	"github.com/natscoord/natscoord/opstats"
	"github.com/natscoord/natscoord/opstats/promcollector"
)

// A worker's series, the ones `natscoord work --metrics-listen` serves,
// registered in a service's own registry.
func ExampleNew() {
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
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: "natscoord_ledger"})
	if err != nil {
		fmt.Println(err)
		return
	}
	led, err := kvledger.New(store)
	if err != nil {
		fmt.Println(err)
		return
	}

	rec := opstats.New()
	w, err := worker.New(ctx, js, led, worker.Config{Observer: worker.RecorderObserver(rec)})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(promcollector.New(rec.Families,
		func() []opstats.Family { return w.Stats().Families() }))

	_ = w.Handle("resize", func(context.Context, *worker.Task) error { return nil })
	if err := w.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	_, _ = led.Submit(ctx, "example", kvledger.Submission{Key: "img-42", Kind: "resize"})
	_, _ = led.WaitFinal(ctx, "img-42")
	_ = w.Close(ctx)

	fams, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range fams {
		if f.GetName() != "natscoord_worker_attempts_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if v := m.GetCounter().GetValue(); v > 0 {
				fmt.Println(f.GetName(), m.GetLabel()[0].GetValue(), v)
			}
		}
	}
	// Output: natscoord_worker_attempts_total completed 1
}
