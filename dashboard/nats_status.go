package dashboard

import (
	"encoding/json"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// connState follows the NATS connection behind Config.JS, so that pages
// say when what they show is the last known state, the live badge does
// not say "live" while nothing can arrive, and a request that needs a
// read answers at once instead of after OpTimeout.
type connState struct {
	nc *nats.Conn // nil: unknown (a JetStream without a connection)
	up atomic.Bool
}

// up reports whether NATS is reachable now.
func (h *Handler) natsUp() bool { return h.conn.nc == nil || h.conn.up.Load() }

// startConnWatch follows the connection's status until Close, pushing a
// "nats" event on each change.
func (h *Handler) startConnWatch() {
	nc := h.cfg.JS.Conn()
	h.conn.nc = nc
	if nc == nil {
		return
	}
	ch := nc.StatusChanged(nats.CONNECTED, nats.RECONNECTING, nats.DISCONNECTED, nats.CLOSED)
	h.conn.up.Store(nc.IsConnected())
	h.wg.Go(func() {
		defer nc.RemoveStatusListener(ch)
		for {
			select {
			case <-h.life.Done():
				return
			case <-ch:
			}
			// The channel drops changes when full: the status itself is
			// what counts.
			up := nc.IsConnected()
			if h.conn.up.Swap(up) != up {
				if !up {
					h.cfg.Logger.Warn("dashboard: NATS unreachable; pages show the last known state")
				}
				h.broker.publish(push{Type: "nats", Data: natsJSON(up)})
			}
		}
	})
}

func natsJSON(up bool) []byte {
	b, _ := json.Marshal(map[string]bool{"up": up})
	return b
}
