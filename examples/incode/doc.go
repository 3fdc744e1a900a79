// Command incode is the README's "In code": it resolves the listener
// example.com, from the management server that the bootstrap in the
// environment names, down to its endpoints, prints the tree and exits; on
// failure it prints the error and its gRPC status code and exits 1, within
// 30 s whatever happens.
//
//	GRPC_XDS_BOOTSTRAP=bootstrap.json go run ./examples/incode
//
// Its tests keep the README true: the README's block is main.go as it is,
// Example runs it against an embedded management server, and
// TestResolveEnds runs it against one that cannot be reached and one
// that never answers. Another test compares the README's architecture
// diagram and package table with the module's imports.
package main
