// Package graph watches a resource together with everything it depends
// on, and delivers the whole as one consistent snapshot.
//
// [Watch] starts at a root (a Listener, say) and follows the dependency
// extractor of each resource type in the source's registry: the route
// configuration the listener names, the clusters its routes use, their
// endpoints, the LEDS collections of those. It subscribes to new
// references and cancels the watches of resources no longer reachable as
// the resources change. It knows no resource type by name, so a user's
// own types with dependencies take part like the built-in ones.
//
// A [Graph] is delivered when every reachable resource is known, and
// again whenever any of them, or any of their ambient errors (gRFC A88),
// changes. When a resource is missing, invalid or closes a cycle, the
// watcher gets an *engine.Error of kind KindDependency naming it instead.
// Resources whose type is a [registry.Composer] (EDS with LEDS) are
// composed with their dependencies: [Node.Resource] is the value to use,
// [Node.Decoded] what the server sent.
//
// A resource that is [Shallow] needs its dependencies but not theirs: a
// gRPC server's Listener is resolved with its RouteConfigurations and no
// clusters, as a server watches none (gRFC A36).
//
// Flow control carries through: the source's done functions are held
// until the graph watcher calls done for the snapshot they produced, so a
// slow consumer slows the stream rather than piling up snapshots.
package graph
