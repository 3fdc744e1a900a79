// Package relay is an xDS relay: engines of this module upstream,
// go-control-plane's xDS server downstream, so that one upstream
// subscription serves any number of clients (gRPC's, this module's
// engines, Envoy). Validation, caching, fallback (gRFC A71), federation
// (A47) and the A88 error handling are the engines'; the relay maps the
// downstream subscriptions onto them and serves what they accept.
//
//	r, err := relay.New(relay.Config{Upstream: engine.Config{
//		Bootstrap: bs,                  // the upstream servers, the relay's node
//		Registry:  builtin.Registry(), // gRPC's rules; or types/passthrough (see # Validation)
//	}})
//	...
//	defer r.Close()
//	s := grpc.NewServer()
//	r.Register(ctx, s, nil) // or: server.NewServer(ctx, r, callbacks)
//	s.Serve(lis)
//
// A [Relay] is a go-control-plane cache.Cache (ConfigWatcher and
// ConfigFetcher): server.NewServer serves it over ADS, over the per-type
// services, State of the World and incremental, and REST. Command
// xdsrelay runs one.
//
// # Whose configuration
//
// Upstream servers may vary resources by node, so the relay serves one
// configuration per aggregation key, computed from each downstream
// client's node ([Aggregation]; by default its cluster, [ByCluster]).
// Each key has an engine of its own, which presents upstream the relay's
// bootstrap node with the key in the field it came from: ByCluster sets
// the cluster, [ByID] the node ID, [ByMetadata] the metadata field. A
// client never receives another key's configuration. A key's engine is
// closed once the key has had no client for the linger.
//
// # Subscriptions
//
// The upstream subscriptions of a key are the union of its clients'
// subscriptions, per type: one per resource name that some client
// subscribes to, reference-counted, and one wildcard subscription
// (Engine.WatchAll) while a client subscribes to the whole type, as Envoy
// does for Listeners and Clusters: with no names in State of the World
// (legacy wildcard), or "*" in either protocol. go-control-plane's
// watches are one-shot, and the server cancels a watch before each new
// request of its stream, so a reference is held from a watch's creation
// to its cancellation, and a subscription without references lingers
// ([Config.Linger], [DefaultLinger]) before it is ended upstream: an ACK
// costs nothing upstream, nor does a client that reconnects within the
// linger.
//
// # Serving
//
// Each key and type has a serving cache, which answers State of the World
// and incremental requests as go-control-plane's LinearCache would (the
// same versions, the same responses, what every stream was sent kept in
// the server's Subscription), and wraps each version of a resource once
// for all clients. Unlike the LinearCache, it logs each change by
// version and knows which version the state a stream was sent is current
// at, so a change or an ACK costs a stream what changed, not a comparison
// of every resource (see # Scale). The engine notifies
// the relay one resource at a time; the relay applies them to the cache
// in batches, as many as arrived while the last batch was applied, so a
// response of thousands of resources wakes each downstream watch a few
// times, not thousands. The bytes served are the resource's as its
// [Encoder] gives them: those the upstream sent, for resources that keep
// them ([RawResource]: types/passthrough), or the deterministic
// serialization of its message ([ProtoResource]: the built-in types).
// Versions begin with a prefix of the relay instance, so a client's
// version from another relay, or from this one before a restart, is told
// apart.
//
// # Rules
//
// The relay keeps the rules whose absence broke earlier relays:
//
//   - Never evict on upstream failure. An unreachable server, a rejected
//     update, a transient error: clients keep being served the last good
//     configuration, and [Relay.Status], the metrics and xdsrelay say so:
//     of an unreachable server [MetricUpstreamUnreachable], the engines'
//     grpc.xds_client.connected and xdsrelay's health service; of a
//     rejected update (an upstream NACK, which is no outage: the upstream
//     answers) [KeyStatus].UpstreamNACKs and LastNACK,
//     [MetricUpstreamNACKs] and xdsrelay's log. A deletion is not a
//     failure: when the upstream deletes a resource (or says it does not
//     exist), so does the relay, and each client applies its own policy
//     (gRPC keeps a deleted resource under A88; Envoy drops it). With
//     [Config.Store], a relay restarted during an outage serves its last
//     good configuration.
//   - Answer nothing the upstream has not said. A watch is held until the
//     relay has resolved what its answer speaks for: has a version of
//     each resource, or the upstream's word that it does not exist (the
//     engine's does-not-exist, a deletion, or a data error that resolves
//     it). That is, of a wildcard subscription, the upstream wildcard one
//     answered, which the engine tells exactly (a response of the type
//     applied, every resource it changed delivered: a type the upstream
//     has nothing of is answered empty then, and never while the upstream
//     is unreachable); of a State of the World subscription, every name it
//     subscribes, for its answer lists every subscribed Listener and
//     Cluster (one left out is deleted) and a first answer without them
//     would tell the client nothing but that; of an incremental one, the
//     resources the client says it has (initial_resource_versions), for
//     an incremental answer names what it sends and removes only what is
//     known and absent. So a client's first answer is whole, and a client
//     reconnecting to a relay that restarted during an outage keeps its
//     configuration. A State of the World client that adds a name waits
//     for the upstream's verdict on it before its next answer: the
//     upstream's response, or the engine's does-not-exist timer. Finding
//     what a watch waits for looks only at the names the upstream has yet
//     to answer: it adds nothing per resource to an ACK.
//   - A downstream NACK is not forwarded upstream (one bad client must not
//     starve the others), and the rejected version is not sent to that
//     client again: it gets the next change. Each NACK is logged and
//     counted ([MetricDownstreamNACKs]).
//   - A slow client holds at most one response per type: a watch is
//     answered once, and the next is computed from the current state when
//     the client asks again, so the latest version wins and the versions
//     in between are never queued.
//
// # Validation
//
// The registry of Config.Upstream decides what the relay accepts, and so
// what it NACKs upstream and what its clients never see. The built-in
// types (types/builtin) apply gRPC's rules: for a relay of gRPC clients
// only, which then NACKs upstream what they would each NACK. The
// pass-through types (types/passthrough) relay every Envoy type as the
// upstream sent it; by default they check only that a resource parses
// (passthrough.Structural), and leave the rest to each client's own
// rules, gRPC's or Envoy's, for a relay of either kind. With
// passthrough.PGV they apply Envoy's proto constraints too, for a relay
// serving Envoys alone: gRPC's resources break those constraints (istiod's
// Listener for proxyless gRPC has no stat_prefix, which they require), so
// that the relay's gRPC clients would never get their configuration.
//
// # Status
//
// [Relay.Status] reports each key: its upstream node, whether its servers
// answer, the upstream resources its engine rejected (NACKed, with the
// last one's error), its watches (open and held) and subscriptions. A
// Relay is a csds.Source ([Relay.ClientConfigs]): CSDS shows every key's
// engine, client_scope being the key. The metrics go to
// Config.MeterProvider, beside the engines' gRFC A78 ones labelled with
// the key as grpc.target. The engine tells the relay of every NACKed
// resource it subscribes to, by name or through a wildcard, one it never
// had included.
//
// # Limits
//
// go-control-plane's server cannot send xRFC TP3 resource errors, and
// State of the World cannot say that a resource does not exist except for
// Listeners and Clusters: a client of a resource the upstream never sent
// learns of it from its own does-not-exist timer, and of an unreachable
// upstream nothing, as from a silent server. Resources are served bare,
// without the Resource wrapper: a type named only by its wrapper (VHDS's
// virtual hosts, LEDS's collections) keeps its names over incremental
// xDS alone. go-control-plane's server buffers twenty responses of an
// incremental stream (twice its ten known types): a client that stops
// reading while subscribed to more types than that over one stream can
// hold up the updates of the other clients of its key. A wildcard
// subscription is taken as answered by the first response of its type
// that the engine applies after subscribing it: a response to the
// stream's earlier request of that type (by name alone), crossing the
// wildcard's on the wire, counts as well.
//
// # Scale
//
// BenchmarkScale (bench_scale_test.go) measures one upstream
// (go-control-plane over LinearCaches, 10,000 clusters), one relay and N
// clients subscribed to every cluster, against the same clients connected
// directly to the upstream: upstream streams and bytes per change, the
// time from a change of one cluster to the last client updated, the
// relay's CPU per change and its memory per client stream. The figures,
// and the arithmetic of a tree of relays, are in BENCHMARKS.md ("The relay
// at scale").
//
// Upstream load does not depend on N: one connection and one stream per
// aggregation key. The fan-out does. The serving cache (see # Serving)
// costs a stream what changed since its last response, where the
// upstream's LinearCache, serving the same clients directly, compares
// every resource with what each stream was sent, on each change and each
// ACK. What bounds a relay's fan-out is memory: an incremental server
// keeps, per stream, the version of each resource the client holds, and
// each stream here holds two such maps (go-control-plane's server's, and
// the one the serving cache let go of, which the next response recycles
// instead of copying the server's).
// A State of the World client is sent every resource of its type at each
// change. A tree of relays (each relay a client of the one above, keyed
// alike) multiplies the fan-out and adds each level's latency.
//
// Package relaytest starts a relay on loopback, for tests and benchmarks
// of clients behind one.
package relay
