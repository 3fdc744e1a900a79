// Command xdsserver resolves the configuration of an xDS-enabled gRPC
// server (gRFC A36) the way such a server does, and prints it.
//
// It starts a management server on loopback that serves a server Listener
// of three filter chains in the shape istiod sends: mutual TLS and an RBAC
// policy (gRFC A29, A41) for peers on the mesh network, plaintext for the
// node itself, and TLS with routes fetched over RDS for everyone else. The
// program names the Listener from its bootstrap's
// server_listener_resource_name_template
// (bootstrap.Bootstrap.ServerListenerName), resolves it with its route
// configurations using graph.Watch, and prints each chain: what it
// matches, its TLS, its RBAC rules and its routes, with the warning gRFC
// A36 asks for when a route is not a non_forwarding_action. It then shows
// which chain a few connections get (lds.ServerListener.FilterChainFor).
// Last, the control plane names a certificate provider the bootstrap does
// not define: the engine NACKs the Listener and the server keeps the
// configuration it has.
//
//	go run ./examples/xdsserver
package main
