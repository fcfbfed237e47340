package kvlease

import "sync"

// renewWorkers is the number of renewals one manager runs at once. Fixed,
// so that a manager holding 10,000 leases costs the same goroutines as one
// holding ten: renewals are short CAS publishes, and a handful in flight
// keep up with thousands per second (BENCHMARKS.md), while one goroutine
// per due renewal let bursts spawn hundreds.
const renewWorkers = 8

// renewPool runs due renewals on a fixed set of goroutines, fed by the
// scheduler. Its queue is unbounded so the scheduler never blocks on it;
// each guard is queued at most once at a time (Guard.renewing).
type renewPool struct {
	mu     sync.Mutex
	q      []*Guard
	notify chan struct{} // buffered: work was queued
	stop   chan struct{}
	wg     sync.WaitGroup
}

func newRenewPool() *renewPool {
	p := &renewPool{notify: make(chan struct{}, renewWorkers), stop: make(chan struct{})}
	for range renewWorkers {
		p.wg.Go(p.work)
	}
	return p
}

func (p *renewPool) push(g *Guard) {
	p.mu.Lock()
	p.q = append(p.q, g)
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default: // every worker already has a wake-up pending
	}
}

func (p *renewPool) pop() *Guard {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.q) == 0 {
		return nil
	}
	g := p.q[0]
	p.q[0] = nil
	p.q = p.q[1:]
	return g
}

func (p *renewPool) work() {
	for {
		select {
		case <-p.stop:
			return
		case <-p.notify:
		}
		for g := p.pop(); g != nil; g = p.pop() {
			g.autoRenew()
			select {
			case <-p.stop:
				return
			default:
			}
		}
	}
}

// close stops the workers after their current renewal; queued renewals
// are dropped (Close is releasing those guards anyway).
func (p *renewPool) close() {
	close(p.stop)
	p.wg.Wait()
}
