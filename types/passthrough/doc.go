// Package passthrough makes resource types that take any xDS resource as
// its server sent it: decoded into its protobuf message, checked as
// strictly as its readers need, and kept with the bytes it arrived as, to
// be handed on unchanged.
//
// # When to use it
//
// The built-in types (types/builtin: lds, rds, cds, eds, leds) validate as
// gRPC does, and so reject much of what Envoy uses: STATIC, STRICT_DNS and
// ORIGINAL_DST clusters, TLS contexts that fetch their certificates with
// SDS, listeners without an api_listener, filters gRPC does not
// implement. A relay that serves Envoy, or a tool that shows what a
// server sends whoever it is for, uses this package's [Registry]. A relay
// whose clients are gRPC clients may use either: types/builtin NACKs
// upstream what they would NACK, and this package's structural checks
// (see # Validation) leave that to each of them and relay the bytes as
// sent. An engine takes one registry: a relay serving both kinds of
// clients uses this package's, or runs an engine of each to apply each
// kind's rules upstream.
//
// [Registry] and [Types] describe the Envoy resource types (the types
// go-control-plane's pkg/resource/v3 knows, and LEDS's):
//
//	Listener                   LDS   name, all resources required in SotW
//	RouteConfiguration         RDS   name
//	ScopedRouteConfiguration   SRDS  name
//	VirtualHost                VHDS  the Resource wrapper's name (see below)
//	Cluster                    CDS   name, all resources required in SotW
//	ClusterLoadAssignment      EDS   cluster_name
//	LbEndpoint                 LEDS  the wrapper's name (glob collections)
//	LbEndpointCollection       LEDS  the wrapper's name (list collections)
//	Secret                     SDS   name
//	Runtime                    RTDS  name
//	TypedExtensionConfig       ECDS  name
//	RouteConfiguration (Thrift)      name
//
// [Type] makes a type for any other type URL whose message is linked into
// the program (protoregistry.GlobalTypes): its resources are named by a
// top-level string field called name if the message has one, else by
// their wrapper.
//
// Only Listener and Cluster are "all resources required" in State of the
// World: the xDS protocol makes LDS and CDS responses carry every
// resource of the type, and no other. Envoy subscribes to each SDS
// secret by name, and a SotW server need not repeat the secrets that did
// not change, so a secret missing from a response is not deleted.
//
// # Names
//
// A resource's name is its message's name field (ClusterLoadAssignment's
// cluster_name), or, when the message has none or it is empty, the name of
// the envoy.service.discovery.v3.Resource wrapper the resource arrived in.
// VirtualHost is named the other way round: VHDS names virtual hosts
// "<route configuration>/<host>" in the wrapper (incremental xDS always
// wraps), which VirtualHost.name does not hold. A resource with no name
// either way is rejected.
//
// # Validation
//
// How strictly a resource is checked, and so what is NACKed, is an
// [Options] choice ([Validation]), to fit who reads the resources:
//
//   - [Structural], the default ([Registry], [Types], [Type]): the
//     resource unmarshals into its message and has a name, and each
//     google.protobuf.Any payload in it whose message type is linked
//     into the program unmarshals too, no more than 32 Anys deep. That is
//     what any reader needs; the rest is for the clients to judge by
//     their own rules. A relay serving gRPC clients needs no more, and
//     must not ask for more: istiod's Listener for a proxyless gRPC
//     client is an api_listener whose connection manager has no
//     stat_prefix, which Envoy's rules require and gRPC ignores.
//   - [PGV]: the rules protoc-gen-validate generated from the message's
//     proto annotations too (the ValidateAll methods of go-control-plane's
//     envoy module), applied to the resource and to each Any payload in
//     it whose type is linked, as Envoy applies them to an extension's
//     config when it instantiates it: for a relay whose clients are all
//     Envoys, which would each reject what breaks them.
//
// Every violation is reported at once, each as the field path as the
// proto spells it and the rule broken:
//
//	filter_chains[0].filters[0].typed_config.stat_prefix: value length must be at least 1 runes
//
// An Any whose type is not linked is passed on unchecked: Envoy may know
// extensions this program does not. This package links the HTTP connection
// manager, the TLS transport sockets and the aggregate cluster, whose
// contents name dependencies; what else is checked depends on what the
// program imports (types/builtin links the filters gRPC implements), and a
// program links more extension packages of go-control-plane's envoy module
// (a blank import each) to have their configs checked too.
//
// Not checked, even with PGV: anything Envoy checks in C++ beyond the
// annotations (cross-field rules, that a regex compiles, that a cluster a
// route names exists, unknown and deprecated fields) and the contents of
// TypedStruct configs. The rules are those of the protos this module
// builds with: a relay should be at least as new as its Envoys, or a
// value only a newer proto allows (a new enum value) is rejected.
//
// The decoder checks nothing the bytes of the message itself do not
// force, so a tool can call Decoder alone to see a resource the validator
// would reject, and a relay that wants no checks at all clears the
// Validator of each type.
//
// # The decoded value
//
// A watcher receives a [*Resource]: [Resource.Message] is the decoded
// message (a *clusterpb.Cluster for a Cluster), shared and read-only;
// [Resource.Raw] the bytes the server sent, which a relay writes into its
// own responses without marshaling again; [Resource.Verbatim] the same
// bytes as a proto.Message, for go-control-plane's caches, which take
// messages; [Resource.Proto] a copy to modify. Two resources are Equal
// when their type, name and bytes are.
//
// Keeping the message costs memory beside the bytes: a decoded Go message
// is several times its serialized size. BenchmarkDecode measures what a
// decoded resource keeps alive (retained-B/op) for istiod-shaped
// resources; its figures are in BENCHMARKS.md.
//
// # Dependencies
//
// A dependency is a resource named in the resource that the client fetches
// from the same server: through a ConfigSource that is ads or self.
//
//   - Listener: the RouteConfiguration of each HTTP connection manager on
//     RDS, and those named by the scopes of its scoped_routes when listed
//     inline (not on demand); the Secret of each SdsSecretConfig; the
//     TypedExtensionConfig of each filter fetched with ECDS, named as the
//     filter. HTTP connection managers are found in filter chains, the
//     default chain and the api_listener.
//   - Cluster: an EDS cluster's ClusterLoadAssignment (its
//     eds_cluster_config.service_name, else the cluster's name; an
//     xdstp:// name without eds_config too), an aggregate cluster's
//     clusters, and its secrets and ECDS filters as for a Listener.
//   - ClusterLoadAssignment: the LEDS collection of each locality, an
//     LbEndpoint glob collection or an LbEndpointCollection.
//   - TypedExtensionConfig: what its config names, as for a Listener (the
//     secrets of an OAuth2 filter, say).
//
// Not followed: SRDS (HTTP connection managers with scoped_rds subscribe
// to every ScopedRouteConfiguration, which no name says, and a scope's
// RouteConfiguration is fetched through its connection manager's source,
// which the scope does not say), VHDS (on demand), the clusters a
// RouteConfiguration routes to (Envoy has them all from CDS), on-demand
// CDS, and references inside Anys whose types are not linked. A
// RouteConfiguration, ScopedRouteConfiguration, VirtualHost, Secret,
// Runtime, LEDS resource or a type made by [Type] for another URL has no
// dependencies.
//
// No client features are advertised for these types: what a relay's
// clients understand is for the relay to say in its node.
package passthrough
