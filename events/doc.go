// Package events carries the state changes of natscoord's records to
// whoever wants to react to them: dashboards, audit logs, other services,
// operators with `nats sub`. An Event names one write of one record (a
// ledger task today) by the writer's source, the record's key and the
// store revision of the write, and says what the record looked like
// after it.
//
// # Use
//
//	live, _ := events.SubscribeLive(nc, "ledger.>", func(e events.Event) {
//		fmt.Println(e.Name, e.Key, e.Status, e.Fence)
//	}, nil)
//	defer live.Close()
//
// SubscribeDurable does the same through a durable consumer that resumes
// after its last acknowledged event. On the command line: `nats sub
// 'ledger.>'` or `natscoord events tail`.
//
// # Who publishes
//
// Package kvledger is the publisher: every write of a task record
// publishes one event named after its transition ("ledger.admitted",
// "ledger.claimed", "ledger.completed", …). A writer publishes after its
// write lands; a relay (kvledger's StartRelay) republishes the writes
// whose writer died before publishing. So one write may be published more
// than once, always with the same identity.
//
// # What a consumer sees
//
//   - The JetStream stream (JetStreamBus, default "LEDGER" on "ledger.>")
//     de-duplicates publishes of one write within its duplicate window by
//     Nats-Msg-Id = MsgID(e): a durable consumer (SubscribeDurable) sees
//     each write once, in per-key write order.
//   - A core subscription sees every publish, duplicates included.
//     SubscribeLive drops them by keeping, per (Source, Key), the highest
//     Revision delivered; anyone else reading "ledger.>" with plain NATS
//     does the same.
//
// # Guarantees and failure modes
//
//   - Publish returns once the stream has acknowledged the event; an error
//     means the event may or may not be stored (publishing it again is
//     harmless).
//   - Events are the record's history, not its source of truth: the record
//     in its bucket is. A consumer that needs the current state reads the
//     record.
//   - With the stream unavailable (no leader during a partition) Publish
//     fails; what the writer does then is the publisher's policy (see
//     kvledger's doc).
//   - Durable consumers resume after the last acknowledged event, also in
//     another process; an event that does not decode is terminated and
//     reported, never redelivered in a loop.
package events
