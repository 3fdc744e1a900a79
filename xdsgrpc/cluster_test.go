package xdsgrpc_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	aggregatepb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	pickfirstpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

func aggregate(name string, children ...string) xdstest.Resource {
	return xdstest.R(name, &clusterpb.Cluster{
		Name: name,
		ClusterDiscoveryType: &clusterpb.Cluster_ClusterType{ClusterType: &clusterpb.Cluster_CustomClusterType{
			Name: "envoy.clusters.aggregate", TypedConfig: mustAny(&aggregatepb.ClusterConfig{Clusters: children}),
		}},
		LbPolicy: clusterpb.Cluster_RING_HASH, // ignored: each leaf cluster's own policy applies (gRFC A75)
	})
}

// TestAggregateCluster: an aggregate cluster sends to its first leaf
// cluster that can take RPCs, each leaf with its own policy (gRFC A37,
// A75); a leaf that does not exist is skipped (gRFC A74), and one whose
// endpoints all go fails over to the next.
func TestAggregateCluster(t *testing.T) {
	a, b1, b2 := startBackend(t, "a"), startBackend(t, "b1"), startBackend(t, "b2")
	srv := xdstest.NewServer(t, xdstest.Options{})
	e := newEngine(t, srv, func(c *engine.Config) { c.ResourceTimeout = 100 * time.Millisecond })
	bld := newBuilder(t, xdsgrpc.Options{Source: e})
	set := func(primary corepb.HealthStatus) {
		srv.Set(basic(routeConfig(toCluster(prefix(""), "agg")),
			aggregate("agg", "missing", "inner"),
			aggregate("inner", "primary", "secondary"),
			cluster("primary"), endpointsWith("primary", setHealth(0, primary), xdstest.Locality{Zone: "z", Endpoints: addrs(a)}),
			cluster("secondary", lbPolicy(&pickfirstpb.PickFirst{})), endpoints("secondary", xdstest.Locality{Zone: "z", Endpoints: addrs(b1, b2)}),
		)...)
	}
	set(corepb.HealthStatus_HEALTHY)
	cc := dial(t, bld, "xdsengine:///svc")
	if got := spread(t, cc, 10, testMethod); got["a"] != 10 {
		t.Fatalf("10 RPCs went %v, want all to the first leaf cluster that exists", got)
	}
	set(corepb.HealthStatus_UNHEALTHY)
	waitFor(t, "the secondary cluster", func() bool {
		got := spread(t, cc, 1, testMethod)
		return got["a"] == 0
	})
	if got := spread(t, cc, 20, testMethod); len(got) != 1 || got["a"] != 0 {
		t.Fatalf("20 RPCs went %v, want all to one backend of the secondary cluster (pick_first)", got)
	}
}

// TestAggregateWithoutLeaves: an aggregate cluster none of whose leaves
// exist fails its RPCs, naming them.
func TestAggregateWithoutLeaves(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	e := newEngine(t, srv, func(c *engine.Config) { c.ResourceTimeout = 100 * time.Millisecond })
	bld := newBuilder(t, xdsgrpc.Options{Source: e})
	srv.Set(basic(routeConfig(toCluster(prefix(""), "agg")), aggregate("agg", "gone-1", "gone-2"))...)
	err := waitForError(t, dial(t, bld, "xdsengine:///svc"), codes.Unavailable, "gone-2")
	if !strings.Contains(err.Error(), "gone-1") {
		t.Fatalf("got %v, want both missing leaves named", err)
	}
}

// loadServer is an LRS server that adds up what clients report, by
// cluster.
type loadServer struct {
	lrspb.UnimplementedLoadReportingServiceServer
	mu      sync.Mutex
	ok      map[string]uint64
	dropped map[string]uint64 // cluster, or cluster/category
	issued  map[string]uint64
}

func newLoadServer() *loadServer {
	return &loadServer{ok: map[string]uint64{}, dropped: map[string]uint64{}, issued: map[string]uint64{}}
}

func (s *loadServer) StreamLoadStats(st lrspb.LoadReportingService_StreamLoadStatsServer) error {
	if _, err := st.Recv(); err != nil {
		return err
	}
	if err := st.Send(&lrspb.LoadStatsResponse{SendAllClusters: true, LoadReportingInterval: durationpb.New(20 * time.Millisecond)}); err != nil {
		return err
	}
	for {
		req, err := st.Recv()
		if err != nil {
			return nil
		}
		s.mu.Lock()
		for _, cs := range req.GetClusterStats() {
			name := cs.GetClusterName()
			s.dropped[name] += cs.GetTotalDroppedRequests()
			for _, d := range cs.GetDroppedRequests() {
				s.dropped[name+"/"+d.GetCategory()] += d.GetDroppedCount()
			}
			for _, l := range cs.GetUpstreamLocalityStats() {
				s.ok[name+"/"+l.GetLocality().GetZone()] += l.GetTotalSuccessfulRequests()
				s.issued[name+"/"+l.GetLocality().GetZone()] += l.GetTotalIssuedRequests()
			}
		}
		s.mu.Unlock()
	}
}

