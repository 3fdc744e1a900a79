package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/features"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}
	want := `bootstrap server_features:
  default       ["xds_v3"]
  fail-on-nack  ["xds_v3" "example.com/fail_on_nack"]

server: version 1, a valid cluster
  default       OnResourceChanged(cluster: EDS backend-endpoints, xds_wrr_locality_experimental(round_robin))
  fail-on-nack  OnResourceChanged(cluster: EDS backend-endpoints, xds_wrr_locality_experimental(round_robin))

server: version 2, lb_policy MAGLEV (invalid)
  default       OnAmbientError(InvalidArgument, NACK): keeps the cluster
  fail-on-nack  OnResourceChanged(InvalidArgument, NACK): stops using the cluster
  the error:    invalid resource: lb_policy: MAGLEV is not supported; must be ROUND_ROBIN, RING_HASH or LEAST_REQUEST
CSDS:
  default       backend NACKED: cached version 1
  fail-on-nack  backend NACKED: no cached cluster

server: version 3, the valid cluster again
  default       OnAmbientError(nil): the problem is over, keeps the cluster
  fail-on-nack  OnResourceChanged(cluster: EDS backend-endpoints, xds_wrr_locality_experimental(round_robin))
CSDS:
  default       backend ACKED: cached version 3
  fail-on-nack  backend ACKED: cached version 3
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
}

// TestFailOnNACK checks the feature's decision directly, as the engine
// folds it: NACKs drop, other data errors keep the decision so far.
func TestFailOnNACK(t *testing.T) {
	set := features.Resolve([]string{"xds_v3", failOnNACKName}, append(features.Builtin(), failOnNACK{})...)
	for _, tc := range []struct {
		reason features.Reason
		code   codes.Code
		want   features.Action
	}{
		{features.ReasonNACK, codes.InvalidArgument, features.Drop},
		{features.ReasonDeletion, codes.NotFound, features.Keep},
		{features.ReasonServerReported, codes.PermissionDenied, features.Keep},
	} {
		ev := features.ErrorEvent{Class: features.DataError, Reason: tc.reason, Code: tc.code}
		if got := set.ErrorAction(ev, features.Keep); got != tc.want {
			t.Errorf("ErrorAction(%v) = %v, want %v", tc.reason, got, tc.want)
		}
	}
}
