package engine

import (
	"errors"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

	"github.com/xdsengine/xdsengine/features"
)

// TestCacheStateTable: each state's CSDS status and metric labels, for a
// resource not cached and one cached (A78, A88); and the state each data
// error leads to.
func TestCacheStateTable(t *testing.T) {
	for _, tc := range []struct {
		state            CacheState
		status           adminpb.ClientResourceStatus
		uncached, cached string
	}{
		{-1, adminpb.ClientResourceStatus_UNKNOWN, "unknown", "unknown"},
		{StateRequested, adminpb.ClientResourceStatus_REQUESTED, "requested", "requested"},
		{StateDoesNotExist, adminpb.ClientResourceStatus_DOES_NOT_EXIST, "does_not_exist", "does_not_exist_but_cached"},
		{StateACKed, adminpb.ClientResourceStatus_ACKED, "acked", "acked"},
		{StateNACKed, adminpb.ClientResourceStatus_NACKED, "nacked", "nacked_but_cached"},
		{StateReceivedError, adminpb.ClientResourceStatus_RECEIVED_ERROR, "received_error", "received_error_but_cached"},
		{StateTimeout, adminpb.ClientResourceStatus_TIMEOUT, "timeout", "timeout"},
		{StateTimeout + 1, adminpb.ClientResourceStatus_UNKNOWN, "unknown", "unknown"},
	} {
		if got := tc.state.ClientStatus(); got != tc.status {
			t.Errorf("%d.ClientStatus() = %v, want %v", tc.state, got, tc.status)
		}
		if got := tc.state.MetricLabel(false); got != tc.uncached {
			t.Errorf("%d.MetricLabel(false) = %q, want %q", tc.state, got, tc.uncached)
		}
		if got := tc.state.MetricLabel(true); got != tc.cached {
			t.Errorf("%d.MetricLabel(true) = %q, want %q", tc.state, got, tc.cached)
		}
	}
	for reason, want := range map[features.Reason]CacheState{
		features.ReasonNACK:           StateNACKed,
		features.ReasonDeletion:       StateDoesNotExist,
		features.ReasonServerReported: StateReceivedError,
	} {
		if got := stateAfter(reason); got != want {
			t.Errorf("stateAfter(%v) = %v, want %v", reason, got, want)
		}
	}
}

// TestEntryNotes: nil notes answer every question with nothing; each
// with… makes them when needed; clearing the ambient error drops notes
// with nothing else to say, and keeps those that have.
func TestEntryNotes(t *testing.T) {
	nack := &Error{Kind: KindNACK}
	unreachable := errors.New("unreachable")
	stored := &storedResource{version: "v0"}
	at := time.Unix(100, 0)
	for _, tc := range []struct {
		name         string
		steps        func(n *entryNotes) *entryNotes
		wantNil      bool
		wantErr      *Error
		wantAmbient  error
		wantStored   *storedResource
		wantVersion  string
		wantFailedAt time.Time
	}{
		{name: "nothing", steps: func(n *entryNotes) *entryNotes { return n }, wantNil: true},
		{name: "an error", steps: func(n *entryNotes) *entryNotes { return n.withError(nack, "v2", at) },
			wantErr: nack, wantVersion: "v2", wantFailedAt: at},
		{name: "an ambient error", steps: func(n *entryNotes) *entryNotes { return n.withAmbient(unreachable) },
			wantAmbient: unreachable},
		{name: "an ambient error cleared", steps: func(n *entryNotes) *entryNotes {
			return n.withAmbient(unreachable).withAmbient(nil)
		}, wantNil: true},
		{name: "cleared with nothing to clear", steps: func(n *entryNotes) *entryNotes { return n.withAmbient(nil) },
			wantNil: true},
		{name: "an error outlives its ambient error", steps: func(n *entryNotes) *entryNotes {
			return n.withError(nack, "v2", at).withAmbient(unreachable).withAmbient(nil)
		}, wantErr: nack, wantVersion: "v2", wantFailedAt: at},
		{name: "served from the store, then unreachable cleared", steps: func(n *entryNotes) *entryNotes {
			return n.withStored(stored, at).withAmbient(unreachable).withAmbient(nil)
		}, wantStored: stored},
	} {
		n := tc.steps(nil)
		if (n == nil) != tc.wantNil {
			t.Errorf("%s: notes %+v, want nil: %v", tc.name, n, tc.wantNil)
			continue
		}
		if n.lastError() != tc.wantErr || n.ambientError() != tc.wantAmbient || n.fromStore() != tc.wantStored {
			t.Errorf("%s: error %v, ambient %v, stored %v; want %v, %v, %v", tc.name, n.lastError(), n.ambientError(),
				n.fromStore(), tc.wantErr, tc.wantAmbient, tc.wantStored)
		}
		if n != nil && (n.failedVersion != tc.wantVersion || !n.failedAt.Equal(tc.wantFailedAt)) {
			t.Errorf("%s: failed version %q at %v, want %q at %v", tc.name, n.failedVersion, n.failedAt, tc.wantVersion, tc.wantFailedAt)
		}
	}
}
