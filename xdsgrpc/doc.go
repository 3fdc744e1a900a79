// Package xdsgrpc routes a grpc-go channel's RPCs by what an xdsengine
// engine accepts: a resolver and a balancer for grpc-go, on its public
// APIs only, so that everything the engine does (incremental xDS, the
// last-known-good store, fallback, custom resource types) reaches
// traffic, where grpc-go's own xDS client (package google.golang.org/grpc/xds)
// is closed to it.
//
//	b, err := xdsgrpc.NewBuilder(xdsgrpc.Options{Source: e}) // e: an *engine.Engine, a Mux, ...
//	...
//	defer b.Close()
//	cc, err := b.NewClient("xdsengine:///service", grpc.WithTransportCredentials(insecure.NewCredentials()))
//
// With no Source, the Builder reads the bootstrap from the environment
// (GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG), as gRPC does, and
// gives each target an engine of its own. A Builder is a
// resolver.Builder: grpc.WithResolvers(b) works too, without the
// program's HTTP filters (Filter), which need the interceptors NewClient
// installs.
//
// # How it fits grpc-go
//
// The resolver watches the target's Listener with graph.Watch, through a
// view of the source that follows only the virtual host the channel's
// authority selects, and hands the channel one complete configuration per
// change (gRFC A74): the routes and every cluster they lead to, with
// endpoints, in the resolver state's attributes. grpc-go keeps the
// config selector it uses for its own xDS routing internal, so routing
// happens in the picker of this package's balancer (registered with
// grpc-go as BalancerName when the first Builder is made, as grpc-go
// finds balancers by name: its one global side effect): the first route
// that matches the RPC's path, headers and runtime fraction takes it,
// then the cluster's picker does. Below each
// cluster, the balancer runs gRPC's priority policy (failover after
// DefaultFailoverTimeout, on an injectable Clock), localities by weight
// when the policy is wrr_locality, and grpc-go's own balancers for the
// endpoints: round_robin, pick_first, ring_hash, least_request,
// weighted_round_robin, or a program's own (Policy).
//
// # Errors
//
// As gRFC A88 has it: an error of the Listener or RouteConfiguration
// that means "stop using it" fails every RPC; one of a cluster fails the
// RPCs routed to it, and only those; ambient errors keep the last
// configuration. grpc-go does not let a picker fail an RPC with a code
// the control plane owns (gRFC A54: INVALID_ARGUMENT, NOT_FOUND, ...): those
// RPCs fail with UNAVAILABLE, and the message names the engine's code and
// error, with the resolution note of A88 (the ambient errors involved, or
// the node ID). A cluster that cannot be used is a TRANSIENT_FAILURE:
// wait-for-ready RPCs wait for it.
//
// # gRFCs
//
//	gRFC                                 status     what
//	A27 xDS global load balancing        supported  LDS, RDS, CDS, EDS; priorities, locality weights, only HEALTHY/UNKNOWN endpoints; LRS
//	A28 traffic splitting and routing    supported  path exact/prefix/regex (case), all header matchers, runtime fraction, weighted clusters, first match
//	A32 circuit breaking                 supported  max_requests, one counter per cluster and EDS name in the process; drops in LRS
//	A37 aggregate, logical DNS clusters  partial    aggregate clusters; LOGICAL_DNS clusters fail their RPCs (no DNS resolution)
//	A39 HTTP filters                     partial    the program's own filters, as client interceptors (Filter); router only of the built-in ones
//	A42 ring hash                        supported  header and channel_id hash policies, endpoint weights
//	A47 federation                       supported  xdstp:// names through the engine; targets with an authority need Options.Bootstrap
//	A52 custom LB policies               supported  TypedStruct policies (Policy), wrr_locality, and every policy grpc-go has
//	A56 priority policy                  supported  failover on TRANSIENT_FAILURE or after the timer, return when a higher priority is READY
//	A61 dual-stack endpoints             supported  additional_addresses are the endpoint's addresses, which pick_first tries
//	A71 fallback, A88 errors             supported  in the engine; the channel sees what the engine gives
//	A74 config tears                     supported  one complete configuration per change; a cluster's error stays with it
//	A75 aggregate cluster fixes          supported  a priority over leaf clusters, each with its own policy, circuit breaking and drops
//	A76 ring hash improvements           supported  hash_key endpoint metadata; an RPC without a hash picks as A76 says
//	A95 LEDS (in the engine)             supported  collections composed into their cluster; a missing one fails that cluster
//	A29 xDS TLS                          left out   clusters with a transport socket fail their RPCs (see below)
//	A31 timeouts                         left out   see below
//	A33 fault injection                  left out   see below
//	A36, A41 xDS servers, RBAC           left out   see below
//	A44 retries                          left out   see below
//	A50 outlier detection                left out   see below
//
// What is left out, and why:
//
//   - Timeouts (A31) and retries (A44) are per-route settings gRPC applies
//     through its config selector, which grpc-go keeps internal; a
//     picker runs after the RPC's deadline and retry policy are fixed, and
//     the service config's method configs are per method, not per route.
//     max_stream_duration and retry_policy are decoded by package rds but
//     not applied.
//   - Fault injection (A33) would be a built-in filter (an interceptor
//     that delays and aborts); the fault filter's config is ignored.
//   - Outlier detection (A50) is a balancer of grpc-go's that is internal
//     (internal/xds/balancer/outlierdetection), with no public equivalent
//     to build on; the Cluster's outlier_detection is decoded, not applied.
//   - TLS to clusters (A29): grpc-go's xDS credentials take a cluster's
//     certificates from attributes only its own balancers can set.
//     Sending in the clear to a cluster that asks for TLS would be worse
//     than failing, so such clusters fail their RPCs.
//   - The server side (A36, A41): this package is a client's; an
//     xDS-enabled server's Listener and RBAC are decoded by package lds.
//   - LOGICAL_DNS clusters (A37) would need a DNS resolver per cluster
//     under the resolver; aggregate clusters are supported.
//   - Cluster specifier plugins (RLS) fail the RPCs of their routes.
//   - A cycle among aggregate clusters fails the whole channel, not only
//     the routes to it: graph.Watch reports a cycle for the whole graph.
//
// Differences from gRPC on purpose: weighted clusters and localities are
// picked by a low-discrepancy sequence rather than at random, so a split
// is exact over any number of RPCs; a route's hash reaches grpc-go's
// ring_hash through its request_hash_header (A76), and an RPC no hash
// policy hashes picks the first READY endpoint from a random point of the
// ring, where gRPC's xDS config selector uses a random hash.
//
// # Performance
//
// BenchmarkPick measures this package's share of a pick (a route matched
// by path allocates nothing; a header matcher reads the RPC's metadata);
// BenchmarkRPC, BenchmarkFirstRPC and BenchmarkEDSChange compare an RPC,
// a cold channel's first RPC and an EDS change's effect on traffic with
// grpc-go's xDS client on the same configuration. The figures, and how
// to reproduce them, are in the module's BENCHMARKS.md (section "gRPC
// traffic").
package xdsgrpc
