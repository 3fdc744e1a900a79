// Command featureplugin adds a server feature of its own to the engine:
// "example.com/fail_on_nack", which drops a cached resource when an update
// of it is NACKed instead of keeping it (gRFC A88's default).
//
// Two clients watch the same Cluster on the same embedded go-control-plane
// server. Their bootstrap files differ in one line, the feature's name in
// server_features, and the program shows how each reacts to an invalid
// update, side by side.
//
//	go run ./examples/featureplugin
package main
