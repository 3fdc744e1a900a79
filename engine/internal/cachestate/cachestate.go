// Package cachestate is gRFC A88's table of cache states: what CSDS calls
// each, and its grpc.xds.cache_state metric labels (gRFC A78 as A88
// extends it), for a resource not cached and one cached. The engine's
// CacheState indexes it: its constants are in the table's order. The
// table is apart so that it reads whole, with a test of its own.
package cachestate

import adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

// The states, in engine.CacheState's order.
var states = [...]struct {
	csds               adminpb.ClientResourceStatus
	label, cachedLabel string
}{
	{adminpb.ClientResourceStatus_REQUESTED, "requested", "requested"},
	{adminpb.ClientResourceStatus_DOES_NOT_EXIST, "does_not_exist", "does_not_exist_but_cached"},
	{adminpb.ClientResourceStatus_ACKED, "acked", "acked"},
	{adminpb.ClientResourceStatus_NACKED, "nacked", "nacked_but_cached"},
	{adminpb.ClientResourceStatus_RECEIVED_ERROR, "received_error", "received_error_but_cached"},
	{adminpb.ClientResourceStatus_TIMEOUT, "timeout", "timeout"},
}

func known(s int) bool { return s >= 0 && s < len(states) }

// Status returns state s's CSDS status; UNKNOWN for no state.
func Status(s int) adminpb.ClientResourceStatus {
	if !known(s) {
		return adminpb.ClientResourceStatus_UNKNOWN
	}
	return states[s].csds
}

// Label returns state s's metric label, for a resource cached or not;
// "unknown" for no state.
func Label(s int, cached bool) string {
	switch {
	case !known(s):
		return "unknown"
	case cached:
		return states[s].cachedLabel
	}
	return states[s].label
}
