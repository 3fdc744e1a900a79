// Command grpcclient is a grpc-go client whose RPCs are routed by the
// engine, through package xdsgrpc's resolver: a weighted split between a
// stable and a canary cluster, a header that pins RPCs to the canary,
// and a failover to the stable cluster's second priority when its first
// priority's endpoints go, and back when they return.
//
// It starts everything it needs on loopback: a management server
// (package xdstest) and four gRPC backends, each answering with its own
// name, and prints which backends each batch of RPCs reached.
//
//	go run ./examples/grpcclient
package main
