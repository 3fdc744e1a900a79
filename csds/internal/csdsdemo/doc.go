// Command csdsdemo serves the CSDS of an xDS engine on a fixed loopback
// port, for trying the service with general tools such as grpcurl
// (scripts/csds-grpcurl.sh runs it).
//
// It starts the embedded go-control-plane management server with a
// listener → route configuration → cluster → endpoints tree, an engine for
// the target xds:///listener.example that watches the whole tree and a
// listener the server does not have, and an admin gRPC server with CSDS
// and reflection. Once every watch has settled it prints "ready" on
// stdout; it serves until SIGINT or SIGTERM. Logs go to stderr.
package main
