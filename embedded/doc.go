// Package embedded runs nats-server with JetStream inside the calling
// process: one node (Start) or a loopback cluster of several (StartCluster).
//
// # Use
//
//	s, err := embedded.Start(ctx, embedded.Options{})
//	if err != nil { ... }
//	defer s.Shutdown(context.Background())
//	nc, err := s.Connect()      // in-process, no network hop
//	js, err := jetstream.New(nc)
//
// Network clients use s.ClientURL(). s.JetStream() returns a handle on a
// connection the Server owns and closes.
//
// # What it is for
//
//   - Tests. Every natscoord test runs against a real server started here
//     (through internal/testkit/natstest); nothing mocks NATS. A node starts fast
//     enough for each test to have its own (BENCHMARKS.md).
//   - Local development and demos: no separate server to install or run.
//   - Single-node deployments: a service that wants the natscoord
//     primitives without operating a NATS cluster can embed its server,
//     with a persistent DataDir, and with Auth and TLS if it listens
//     beyond loopback.
//   - Failover tests: StartCluster gives n routed nodes that can be
//     stopped, restarted and made to change stream leaders one at a time.
//     All nodes share one process, one clock and one machine, so it shows
//     leader loss and catch-up, not network partitions, clock skew or
//     independent crashes; it is not a way to run a highly available
//     production cluster.
//
// # Defaults
//
// The zero Options value is safe on a developer machine:
//
//   - The listener binds 127.0.0.1 on a free port. Nothing outside the
//     machine can connect unless Host names another address; set Auth (and
//     TLS) before doing that, because the default accepts any client.
//   - InProcessOnly starts no listener at all; only Connect reaches it.
//   - An empty DataDir means a fresh temporary directory that Shutdown
//     removes. A set DataDir is created if needed and kept: starting again
//     on it restores every stream, KV value and revision.
//   - Server logs are discarded unless Logger is set.
//   - JetStream limits are nats-server's own (a share of RAM and disk).
//   - Writes are fsynced lazily, every two minutes (see Durability).
//
// Start checks every option before anything runs: negative limits, an
// unwritable DataDir, a fixed port already taken, missing or unreadable
// TLS files and contradictory auth settings return ErrInvalidOptions.
//
// # Lifecycle
//
//	Start ──ok──▶ running ──Shutdown──▶ stopping ──▶ stopped (Done closed)
//	  │                        │
//	  └─error──▶ nothing left  └─ Connect, JetStream: ErrShutdown
//
// A Start that fails, whether validation refuses the options or the
// server itself cannot listen or open its store (ErrNotReady, carrying the
// server's message), leaves no server, listener, goroutine or temporary
// directory behind.
//
// When Shutdown returns nil: every client connection is closed, the
// listener's port is free, JetStream has flushed and closed its files (a
// Start on the same DataDir sees every acknowledged write), the server's
// goroutines have ended and the temporary directory, if any, is gone. If
// ctx ends first, Shutdown returns an error but the shutdown carries on;
// Done is closed when it completes, and calling Shutdown again waits for
// the same result.
//
// # Durability
//
// By default JetStream acknowledges a write once it is in the operating
// system's page cache and fsyncs in the background (SyncInterval, default
// two minutes). On a single node (R1 streams write through to the file
// before acknowledging) a process crash loses nothing acknowledged; an operating
// system crash or power loss can lose the writes acknowledged since the
// last fsync, and a lease, lock or ledger entry can then come back older
// than a client was told. SyncAlways fsyncs before every acknowledgement
// and closes that window, at a price in write throughput that
// BENCHMARKS.md measures. Tests and
// development want the default. A single-node deployment whose state must
// survive power loss wants SyncAlways; replication (R3 on a real cluster)
// is the other way to survive the loss of one machine.
//
// # Clusters
//
// StartCluster(ctx, n, opts) starts n ≥ 2 nodes on loopback, routed to
// each other, and returns once a JetStream meta leader exists. Creating an
// R3 stream or bucket right after may still fail briefly while the meta
// leader learns its peers; retry it for a bounded time. Then:
//
//   - StopNode(i) shuts node i down, keeping its data directory; streams it
//     led elect a new leader among the others (observed within a fraction
//     of a second), and an R3 bucket stays writable with two nodes.
//   - RestartNode(i) starts it again on the same directory and route port.
//     It catches up in the background; Server.StreamReplica shows what
//     that node itself holds, which client requests cannot (stream info and
//     non-direct gets are answered by the leader).
//   - StreamLeader and StepDownStream find and move a stream's leader.
//   - Node(i).Connect() talks to one node in-process; Cluster.Connect
//     opens a network connection to all running nodes that fails over
//     (the caller closes it), and Cluster.JetStream returns a handle on a
//     connection the cluster owns, as Server.JetStream does for one node.
//
// StartClusterWith(ctx, n, opts, ClusterOptions{RouteAddr: f}) lets a test
// choose the address each node dials to reach each other node, for
// example a loopback proxy it can stall, so that route traffic between
// chosen nodes stops (one way or both) while all of them keep running: a
// network partition of the cluster itself. Nodes then learn of each other
// only through those addresses; the gossip that would let them dial around
// the proxies is sent to a listener that refuses it.
//
// Cluster.Shutdown stops every node, closes the connection behind
// JetStream and removes the temporary root directory; Done is closed once
// every node has stopped. A stopped Cluster cannot be restarted. Server
// and Cluster share one lifecycle: Connect (caller owns), JetStream
// (owned, closed by Shutdown), Shutdown(ctx), Done.
package embedded
