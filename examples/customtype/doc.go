// Command customtype watches an xDS resource type defined outside the
// library: a rate limit policy (see ratelimit.go), served by an embedded
// go-control-plane management server on loopback.
//
// It shows the first version arriving, an update, and an invalid update
// that the engine NACKs while it keeps serving the last good version.
//
//	go run ./examples/customtype
package main
