package kvx

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Consuming runs a handler over a JetStream consumer's messages. The
// handler gets a context that Stop cancels, so a handler blocked on I/O
// ends with the consumption; Stop returns only once the handler has.
// It is the one start/stop mechanism of natscoord's durable consumers
// (the ledger's relay, events' durable subscriber).
type Consuming struct {
	cc     jetstream.ConsumeContext
	cancel context.CancelFunc
	once   sync.Once
	// nats.go closes cc.Closed once its subscription is closed, which
	// can be while a handler still runs: Stop waits for handlers here.
	mu      sync.Mutex
	stopped bool
	running sync.WaitGroup
}

// Consume starts consuming cons: handle is called for every message,
// one at a time, with the consumption's context; onErr (which may be
// nil) receives the consume errors nats.go reports.
func Consume(cons jetstream.Consumer, handle func(context.Context, jetstream.Msg), onErr func(error), opts ...jetstream.PullConsumeOpt) (*Consuming, error) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Consuming{cancel: cancel}
	opts = append(opts, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if onErr != nil {
			onErr(err)
		}
	}))
	cc, err := cons.Consume(func(m jetstream.Msg) {
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			return // not acknowledged: redelivered after its AckWait
		}
		c.running.Add(1)
		c.mu.Unlock()
		defer c.running.Done()
		handle(ctx, m)
	}, opts...)
	if err != nil {
		cancel()
		return nil, err
	}
	c.cc = cc
	return c, nil
}

// Stop stops the delivery of messages, cancels the handler's context
// and waits until the handler has returned. Messages not acknowledged
// go to another consumer of the same durable after their AckWait. It is
// idempotent.
func (c *Consuming) Stop() {
	c.once.Do(func() {
		c.cc.Stop()
		c.cancel()
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
		<-c.cc.Closed()
		c.running.Wait() // a handler that started before Stop, its ack included
	})
}

// Done is closed once the consumption has ended.
func (c *Consuming) Done() <-chan struct{} { return c.cc.Closed() }
