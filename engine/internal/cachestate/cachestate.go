// Package cachestate is gRFC A88's table of cache states: what CSDS calls
// each, and its grpc.xds.cache_state metric labels (gRFC A78 as A88
// extends it), for a resource not cached and one cached; and the state
// each kind of data error leads to. The engine's CacheState indexes it:
// its constants are in the table's order. The table is apart so that it
// reads whole, with a test of its own.
package cachestate

import (
	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

	"github.com/xdsengine/xdsengine/features"
)

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

// The states a data error leads to, as indexes of states.
const (
	doesNotExist  = 1
	nacked        = 3
	receivedError = 4
)

// AfterDataError returns the state a data error of reason leaves an
// entry in: NACKED, DOES_NOT_EXIST after a deletion, RECEIVED_ERROR after
// an xRFC TP3 error; -1 for no reason it knows.
func AfterDataError(reason features.Reason) int {
	switch reason {
	case features.ReasonNACK:
		return nacked
	case features.ReasonDeletion:
		return doesNotExist
	case features.ReasonServerReported:
		return receivedError
	}
	return -1
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
