// Package gcpmatrix is the interop matrix's harness: go-control-plane
// v0.14's own server over each of its caches (SnapshotCache, LinearCache,
// a MuxCache mixing the two), on a loopback listener that a test stops and
// starts again, and the checks every cell of the matrix makes of a client
// of it (an engine, or a relay and its downstream clients).
//
// A cell is a cache, a protocol (State of the World or incremental) and a
// subscription shape. Each cell checks three things against the real
// server, on the real clock:
//
//   - delivery: every resource the shape asks for reaches every client
//     within [DeliveryBound], and a wildcard watcher gets its "complete"
//     signal (OnAmbientError("", nil)) while it holds them all;
//   - no storm: in a [Window] in which nothing changes, the server gets at
//     most as many requests as it sent responses plus one per type plus
//     [Slack], and sends at most one response per type plus [Slack];
//   - health: after an outage (the server's gRPC server and listener
//     closed, then a new one on the same port over the same cache), the
//     client is Connected again within [HealthBound] of the server's
//     return.
//
// go-control-plane's caches differ in exactly the places a client can get
// wrong (see shared/notes/go-control-plane-as-test-server.md, last
// section): SnapshotCache filters a State of the World response by the
// literal resource names, "*" included; LinearCache answers a
// subscription change only with what the stream was not sent yet; an
// incremental server whose client already holds the current versions
// sends nothing at all.
//
// [Run] runs a table of cells at once, each reported by a subtest of its
// own: the checks mostly wait on real time (the quiet window, reconnects),
// and go test runs no more parallel subtests than GOMAXPROCS at a time.
package gcpmatrix
