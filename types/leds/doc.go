// Package leds is the LbEndpointCollection resource type: the endpoints of
// one EDS locality, fetched as a separate xDS list collection so that they
// can fall back to another server independently of the locality
// assignments (gRFC A95).
//
// Register [Type] (or use package builtin) and watch a collection with
// [Watch], or let a dependency graph watch on an EDS resource fetch the
// collections its localities name and compose them in
// (see eds.ClusterLoadAssignment.Compose).
//
// # Naming
//
// The message has no name field. The collection's name is the name of the
// envoy.service.discovery.v3.Resource wrapper it arrives in, which the
// engine passes as registry.DecodeOptions.WrapperName; a collection sent
// without a named wrapper is rejected. Names are xdstp:// list collection
// names such as
// xdstp://authority/envoy.config.endpoint.v3.LbEndpointCollection/svc/locality-1,
// exactly as EDS's leds_collection_name spells them. Clients that
// understand the type advertise the client feature
// xds.endpoint.supports_lb_endpoint_collection.
//
// # Validation
//
// gRFC A95, as grpc-java's XdsLbEndpointCollectionResource implements it:
//
//   - entries may be empty: the locality is then unreachable, which is
//     valid;
//   - every entry must be an inline_entry (a locator is rejected) whose
//     resource is an Any holding an envoy.config.endpoint.v3.LbEndpoint,
//     judged by the type name after the Any's last '/';
//   - each LbEndpoint is validated exactly like an entry of an EDS
//     locality's lb_endpoints, by code the eds package shares (see the
//     eds package documentation for the rules);
//   - as within an EDS locality, no address may appear twice and the sum
//     of endpoint weights must fit in a uint32.
//
// Errors name the field path and the rule, for instance
// "entries[2].inline_entry.resource.endpoint.address.socket_address.port_value: 70000 out of range [0, 65535]",
// and one error lists every problem found (up to 64).
//
// # Decoded form
//
// [LbEndpointCollection] is immutable and shared by every watcher. Its
// Equal compares the bytes the server sent; Proto decodes them afresh.
// A collection depends on no other resource.
package leds
