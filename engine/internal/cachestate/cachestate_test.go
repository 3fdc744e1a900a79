package cachestate

import (
	"testing"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/features"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAfterDataError: each reason's state, as CSDS names it.
func TestAfterDataError(t *testing.T) {
	for _, tc := range []struct {
		reason features.Reason
		want   adminpb.ClientResourceStatus
	}{
		{features.ReasonNACK, adminpb.ClientResourceStatus_NACKED},
		{features.ReasonDeletion, adminpb.ClientResourceStatus_DOES_NOT_EXIST},
		{features.ReasonServerReported, adminpb.ClientResourceStatus_RECEIVED_ERROR},
		{features.Reason(0), adminpb.ClientResourceStatus_UNKNOWN},
	} {
		if got := Status(AfterDataError(tc.reason)); got != tc.want {
			t.Errorf("Status(AfterDataError(%v)) = %v, want %v", tc.reason, got, tc.want)
		}
	}
}

func TestTable(t *testing.T) {
	for _, tc := range []struct {
		state            int
		status           adminpb.ClientResourceStatus
		uncached, cached string
	}{
		{-1, adminpb.ClientResourceStatus_UNKNOWN, "unknown", "unknown"},
		{0, adminpb.ClientResourceStatus_REQUESTED, "requested", "requested"},
		{1, adminpb.ClientResourceStatus_DOES_NOT_EXIST, "does_not_exist", "does_not_exist_but_cached"},
		{2, adminpb.ClientResourceStatus_ACKED, "acked", "acked"},
		{3, adminpb.ClientResourceStatus_NACKED, "nacked", "nacked_but_cached"},
		{4, adminpb.ClientResourceStatus_RECEIVED_ERROR, "received_error", "received_error_but_cached"},
		{5, adminpb.ClientResourceStatus_TIMEOUT, "timeout", "timeout"},
		{6, adminpb.ClientResourceStatus_UNKNOWN, "unknown", "unknown"},
	} {
		if got := Status(tc.state); got != tc.status {
			t.Errorf("Status(%d) = %v, want %v", tc.state, got, tc.status)
		}
		if got := Label(tc.state, false); got != tc.uncached {
			t.Errorf("Label(%d, false) = %q, want %q", tc.state, got, tc.uncached)
		}
		if got := Label(tc.state, true); got != tc.cached {
			t.Errorf("Label(%d, true) = %q, want %q", tc.state, got, tc.cached)
		}
	}
}
