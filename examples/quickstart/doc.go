// Command quickstart shows xdsengine end to end in a few seconds, with
// nothing but Go installed: it starts two go-control-plane management
// servers on loopback (a primary and a fallback), writes a gRPC bootstrap
// file for them, and resolves a Listener through RDS, CDS, EDS and LEDS
// with graph.Watch. Then it pushes an update, takes the primary
// down — endpoint collections, whose authority sets
// fallback_on_reachability_only (gRFC A95), move to the fallback server
// while the rest stays on the primary's cached data — and brings the
// primary back.
//
//	go run ./examples/quickstart
package main
