// Package kvx is the one place in natscoord that speaks raw JetStream KV.
//
// It exists because the KV API in nats.go cannot express what coordination
// needs:
//
//   - Renewal with a fresh TTL. kv.Update and kv.Put write no Nats-TTL, so a
//     lease renewed through them would never expire again. Bucket.Update
//     publishes to the key's subject with an expected last subject sequence
//     (the CAS) and a Nats-TTL header in one message.
//   - Create over a delete marker in one round trip. kv.Create costs three
//     when the key's last entry is a marker; Bucket.Acquire takes the
//     marker's revision as a hint (from the caller's own delete or a watch
//     event), so an acquisition is one publish when the hint is right, and
//     it falls back to reading the key from the stream leader when not.
//   - One conflict error. R1 streams report a CAS conflict as API error
//     10071, replicated streams as 10071 or 10164; errors.Is(err,
//     ErrConflict) matches all of them. Every other error stays what it was,
//     so transient failures are never mistaken for contention.
//   - Read-your-writes on replicated buckets. kv.Get uses direct get, which a
//     lagging replica may answer; Bucket.Get asks the stream leader.
//   - Delete markers that report their revision, and writes guarded by
//     another key's revision (Nats-Expected-Last-Subject-Sequence-Subject).
//   - One shared watch per bucket (Hub) from which many waiters take wake-ups,
//     instead of one ordered consumer per waiter. A subscription also says
//     what its waiter can know without a read: the revision after which
//     every change reaches it (Sub.From) and each key's latest change the
//     watch had delivered (Sub.Known). KeepView makes a hub also keep the
//     live keys of a prefix in memory; SyncTo makes that view as new as a
//     revision the caller knows was acknowledged, with no read, so
//     listings need no consumer of their own and a layer that needs the
//     view shares the watch of the layer below it. Feed is the ordered
//     subscription served from that view: every change of a prefix in
//     stream order after the current values, with a bounded queue per
//     feed; a feed that falls behind is caught up from the view (its
//     reader sees each key's latest state), never waited for. Every KV
//     watch of natscoord's packages is a Hub (the benchmarks' raw
//     baselines aside); no package outside kvx holds a raw KV handle.
//   - Bounds without a timer per operation (OpTimeout): operations whose
//     context cannot end share one deadline context, where nats.go would
//     make a context.WithTimeout per request.
//   - Every write answered on one reply subscription per Bucket
//     (publish_reply.go), awaited or pipelined alike, instead of nats.go's
//     request path; the Bucket's owner ends it with Close.
//   - Publishes answered by no responders (a fresh replicated stream, a
//     leader change) retried for about 2.5 s instead of 0.5 s: they reached
//     no stream, so sending them again cannot duplicate a write. Every
//     retry here runs on the one retry primitive, internal/retry.
//
// Revisions returned here are the bucket stream's sequence numbers: strictly
// increasing across deletes, purges, expiry and restarts, which is what
// makes them usable as fencing tokens.
package kvx
