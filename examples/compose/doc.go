// Command compose puts two engines, each on its own management server,
// behind one engine.Source and resolves a dependency graph across both.
//
// Server A is the main control plane: listeners, route configurations and
// endpoints. Server B is a cluster catalog run by another team: it serves
// the Cluster resources. An engine.Mux sends every Cluster watch to the
// engine on B and everything else to the engine on A, and
// graph.Watch, which only sees one Source, follows the chain
// Listener → RouteConfiguration → Cluster → ClusterLoadAssignment across
// the two.
//
//	go run ./examples/compose
package main
