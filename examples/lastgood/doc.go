// Command lastgood shows a process that restarts while its xDS server is
// down, and starts from the last configuration it accepted, kept on disk
// by package lastgood (engine.Config.Store).
//
// A first process gets a Listener → RouteConfiguration → Cluster →
// ClusterLoadAssignment configuration from an embedded go-control-plane
// management server, and closes. The server goes down. A second process
// on the same store delivers the configuration from disk at once, each
// resource marked FromStore with the version it was received under and
// followed by an ambient UNAVAILABLE error that says where it comes
// from; no watcher sees NOT_FOUND. When the server comes back with a
// newer version, its data wins.
//
//	go run ./examples/lastgood
package main
