// Package builtin bundles the xDS resource types this module ships:
// Listener (lds), RouteConfiguration (rds), Cluster (cds),
// ClusterLoadAssignment (eds) and LbEndpointCollection (leds).
//
// Nothing is registered globally: [Registry] returns a new registry on
// every call, and a client adds its own types with registry.Registry.With.
// A client with custom LB policies builds its registry from [Types] with
// cds.Type replaced by cds.NewType.
package builtin
