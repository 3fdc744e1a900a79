// Package eds is the ClusterLoadAssignment resource type (EDS): the
// localities, priorities and endpoints of a cluster, and the calls the
// client should drop.
//
// Register [Type] (or use package builtin) and watch a resource with
// [Watch]. A ClusterLoadAssignment whose localities keep their endpoints
// in LEDS collections (gRFC A95) depends on those collections; a
// dependency graph watch fetches them and calls
// [ClusterLoadAssignment.Compose], which implements registry.Composer.
//
// # Validation
//
// The rules are gRPC's current ones: gRFC A27 as grpc-go
// (xdsresource/unmarshal_eds.go) and C-core (xds_endpoint_parser.cc)
// implement it today, with gRFC A61 (dual-stack) and A95 (LEDS):
//
//   - cluster_name, the resource's name, must be non-empty. An empty
//     endpoints list is valid: the cluster has no endpoints.
//   - A locality whose load_balancing_weight is unset or 0 gets no load and
//     is left out without further checks.
//   - Every other locality must have locality set; the same
//     region/zone/sub_zone may appear only once per priority; the
//     priorities in use must be contiguous from 0; the locality weights of
//     one priority must sum to at most 2^32-1.
//   - In every lb_endpoints entry: load_balancing_weight, if set, is
//     greater than 0 (default 1); endpoint is set (endpoint_name is not
//     supported); endpoint.address and every
//     endpoint.additional_addresses[i].address (gRFC A61) is a
//     socket_address whose address is an IPv4 or IPv6 literal (parsed with
//     net/netip) and whose port_value is set and at most 65535; no address
//     appears twice in the resource, whatever the endpoints' health; the
//     endpoint weights of a locality sum to at most 2^32-1.
//   - Endpoints of every health status are kept with their status, as
//     grpc-go and grpc-java keep them; [Endpoint.Usable] says whether gRPC
//     would route to one (UNKNOWN or HEALTHY).
//   - If leds_cluster_locality_config is set, lb_endpoints is ignored;
//     leds_config must have self set, and leds_collection_name must be
//     non-empty. A name ending in "/*" is a glob collection (xRFC TP1),
//     which exists only over incremental xDS: from a server that speaks
//     State of the World it is rejected, as gRFC A95 rejects every glob
//     name; from an incremental server it must be an xdstp:// name of
//     type envoy.config.endpoint.v3.LbEndpoint, and is watched as a glob
//     collection of LbEndpoint resources. Any other xdstp:// name is a
//     list collection and must be of type
//     envoy.config.endpoint.v3.LbEndpointCollection; an old-style name is
//     a list collection too.
//   - Every policy.drop_overloads entry has a non-empty category and a
//     drop_percentage whose denominator is HUNDRED, TEN_THOUSAND or
//     MILLION; it is scaled to parts per million and capped at 1,000,000.
//     overprovisioning_factor is ignored.
//
// Errors name the field path and the rule, for instance
// "endpoints[1].lb_endpoints[3].endpoint.address.socket_address.port_value: 70000 out of range [0, 65535]",
// and one error lists every problem found (up to 64).
//
// # Deliberate differences from gRPC
//
//   - port_value must be set: gRFC A27 requires it, while gRPC
//     implementations read an unset port, or a named_port, as port 0.
//     Port 0 itself is accepted, as gRPC accepts it.
//   - An empty leds_collection_name is rejected; A95 does not mention it,
//     but no collection can have that name.
//   - Glob collections are accepted from incremental servers, which gRPC
//     does not speak; gRPC rejects every glob name (A95), and so does
//     this package for State-of-the-World servers.
//   - drop_overloads follows C-core, which is stricter than grpc-go: a
//     missing category or drop_percentage is an error. The scaling is done
//     in 64 bits, so a huge numerator caps at one million instead of
//     wrapping around as a 32-bit multiplication would.
//   - Endpoint metadata (hash keys of gRFC A76, HTTP CONNECT proxy
//     addresses of A86) and locality metadata are not read.
//
// # Decoded form
//
// [ClusterLoadAssignment] is immutable and shared by every watcher. Its
// Equal compares the bytes the server sent (and, for composed values, the
// LEDS collections they were composed from); Proto decodes the bytes
// afresh. Decoding is one proto.Unmarshal followed by a conversion into
// slices sized up front: all endpoints of a resource share one backing
// array.
//
// # Dependencies
//
// A ClusterLoadAssignment depends on the LbEndpointCollection of every
// locality with a leds_cluster_locality_config, each name once.
package eds
