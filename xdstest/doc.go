// Package xdstest runs go-control-plane's real ADS management server on
// loopback, embedded in a test or a program, so that code that uses xDS
// (through this module's engine, or gRPC's own client) can be tested
// against a real server: the quickstart, the examples and this module's
// end-to-end tests use it.
//
// A test starts a server, gives it resources, points the client under test
// at it ([Server.Bootstrap] writes a gRPC bootstrap, [Server.ServerConfig]
// the entry of one), and asserts on what the client received and on what
// the server observed:
//
//	s := xdstest.NewServer(t, xdstest.Options{Name: "primary"}) // closed when the test ends
//	s.Set(
//		xdstest.R("listener-1", listener),
//		xdstest.R("cluster-1", cluster),
//		xdstest.Wrapped(ledsName, collection),            // LbEndpointCollection has no name field
//		xdstest.R("thing-1", payload).As(customTypeURL), // any proto under any type URL
//	)
//	bs, _ := bootstrap.Parse(s.Bootstrap(xdstest.BootstrapOptions{}))
//	// ... start the client with bs, wait for its watchers ...
//	s.WaitForRequest(ctx, xdstest.IsACK(listenerTypeURL, "1"))
//	s.Update(clusterTypeURL, xdstest.R("cluster-1", changed)) // version "2", CDS only
//	s.CutConnections() // as a network failure: streams fail, the client reconnects
//	s.Stop()           // client streams fail with Unavailable; the port stays bound
//	s.Restart()        // client reconnects and gets the current resources
//
// [Listener], [RouteConfig], [Cluster], [ClusterLoadAssignment] and
// [Collection] build small resources that gRPC's validation accepts: an
// API listener on RDS, a route to one cluster, an EDS cluster, endpoints
// by locality (inline or in LEDS collections). [ServerListener] builds an
// xDS-enabled gRPC server's Listener (gRFC A36) of several filter chains,
// with TLS and RBAC, and [ServerRouteConfig] a server's routes.
//
// A program uses [Start] and [Server.Close] instead of NewServer. Close
// ends every goroutine of the server. The package does not import testing
// (NewServer takes a [TB]), so a program that embeds a server links no
// test framework.
//
// # State of the world
//
// There is one state for every client, whatever its node ID. [Server.Set]
// replaces all of it and gives every type URL the next version ("1", "2",
// ...), so every open subscription gets a response; [Server.Update]
// replaces one type and bumps only that type's version. Full-state types
// (LDS, CDS) are sent complete, so leaving a resource out of a Set deletes
// it for the client; other types list only the subscribed resources that
// exist. Before the first Set or Update nothing is answered: a reachable
// but silent server.
//
// Any type URL can be served, known to go-control-plane or not: the server
// uses SnapshotCache (ads=false) over the package's own ResourceSnapshot,
// not cache.NewSnapshot (which rejects unknown types) nor MuxCache (which
// ends the whole ADS stream when a client subscribes to a type it has no
// cache for). A subscription to a type without resources is simply
// answered empty, or not at all before the first Set.
//
// # Deviations from stock go-control-plane, on purpose
//
//   - NACKs park: SnapshotCache answers a NACK by re-sending the rejected
//     version at once, thousands of times a second against a client that
//     keeps rejecting it (envoyproxy/go-control-plane#962). Here a NACK
//     gets no response until the type changes (Set, or Update of that
//     type), as from a sensible server.
//   - Wrapped resources carry no TTL. go-control-plane only wraps resources
//     that have a TTL; the harness gives wrapped resources one to get the
//     wrapper and removes it from the response before it is sent.
//   - xRFC TP3 errors: go-control-plane has no resource_errors; with
//     [Server.SetResourceErrors] the harness sends them in place of the
//     resources they name, through the cache, so that each response is
//     consistent.
//   - Legacy wildcard is off (sotw.DeactivateLegacyWildcard), as gRPC
//     clients expect: an empty resource_names list subscribes to nothing.
//
// # Observation
//
// [Server.Requests] are the requests exactly as received, recorded by a
// gRPC interceptor: go-control-plane copies the node into every request it
// hands to its callbacks, the interceptor sees the wire. [Server.NACKs],
// [Server.StreamRequests], [Server.Responses], [Server.OpenStreams] and the
// Wait methods build on the same records. WaitForRequest also matches
// requests that arrived before it was called, so tests need no sleeps.
// Long-running tests set [Options.CountOnly] and read [Server.Counts]
// instead, so that the records do not grow without bound.
//
// # Down and up
//
// [Server.Stop] closes every client connection and, until
// [Server.Restart], closes new ones right after accepting them, so clients
// see codes.Unavailable on open and new streams, exactly as for a crashed
// server, while the port stays bound (a port given up could be taken by
// another test before the restart). For a fresh server at the same address
// use [Server.Close] and [Start] with [Options.Port].
//
// Clients should use a short reconnect backoff in tests (gRPC's default
// starts at one second), e.g. grpc.WithConnectParams with a 20 ms base
// delay.
package xdstest
