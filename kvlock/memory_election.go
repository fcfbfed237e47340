package kvlock

import (
	"context"
	"fmt"
	"sync"
)

// memElection is the shared state of one election of a Memory (under
// m.mu): who leads, what it published, and who is watching.
type memElection struct {
	leader    *memLock
	info      LeaderInfo
	observers map[*memObserver]struct{}
}

func (st *memElection) event() LeaderEvent {
	if st.leader == nil {
		return LeaderEvent{Vacant: true}
	}
	return LeaderEvent{Info: st.info}
}

// notifyLocked queues the election's state for every observer whose last
// queued state differs.
func (st *memElection) notifyLocked() {
	ev := st.event()
	for o := range st.observers {
		o.offer(ev)
	}
}

type memObserver struct {
	queue []LeaderEvent // under m.mu
	last  LeaderEvent
	wake  chan struct{}
}

func (o *memObserver) offer(ev LeaderEvent) {
	if o.last == ev { // the last state queued, delivered or not
		return
	}
	o.queue = append(o.queue, ev)
	o.last = ev
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (m *Memory) electionLocked(slot string) *memElection {
	st := m.elects[slot]
	if st == nil {
		st = &memElection{observers: make(map[*memObserver]struct{})}
		m.elects[slot] = st
	}
	return st
}

// Election implements Service.
func (m *Memory) Election(name string) (Candidate, error) {
	slot, err := electionSlot(name)
	if err != nil {
		return nil, err
	}
	return &memCandidate{m: m, name: name, slot: slot}, nil
}

// memCandidate is a candidate of a Memory election; it implements
// Candidate with the semantics of *Election.
type memCandidate struct {
	m          *Memory
	name, slot string

	mu          sync.Mutex
	campaigning bool
	lock        *memLock
}

func (c *memCandidate) Name() string { return c.name }

func (c *memCandidate) Campaign(ctx context.Context, value string) error {
	c.mu.Lock()
	if c.campaigning || c.lock != nil && c.lock.Err() == nil {
		c.mu.Unlock()
		return ErrCampaigning
	}
	c.campaigning = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.campaigning = false
		c.mu.Unlock()
	}()
	k, err := c.m.acquire(ctx, c.slot, c.name, true)
	if err != nil {
		return err
	}
	m := c.m
	m.mu.Lock()
	if err := m.checkLocked(k); err != nil {
		m.unlock()
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	m.autoRenewLocked(k)
	st := m.electionLocked(c.slot)
	st.leader = k
	st.info = LeaderInfo{Value: value, Term: k.token, Holder: m.cfg.Holder}
	k.onEnd = func() {
		if st.leader == k {
			st.leader, st.info = nil, LeaderInfo{}
			st.notifyLocked()
		}
	}
	st.notifyLocked()
	m.unlock()
	c.mu.Lock()
	c.lock = k
	c.mu.Unlock()
	return nil
}

func (c *memCandidate) leading() (*memLock, error) {
	c.mu.Lock()
	k := c.lock
	c.mu.Unlock()
	if k == nil {
		return nil, ErrNotLeader
	}
	if err := k.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	return k, nil
}

func (c *memCandidate) Proclaim(_ context.Context, value string) error {
	k, err := c.leading()
	if err != nil {
		return err
	}
	m := c.m
	m.mu.Lock()
	defer m.unlock()
	st := m.electionLocked(c.slot)
	if st.leader != k || k.cause != nil {
		return ErrNotLeader
	}
	st.info.Value = value
	st.notifyLocked()
	return nil
}

func (c *memCandidate) Resign(ctx context.Context) error {
	c.mu.Lock()
	k := c.lock
	c.lock = nil
	c.mu.Unlock()
	if k == nil {
		return ErrNotLeader
	}
	return k.Release(ctx)
}

func (c *memCandidate) Leader(context.Context) (LeaderInfo, error) {
	m := c.m
	m.mu.Lock()
	defer m.unlock()
	st := m.elects[c.slot]
	if st != nil && st.leader != nil {
		m.checkLocked(st.leader)
	}
	if st == nil || st.leader == nil {
		return LeaderInfo{}, fmt.Errorf("%w: election %q is vacant", ErrNoLeader, c.name)
	}
	return st.info, nil
}

func (c *memCandidate) Term() uint64 {
	k, err := c.leading()
	if err != nil {
		return 0
	}
	return k.token
}

func (c *memCandidate) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lock == nil {
		return closedChan
	}
	return c.lock.Done()
}

func (c *memCandidate) Context() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lock == nil {
		return nil
	}
	return c.lock.Context()
}

// Observe implements Candidate: the current state first, then every
// change, in order; a slow reader delays later events, never drops them.
func (c *memCandidate) Observe(ctx context.Context) <-chan LeaderEvent {
	m := c.m
	ch := make(chan LeaderEvent)
	o := &memObserver{wake: make(chan struct{}, 1)}
	m.mu.Lock()
	if m.closed {
		m.unlock()
		close(ch)
		return ch
	}
	st := m.electionLocked(c.slot)
	st.observers[o] = struct{}{}
	ev := st.event()
	o.queue, o.last = []LeaderEvent{ev}, ev
	m.unlock()
	leave := func() {
		m.mu.Lock()
		delete(st.observers, o)
		m.unlock()
	}
	if !m.goOwned(func() {
		defer close(ch)
		defer leave()
		m.feed(ctx, o, ch)
	}) {
		leave()
		close(ch)
	}
	return ch
}

func (m *Memory) feed(ctx context.Context, o *memObserver, ch chan<- LeaderEvent) {
	for {
		m.mu.Lock()
		var ev LeaderEvent
		have := len(o.queue) > 0
		if have {
			ev = o.queue[0]
			o.queue = o.queue[1:]
		}
		m.unlock()
		if !have {
			select {
			case <-o.wake:
				continue
			case <-ctx.Done():
				return
			case <-m.ctx.Done():
				return
			}
		}
		select {
		case ch <- ev:
		case <-ctx.Done():
			return
		case <-m.ctx.Done():
			return
		}
	}
}
