package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/retry"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger/worker"
	"github.com/natscoord/natscoord/kvlock"
)

// leaseKind is what a lease key is used for, told by its shape.
type leaseKind string

const (
	kindLease     leaseKind = "lease"
	kindLock      leaseKind = "lock"
	kindElection  leaseKind = "election"
	kindSemaphore leaseKind = "semaphore"
	kindWaiter    leaseKind = "waiter"
)

// leaseRow is one live lease as the page shows it: public holder facts
// only (the owner hash is left out; it is not needed to see who holds
// what).
type leaseRow struct {
	Bucket     string
	Key        string // the bucket key, what force release takes
	Kind       leaseKind
	Name       string // family, or kvlock Config.Name
	Resource   string // the lock key, election or resource token
	Slot       int    // semaphore slot
	Holder     string
	Host       string
	PID        int
	TTL        time.Duration
	Acquired   time.Time
	Revision   uint64 // the key's current revision (changes on renewal)
	Fence      uint64 // the revision it was acquired at, when the watch saw it
	FenceKnown bool
	Expires    time.Time // server timestamp of the last write + TTL (rounded up to whole seconds)
	owner      string
	holder     kvlease.Holder // the value as kvlease.HolderOf read it
}

// leaseView is the live content of one lease bucket, kept by one watch.
type leaseView struct {
	bucket string
	// absent: the bucket did not exist when the dashboard started (and
	// Create was not set); its watch starts when the server announces
	// the bucket's creation.
	absent atomic.Bool
	mu     sync.RWMutex
	rows   map[string]leaseRow
	ready  chan struct{} // closed once the initial values are in
	// isWorker tells the keys of the ledger's workers' leases (claimants'
	// and presence leases: worker.IsWorkerLease); claimants holds the keys
	// of rows it accepts, kept with rows on every change, so the workers
	// page reads those rows without copying every lease of the bucket
	// (locks, elections, semaphores) on each render.
	isWorker  func(key string) bool
	claimants map[string]struct{}
}

// newLeaseView is the empty view of bucket; isWorker tells the keys of
// the ledger's workers' leases (the workers page's).
func newLeaseView(bucket string, isWorker func(key string) bool) *leaseView {
	return &leaseView{bucket: bucket, rows: make(map[string]leaseRow), ready: make(chan struct{}),
		isWorker: isWorker, claimants: make(map[string]struct{})}
}

// set stores r under its key; v.mu is held.
func (v *leaseView) set(r leaseRow) {
	v.rows[r.Key] = r
	if v.isWorker(r.Key) {
		v.claimants[r.Key] = struct{}{}
	}
}

// remove drops the row of key; v.mu is held.
func (v *leaseView) remove(key string) {
	delete(v.rows, key)
	delete(v.claimants, key)
}

// classify reads a lease entry with kvlease's own decoder and kvlock's
// key parser; data keys and values that are not a lease report false.
func classify(bucket string, e kvx.Entry) (leaseRow, bool) {
	h, err := kvlease.HolderOf(e)
	if err != nil {
		return leaseRow{}, false
	}
	r := leaseRow{Bucket: bucket, Key: e.Key, Holder: h.ID, Host: h.Host, PID: h.PID, TTL: h.TTL(),
		Acquired: h.Acquired, Revision: e.Revision, Expires: h.Expires, owner: h.OwnerHash, holder: h}
	if p, ok := kvlock.ParseKey(e.Key); ok {
		r.Name, r.Resource = p.Name, p.Resource
		switch p.Kind {
		case kvlock.KeyLock:
			r.Kind = kindLock
		case kvlock.KeyElection:
			r.Kind = kindElection
		case kvlock.KeyLockWaiter, kvlock.KeyElectionWaiter:
			r.Kind, r.Resource = kindWaiter, fmt.Sprintf("%s #%d", p.Resource, p.Ticket)
		default:
			return leaseRow{}, false // data, not a lease
		}
		return r, true
	}
	if i := strings.LastIndexByte(e.Key, '.'); i > 0 && strings.Count(e.Key, ".") >= 2 {
		if n, err := strconv.Atoi(e.Key[i+1:]); err == nil && n >= 0 {
			fam, res, _ := strings.Cut(e.Key[:i], ".")
			r.Kind, r.Name, r.Resource, r.Slot = kindSemaphore, fam, decoded(res), n
			return r, true
		}
	}
	fam, res, _ := strings.Cut(e.Key, ".")
	r.Kind, r.Name, r.Resource = kindLease, fam, decoded(res)
	return r, true
}

