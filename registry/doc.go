// Package registry holds xDS resource types as descriptor values.
//
// A resource type is a [ResourceType]: a type URL, a short name, whether
// SotW responses of the type carry every resource (LDS, CDS), and three
// parts the engine calls:
//
//   - a [Decoder] (required) that turns the serialized bytes of one
//     resource into a decoded, immutable Go value and its name;
//   - a [Validator] (optional) that applies semantic rules and returns an
//     error naming every problem;
//   - a [DependencyExtractor] (optional) that names the resources this one
//     refers to (a Listener's RouteConfiguration, a Cluster's endpoints).
//
// Each part is a one-method interface with a Func adapter ([DecoderFunc],
// [ValidatorFunc], [DependencyFunc]). A decoded resource may also implement
// [Equaler]; the engine otherwise compares serialized bytes to tell an
// unchanged resource from a changed one.
//
// # What the engine does, and what a type must not
//
// The engine owns the protocol: it unwraps google.protobuf.Any and the
// envoy.service.discovery.v3.Resource wrapper, checks the type URL, caches,
// ACKs and NACKs. A decoder sees only the bytes of its own message and the
// wrapper's name in [DecodeOptions]. Decoders, validators and extractors
// must be deterministic, must not block, must be safe for concurrent use
// and must not keep their arguments. A decoder returns the resource's name
// whenever it can, even with an error, so a NACK names the resource.
//
// # Registries
//
// [New] builds an immutable [Registry] and rejects an empty or malformed
// type URL, a nil decoder and a duplicate type URL with an error that
// names the entry. There is no global registry; each engine is given one.
//
// # Testing a type
//
// Package [github.com/xdsengine/xdsengine/registry/registrytest] is the
// conformance kit a type's author runs against their descriptor.
package registry
