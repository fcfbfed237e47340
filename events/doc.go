// Package events carries the state changes of natscoord's records to
// whoever wants to react to them: dashboards, audit logs, other services,
// operators with `nats sub`. An Event names one write of one record (a
// ledger task today) by the writer's source (the ledger's bucket), the
// record's key and the stream revision of the write, and says what the
// record looked like after it.
//
// # Who writes them
//
// Nobody publishes events. The ledger's writes are its events: each
// record write is stored in the ledger bucket's stream with its
// transition's name in a header, the bucket keeps each key's last 64
// writes, and the server republishes every write live (kvledger/doc.go,
// "Events", says why and what carries what). A writer that dies right
// after its write loses nothing: the write is the event. This package
// holds the consumer side, and reads the stored format only through the
// Source its owner gives (kvledger.EventSource): imports point down, one
// codec per format.
//
// # Use
//
//	src := kvledger.EventSource("tasks")
//	d, _ := events.SubscribeDurable(ctx, js, src, events.DurableConfig{
//		Durable: "audit",
//		Filter:  events.Filter{Names: []events.Name{kvledger.CompletedEvent}, Statuses: []string{"failed"}},
//		OnGap:   func(g events.Gap) { log.Print(g) },
//	}, func(ctx context.Context, e events.Event) error {
//		fmt.Println(e.Name, e.Key, e.Status, e.Fence)
//		return nil
//	}, nil)
//	defer d.Close()
//
// SubscribeLive reads the live feed instead. On the command line:
// `nats sub 'ledger.>'` or `natscoord events tail [--durable NAME] [--key
// K] [--event NAME] [--status S]`.
//
// # What a consumer sees
//
//   - Durable (SubscribeDurable): a durable consumer on the source's
//     stream. Each write once, in stream order, so in per-key write order;
//     it resumes after its last acknowledgement, also in another process,
//     after a server restart or a stream leader change. Filter.Keys become
//     the consumer's filter subjects (the server sends nothing else);
//     Filter.Names and Filter.Statuses are checked on the headers before
//     the body is decoded (a name the writer once wrote is read as its
//     name today, Source.Renamed), and the writes they skip are
//     acknowledged.
//   - Live (SubscribeLive): a core subscription to the server's republish
//     of each write. At most once: the leader publishes it once, nothing
//     retries, a slow subscriber drops messages, nothing is kept while it
//     is not connected. For a feed on a screen; the durable path is the
//     stream.
//
// # Gaps
//
// A subscriber is told of the writes it will never deliver, never left
// silent. Each write carries the key's previous revision (PrevRevision,
// from the Nats-Expected-Last-Subject-Sequence the writer's
// compare-and-set sent, which the server stores). A subscriber that
// delivered key K at revision r and then sees a write of K naming another
// previous revision reports a Gap (K, r, the last revision missed) to
// OnGap before delivering that write; without OnGap the Gap goes to the
// error handler. Gaps come from writes that left the stream before the
// subscriber read them: a key rewritten more often than the bucket keeps,
// a roll-up (a final write under a retention, a purge), the bucket's
// limits, or, live, a dropped message. Its memory of keys is per process:
// a durable consumer resuming in a new process judges a key it has not
// seen yet against its acknowledgement floor, and a resume behind the
// stream's first message is one Gap over the whole stream.
//
// # Failure modes
//
//   - A write that does not decode is terminated (never redelivered in a
//     loop) and reported; a handler error redelivers the write after a
//     second, before any later one (MaxAckPending 1).
//   - Events are the record's history, not its source of truth: the record
//     in its bucket is. A consumer that needs the current state reads the
//     record.
package events