// decoded reverses kvx.EncodeToken where it applies.
func decoded(tok string) string {
	if s, err := kvx.DecodeToken(tok); err == nil {
		return s
	}
	return tok
}

// leaseFeedLimit is how many changes a lease bucket's feed queues for
// the dashboard before it is caught up from kvlease's view instead.
const leaseFeedLimit = 1 << 12

// openLeases opens every lease bucket through a kvlease Manager, the
// bucket's owner (creating the bucket with Create). A bucket that does
// not exist is shown as absent: a lease bucket appears when its first
// user starts, which may be after the dashboard.
func (h *Handler) openLeases(ctx context.Context) error {
	for _, b := range h.cfg.LeaseBuckets {
		v := newLeaseView(b, func(key string) bool { return worker.IsWorkerLease(h.cfg.Ledger, key) })
		_, err := h.cfg.JS.KeyValue(ctx, b)
		if errors.Is(err, jetstream.ErrBucketNotFound) && h.cfg.Create {
			err = nil // kvlease creates its buckets the way it needs them
		}
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			v.absent.Store(true)
			err = nil
		} else if err == nil {
			_, err = h.manager(ctx, b)
		}
		if err != nil {
			return fmt.Errorf("dashboard: lease bucket %q: %w", b, err)
		}
		h.leases = append(h.leases, v)
	}
	return nil
}

// leaseFeed starts the feed of every key of bucket from its manager's
// one watch (kvlease.Manager.ViewAll).
func (h *Handler) leaseFeed(ctx context.Context, bucket string) (*kvlease.Feed, error) {
	m, err := h.manager(ctx, bucket)
	if err != nil {
		return nil, err
	}
	return m.ViewAll().Feed(h.life, nil, leaseFeedLimit)
}

// startLeaseWatches starts one feed per bucket and waits until each has
// delivered its initial values; an absent bucket waits for its creation.
func (h *Handler) startLeaseWatches(ctx context.Context) error {
	for _, v := range h.leases {
		if v.absent.Load() {
			h.wg.Go(func() { h.awaitLeaseBucket(v) })
			continue
		}
		// The feed lives until Close: ctx bounds New's set-up only.
		f, err := h.leaseFeed(ctx, v.bucket)
		if err != nil {
			return fmt.Errorf("dashboard: watch lease bucket %q: %w", v.bucket, err)
		}
		h.wg.Go(func() { h.runLeaseFeed(v, f) })
	}
	for _, v := range h.leases {
		if v.absent.Load() {
			continue
		}
		select {
		case <-v.ready:
		case <-ctx.Done():
			return fmt.Errorf("dashboard: watch lease bucket %q: %w", v.bucket, ctx.Err())
		}
	}
	return nil
}

// bucketRetry is the pause between looks at an absent bucket's stream
// after a failed look (not a "not found").
const bucketRetry = 5 * time.Second

// announcedRetry is the pause between looks at a bucket the server has
// announced but a bind does not find yet.
const announcedRetry = 25 * time.Millisecond

