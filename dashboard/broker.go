package dashboard

import (
	"sync"
)

// push is one server-sent event: its type and JSON data.
type push struct {
	Type string
	Data []byte
}

// broker fans pushes out to the open /sse streams. A stream that cannot
// keep up (its buffer is full) is dropped rather than slowing everyone
// else; the browser's EventSource reconnects and reloads.
type broker struct {
	mu      sync.Mutex
	subs    map[chan push]struct{}
	closed  bool
	watched chan struct{} // closed at the first subscriber
	once    sync.Once
}

const subBuffer = 512

func newBroker() *broker {
	return &broker{subs: make(map[chan push]struct{}), watched: make(chan struct{})}
}

// subscribe returns a channel of pushes, closed when the subscriber is
// dropped or the broker closes, and a function that unsubscribes.
func (b *broker) subscribe() (<-chan push, func()) {
	ch := make(chan push, subBuffer)
	b.mu.Lock()
	if b.closed {
		close(ch)
	} else {
		b.subs[ch] = struct{}{}
	}
	b.mu.Unlock()
	b.once.Do(func() { close(b.watched) })
	return ch, func() { b.drop(ch) }
}

func (b *broker) drop(ch chan push) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[ch]; ok {
		delete(b.subs, ch)
		close(ch)
	}
}

func (b *broker) publish(p push) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- p:
		default:
			delete(b.subs, ch)
			close(ch)
		}
	}
}

// close ends every stream.
func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for ch := range b.subs {
		delete(b.subs, ch)
		close(ch)
	}
}
