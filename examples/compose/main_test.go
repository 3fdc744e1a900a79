package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}
	want := `mux: Cluster → engine on server B, everything else → engine on server A

graph (server, resource):
  A  Listener shop.example.com: RDS shop-routes
  A    RouteConfiguration shop-routes: all [*]: 1 route → backend
  B      Cluster backend: EDS backend-endpoints, xds_wrr_locality_experimental(round_robin)
  A        ClusterLoadAssignment backend-endpoints: region/a p0 w1: 10.0.0.1:8080 10.0.0.2:8080
server A was asked for: ClusterLoadAssignment, Listener, RouteConfiguration
server B was asked for: Cluster

server B: cluster backend now uses EDS backend-canary-endpoints
graph (server, resource):
  A  Listener shop.example.com: RDS shop-routes
  A    RouteConfiguration shop-routes: all [*]: 1 route → backend
  B      Cluster backend: EDS backend-canary-endpoints, xds_wrr_locality_experimental(round_robin)
  A        ClusterLoadAssignment backend-canary-endpoints: region/b p0 w1: 10.0.1.1:8080

server B: down
graph (server, resource):
  A  Listener shop.example.com: RDS shop-routes
  A    RouteConfiguration shop-routes: all [*]: 1 route → backend
  B      Cluster backend: EDS backend-canary-endpoints, xds_wrr_locality_experimental(round_robin)
           ! ambient error: Unavailable, connectivity
  A        ClusterLoadAssignment backend-canary-endpoints: region/b p0 w1: 10.0.1.1:8080
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
}
