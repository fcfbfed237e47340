package kvlease_test

import (
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

func BenchmarkTmpLeaseCycle(b *testing.B) {
	n := natstest.WithServer(b)
	ctx := natstest.Context(b, time.Minute)
	m, _ := kvlease.NewManager(ctx, n.JS, kvlease.Config{})
	defer m.Close(ctx)
	l, _ := jobs.Bind(m)
	for b.Loop() {
		g, ok, err := l.TryAcquire(ctx, "k", 5*time.Second)
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		if err := g.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTmpRawCycle(b *testing.B) {
	n := natstest.WithServer(b)
	ctx := natstest.Context(b, time.Minute)
	bk, _ := kvx.Open(ctx, n.JS, kvx.Config{Bucket: "raw", LimitMarkerTTL: time.Minute})
	var hint uint64
	for b.Loop() {
		r, _, err := bk.Acquire(ctx, "k", []byte(`{"holder":"x"}`), 5*time.Second, hint)
		if err != nil {
			b.Fatal(err)
		}
		hint, err = bk.Delete(ctx, "k", r)
		if err != nil {
			b.Fatal(err)
		}
	}
}
