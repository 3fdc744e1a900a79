package relay_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/xds"

	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// serveBackend serves gRPC health on loopback, name SERVING.
func serveBackend(name string) (addr string, stop func(), err error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	s := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, hs)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	return lis.Addr().String(), func() { s.Stop(); <-done }, nil
}

// backend is a gRPC server on loopback whose health service reports
// name as SERVING, so that a client can tell which backend it reached.
func backend(t *testing.T, name string) string {
	t.Helper()
	addr, stop, err := serveBackend(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// grpcGoClient is grpc-go's own xDS client of "xds:///service", node
// "grpc-go" in cluster "blue", bootstrapped to the relay r; the test's
// end closes it.
func grpcGoClient(t *testing.T, r *relaytest.Server) *grpc.ClientConn {
	t.Helper()
	resolver, err := xds.NewXDSResolverWithConfigForTesting(r.Bootstrap(relaytest.BootstrapOptions{NodeID: "grpc-go", Cluster: "blue"}))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("xds:///service", grpc.WithResolvers(resolver), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestGRPCClient: grpc-go's own xDS client, an outside client, resolves a
// target through the relay (LDS, RDS, CDS, EDS) and follows an update of
// its endpoints.
func TestGRPCClient(t *testing.T) {
	one, two := backend(t, "one"), backend(t, "two")
	up := newUpstream(t, "upstream")
	up.Set(
		xdstest.R("service", xdstest.Listener("service", "route-1")),
		xdstest.R("route-1", xdstest.RouteConfig("route-1", "cluster-1")),
		xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-1")),
		xdstest.R("eds-1", xdstest.ClusterLoadAssignment("eds-1", xdstest.Locality{Zone: "a", Endpoints: []string{one}})),
	)
	r := newRelay(t, up, relaytest.Options{}, nil)
	cc := grpcGoClient(t, r)
	hc := healthpb.NewHealthClient(cc)
	reaches := func(name string) func() bool {
		return func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
			return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
		}
	}
	waitUntil(t, "an RPC through the relay's configuration to backend one", reaches("one"))
	up.Update(eds.TypeURL, xdstest.R("eds-1", xdstest.ClusterLoadAssignment("eds-1", xdstest.Locality{Zone: "a", Endpoints: []string{two}})))
	waitUntil(t, "RPCs to follow the endpoints to backend two", reaches("two"))
	if s := keyStatus(t, r.Relay()); s.Watches != 4 {
		t.Errorf("the relay has %d watches of grpc-go's, want 4 (LDS, RDS, CDS, EDS): %+v", s.Watches, s)
	}
}