// awaitLeaseBucket watches v's bucket once the server announces that it
// was created (a JetStream stream-created advisory: no polling), until
// Close. Its looks run on the one retry primitive: a look that failed
// (not a "not found") is made again bucketRetry apart until Close; after
// an announcement, a "not found" (the server announces a stream a moment
// before a bind finds it, seen under load) is looked at again
// announcedRetry apart for one operation timeout.
func (h *Handler) awaitLeaseBucket(v *leaseView) {
	nc := h.cfg.JS.Conn()
	created := make(chan *nats.Msg, 1)
	sub, err := nc.ChanSubscribe("$JS.EVENT.ADVISORY.STREAM.CREATED.KV_"+v.bucket, created)
	if err != nil {
		h.cfg.Logger.Warn("dashboard: cannot wait for lease bucket", "bucket", v.bucket, "err", err)
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	// The look below must follow the server's knowing of the subscription,
	// not just the client's: a creation between an unflushed subscribe and
	// the look would be announced to no one (and the look would miss it).
	if err := nc.FlushTimeout(h.cfg.OpTimeout); err != nil {
		h.cfg.Logger.Warn("dashboard: cannot wait for lease bucket", "bucket", v.bucket, "err", err)
	}
	notFound := func(err error) bool { return errors.Is(err, jetstream.ErrBucketNotFound) }
	failed := retry.Policy{Pause: bucketRetry, PerTry: h.cfg.OpTimeout, Transient: func(err error) bool { return !notFound(err) }}
	announced := retry.Policy{Tries: int(h.cfg.OpTimeout/announcedRetry) + 1, Pause: announcedRetry, PerTry: h.cfg.OpTimeout, Transient: notFound}
	var f *kvlease.Feed
	look := func(ctx context.Context) error {
		_, err := h.cfg.JS.KeyValue(ctx, v.bucket)
		if err == nil {
			f, err = h.leaseFeed(ctx, v.bucket)
		}
		if err != nil && !notFound(err) && h.life.Err() == nil {
			h.cfg.Logger.Warn("dashboard: lease bucket", "bucket", v.bucket, "err", err)
		}
		return err
	}
	// Look after subscribing, so a creation in between is not missed.
	err = failed.Do(h.life, look)
	for err != nil && h.life.Err() == nil {
		if notFound(err) {
			select {
			case <-h.life.Done():
				return
			case <-created:
			}
			err = announced.Do(h.life, look)
			continue
		}
		err = failed.Do(h.life, look)
	}
	if err != nil {
		return // Close
	}
	v.absent.Store(false)
	h.runLeaseFeed(v, f)
}

// runLeaseFeed applies v's feed until Close; a feed that ended by itself
// (its connection or consumer went away) is started again.
func (h *Handler) runLeaseFeed(v *leaseView, f *kvlease.Feed) {
	st := leaseFeedState{initial: true}
	defer func() {
		if st.initial {
			close(v.ready)
		}
	}()
	for {
		err := f.Each(h.life.Done(), func(it kvlease.FeedItem) bool {
			h.applyLeaseItem(v, it, &st)
			return true
		})
		f.Close()
		if err == nil {
			return // Close
		}
		h.cfg.Logger.Warn("dashboard: lease watch ended; watching again", "bucket", v.bucket, "err", err)
		// Started again on the one retry primitive, as the record watch
		// is (rewatch), for as long as the dashboard lives.
		f = nil
		l := rewatch.Start(h.life)
		l.Next() // the first try is the feed that ended: pause before the next
		for f == nil && l.Next() {
			ctx, cancel := context.WithTimeout(h.life, h.cfg.OpTimeout)
			f, err = h.leaseFeed(ctx, v.bucket)
			cancel()
			if err != nil {
				f = nil
				h.cfg.Logger.Warn("dashboard: watch lease bucket", "bucket", v.bucket, "err", err)
			}
		}
		if f == nil {
			return // Close
		}
		if !st.initial {
			// The new feed starts from the current values, with no
			// marker for a lease that ended while no feed ran: the rows
			// are rebuilt from it (restarted), not replayed as changes.
			st.restarted = make(map[string]bool)
		}
	}
}

// leaseFeedState is where a lease view's feed stands: before its first
// Synced (initial), or re-reading the current values after a restart
// (restarted: the keys seen so far).
type leaseFeedState struct {
	initial   bool
	restarted map[string]bool
}

// applyLeaseItem applies one item of a lease bucket's feed.
func (h *Handler) applyLeaseItem(v *leaseView, it kvlease.FeedItem, st *leaseFeedState) {
	switch {
	case it.Resync, it.Resumed:
		return // a catch-up: its changes follow as any others
	case it.Synced:
		if st.initial || st.restarted != nil {
			if st.initial {
				close(v.ready)
			} else {
				v.keepOnly(st.restarted)
			}
			st.initial, st.restarted = false, nil
			// Pages reload their lists: open before a bucket appeared,
			// or after a restart rebuilt them.
			b, _ := json.Marshal(map[string]string{"bucket": v.bucket, "what": "watching"})
			h.broker.publish(push{Type: "coord", Data: b})
		}
		return
	}
	if st.restarted != nil {
		st.restarted[it.Key] = true
	}
	quiet := st.initial || st.restarted != nil // current values, not changes
	ch, ok := v.apply(it.Entry, !quiet)
	if !ok || quiet {
		return
	}
	switch ch.What {
	case "renewed":
		h.metrics.leaseRenew.Inc()
	case "released", "expired":
		h.metrics.leaseEnds.Inc(string(ch.Kind), ch.What)
	}
	if ch.What != "renewed" {
		h.leaseLog.add(ch)
	}
	b, _ := json.Marshal(map[string]string{"bucket": v.bucket, "ref": keyRef(ch.Key), "what": ch.What})
	h.broker.publish(push{Type: "coord", Data: b})
}

// leaseChange is one acquisition or end seen by a watch.
type leaseChange struct {
	Time   time.Time
	Bucket string
	Key    string
	Kind   leaseKind
	What   string // acquired, renewed, released, expired
	Holder string
	Fence  uint64
}

// apply records one entry and says what changed.
func (v *leaseView) apply(e kvx.Entry, live bool) (leaseChange, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	old, had := v.rows[e.Key]
	if !e.Live() {
		if !had {
			return leaseChange{}, false
		}
		v.remove(e.Key)
		what := "released"
		if e.Op == kvx.OpPurge {
			what = "expired"
		}
		return leaseChange{Time: e.Created, Bucket: v.bucket, Key: e.Key, Kind: old.Kind, What: what, Holder: old.Holder, Fence: old.Fence}, true
	}
	r, ok := classify(v.bucket, e)
	if !ok {
		return leaseChange{}, false
	}
	what := "acquired"
	if had && old.owner == r.owner {
		r.Fence, r.FenceKnown, what = old.Fence, old.FenceKnown, "renewed"
	} else {
		// A new holder (seen from a marker, from nothing, or over another
		// owner's row): this write is the acquisition when the watch is
		// live; a current value (a feed started or restarted) may have
		// been renewed already, so its fence is only bounded by its
		// revision.
		r.Fence, r.FenceKnown = e.Revision, live
	}
	v.set(r)
	return leaseChange{Time: e.Created, Bucket: v.bucket, Key: e.Key, Kind: r.Kind, What: what, Holder: r.Holder, Fence: r.Fence}, true
}

// keepOnly drops the rows whose keys are not in keys (a restarted feed's
// current values: the others ended while no feed ran).
func (v *leaseView) keepOnly(keys map[string]bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for k := range v.rows {
		if !keys[k] {
			v.remove(k)
		}
	}
}

// list returns the rows of kind (all kinds when empty), by key.
func (v *leaseView) list(kind leaseKind) []leaseRow {
	v.mu.RLock()
	out := make([]leaseRow, 0, len(v.rows))
	for _, r := range v.rows {
		if kind == "" || r.Kind == kind {
			out = append(out, r)
		}
	}
	v.mu.RUnlock()
	slices.SortFunc(out, func(a, b leaseRow) int { return strings.Compare(a.Key, b.Key) })
	return out
}

func (v *leaseView) kindCounts() map[leaseKind]int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := map[leaseKind]int{kindLease: 0, kindLock: 0, kindElection: 0, kindSemaphore: 0, kindWaiter: 0}
	for _, r := range v.rows {
		out[r.Kind]++
	}
	return out
}

func (v *leaseView) get(key string) (leaseRow, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	r, ok := v.rows[key]
	return r, ok
}