func (s *loadServer) get(m map[string]uint64, key string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return m[key]
}

func reportToSelf(c *clusterpb.Cluster) {
	c.LrsServer = &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Self{Self: &corepb.SelfConfigSource{}}}
}

func maxRequests(n uint32) func(*clusterpb.Cluster) {
	return func(c *clusterpb.Cluster) {
		c.CircuitBreakers = &clusterpb.CircuitBreakers{Thresholds: []*clusterpb.CircuitBreakers_Thresholds{{
			Priority: corepb.RoutingPriority_DEFAULT, MaxRequests: wrapperspb.UInt32(n)}}}
	}
}

// TestCircuitBreaking: with max_requests in flight, the next RPC fails at
// once with UNAVAILABLE (gRFC A32) and counts as dropped in the load
// report; calls that finish make room again.
func TestCircuitBreaking(t *testing.T) {
	a := startBackend(t, "a")
	loads := newLoadServer()
	srv := xdstest.NewServer(t, xdstest.Options{Register: func(s *grpc.Server) { lrspb.RegisterLoadReportingServiceServer(s, loads) }})
	e := newEngine(t, srv, nil)
	bld := newBuilder(t, xdsgrpc.Options{Source: e})
	srv.Set(basic(routeConfig(toCluster(prefix(""), "c1")), cluster("c1", maxRequests(2), reportToSelf),
		endpoints("c1", xdstest.Locality{Zone: "z", Endpoints: addrs(a)}))...)
	cc := dial(t, bld, "xdsengine:///svc")
	waitForBackend(t, cc, "a")

	hold := make(chan struct{})
	a.mu.Lock()
	a.hold = hold
	before := a.calls
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); call(ctx, cc, testMethod) }()
	}
	waitFor(t, "two RPCs in flight", func() bool { return a.received() == before+2 })
	_, err := call(ctx, cc, testMethod)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "max_requests") {
		t.Fatalf("a third RPC got %v, want UNAVAILABLE from the circuit breaker", err)
	}
	close(hold)
	wg.Wait()
	a.mu.Lock()
	a.hold = nil
	a.mu.Unlock()
	if _, err := call(ctx, cc, testMethod); err != nil {
		t.Fatalf("after the calls finished: %v", err)
	}
	waitFor(t, "the load report", func() bool {
		return loads.get(loads.dropped, "c1") == 1 && loads.get(loads.ok, "c1/z") == 4
	})
}

// TestDropOverloads: EDS drop_overloads drop their share of RPCs with
// UNAVAILABLE, reported by category; the rest reach the backend and are
// reported by locality.
func TestDropOverloads(t *testing.T) {
	a := startBackend(t, "a")
	loads := newLoadServer()
	srv := xdstest.NewServer(t, xdstest.Options{Register: func(s *grpc.Server) { lrspb.RegisterLoadReportingServiceServer(s, loads) }})
	e := newEngine(t, srv, nil)
	bld := newBuilder(t, xdsgrpc.Options{Source: e})
	drops := func(percent uint32) func(*endpointpb.ClusterLoadAssignment) {
		return func(cla *endpointpb.ClusterLoadAssignment) {
			cla.Policy = &endpointpb.ClusterLoadAssignment_Policy{DropOverloads: []*endpointpb.ClusterLoadAssignment_Policy_DropOverload{{
				Category: "throttle", DropPercentage: &typepb.FractionalPercent{Numerator: percent, Denominator: typepb.FractionalPercent_HUNDRED}}}}
		}
	}
	srv.Set(basic(routeConfig(toCluster(prefix(""), "c1")), cluster("c1", reportToSelf),
		endpointsWith("c1", drops(50), xdstest.Locality{Zone: "z", Endpoints: addrs(a)}))...)
	cc := dial(t, bld, "xdsengine:///svc")
	waitForBackend(t, cc, "a")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ok, dropped uint64
	for range 400 {
		_, err := call(ctx, cc, testMethod)
		switch {
		case err == nil:
			ok++
		case status.Code(err) == codes.Unavailable && strings.Contains(err.Error(), `"throttle"`):
			dropped++
		default:
			t.Fatal(err)
		}
	}
	if dropped < 140 || dropped > 260 {
		t.Fatalf("%d of 400 RPCs dropped, want about half", dropped)
	}
	// waitForBackend's RPCs count too, so at least what this loop saw.
	waitFor(t, "the load report", func() bool {
		d := loads.get(loads.dropped, "c1/throttle")
		return d >= dropped && loads.get(loads.dropped, "c1") == d && loads.get(loads.ok, "c1/z") >= ok
	})
}
