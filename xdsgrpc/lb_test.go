package xdsgrpc_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	cswrrpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	leastrequestpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	pickfirstpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	ringhashpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/internal/testutil/fakeclock"
	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

// lbPolicy sets a Cluster's load_balancing_policy to one policy (gRFC A52).
func lbPolicy(m proto.Message) func(*clusterpb.Cluster) {
	return func(c *clusterpb.Cluster) {
		c.LoadBalancingPolicy = &clusterpb.LoadBalancingPolicy{Policies: []*clusterpb.LoadBalancingPolicy_Policy{{
			TypedExtensionConfig: &corepb.TypedExtensionConfig{Name: "policy", TypedConfig: mustAny(m)},
		}}}
	}
}

func hashByHeader(r *routepb.Route, name string) *routepb.Route {
	r.GetRoute().HashPolicy = append(r.GetRoute().HashPolicy, &routepb.RouteAction_HashPolicy{
		PolicySpecifier: &routepb.RouteAction_HashPolicy_Header_{Header: &routepb.RouteAction_HashPolicy_Header{HeaderName: name}}})
	return r
}

// TestPolicies: each policy a Cluster selects runs as grpc-go's own
// balancer of that policy, and shows its behaviour on real backends.
func TestPolicies(t *testing.T) {
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	backends := addrs(a, b, c)
	cases := []struct {
		name   string
		policy func(*clusterpb.Cluster)
		hash   bool
		check  func(t *testing.T, cc *grpc.ClientConn)
	}{
		{"round_robin (lb_policy ROUND_ROBIN)", nil, false, func(t *testing.T, cc *grpc.ClientConn) {
			waitFor(t, "every backend READY", func() bool { return len(spread(t, cc, 3, testMethod)) == 3 })
			got := spread(t, cc, 99, testMethod)
			if got["a"] != 33 || got["b"] != 33 || got["c"] != 33 {
				t.Errorf("99 RPCs went %v, want 33 to each backend", got)
			}
		}},
		{"pick_first", lbPolicy(&pickfirstpb.PickFirst{}), false, func(t *testing.T, cc *grpc.ClientConn) {
			if got := spread(t, cc, 30, testMethod); len(got) != 1 {
				t.Errorf("30 RPCs went %v, want all to one backend", got)
			}
		}},
		{"ring_hash by header (gRFC A42)", lbPolicy(&ringhashpb.RingHash{HashFunction: ringhashpb.RingHash_XX_HASH}), true, func(t *testing.T, cc *grpc.ClientConn) {
			used := map[string]bool{}
			for i := range 30 {
				key := fmt.Sprint("user-", i)
				got := spread(t, cc, 5, testMethod, "x-user", key)
				if len(got) != 1 {
					t.Fatalf("5 RPCs with x-user %s went %v, want all to one backend", key, got)
				}
				for b := range got {
					used[b] = true
				}
			}
			if len(used) < 2 {
				t.Errorf("30 users all went to %v, want them spread over the ring", used)
			}
		}},
		{"ring_hash without a hash policy picks at random (gRFC A76)", lbPolicy(&ringhashpb.RingHash{}), false, func(t *testing.T, cc *grpc.ClientConn) {
			if got := spread(t, cc, 60, testMethod); len(got) < 2 {
				t.Errorf("60 RPCs went %v, want them spread", got)
			}
		}},
		{"client_side_weighted_round_robin", lbPolicy(&cswrrpb.ClientSideWeightedRoundRobin{}), false, func(t *testing.T, cc *grpc.ClientConn) {
			// Its picker has only the backends READY so far.
			warm(t, cc, []string{"a", "b", "c"})
			if got := spread(t, cc, 60, testMethod); len(got) != 3 {
				t.Errorf("60 RPCs went %v, want every backend (equal weights without load reports)", got)
			}
		}},
		{"least_request avoids the busy backend", lbPolicy(&leastrequestpb.LeastRequest{ChoiceCount: wrapperspb.UInt32(2)}), false, func(t *testing.T, cc *grpc.ClientConn) {
			spread(t, cc, 9, testMethod) // every backend connected
			hold := make(chan struct{})
			a.mu.Lock()
			a.hold = hold
			before := a.calls
			a.mu.Unlock()
			defer func() {
				a.mu.Lock()
				a.hold = nil
				a.mu.Unlock()
			}()
			var wg sync.WaitGroup
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			const n = 45
			for range n {
				wg.Add(1)
				go func() { defer wg.Done(); call(ctx, cc, testMethod) }()
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
			held := a.received() - before
			close(hold)
			wg.Wait()
			// Round robin would send a third to a; least_request sends
			// there only when both choices fall on it.
			if held >= n/3 {
				t.Errorf("%d of %d RPCs went to the backend holding them, want fewer than a third", held, n)
			}
		}},
	}
	ev := newEnv(t, xdsgrpc.Options{})
	var resources []xdstest.Resource
	for i, c := range cases {
		lis, rc, cl := fmt.Sprintf("svc-%d", i), fmt.Sprintf("route-%d", i), fmt.Sprintf("c%d", i)
		r := toCluster(prefix(""), cl)
		if c.hash {
			r = hashByHeader(r, "x-user")
		}
		routes := routeConfig(r)
		routes.Name = rc
		var mutate []func(*clusterpb.Cluster)
		if c.policy != nil {
			mutate = append(mutate, c.policy)
		}
		resources = append(resources, xdstest.R(lis, xdstest.Listener(lis, rc)), xdstest.R(rc, routes),
			cluster(cl, mutate...), endpoints(cl, xdstest.Locality{Zone: "z", Endpoints: backends}))
	}
	ev.srv.Set(resources...)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, dial(t, ev.b, fmt.Sprintf("xdsengine:///svc-%d", i)))
		})
	}
}

// TestLocalityWeights: round robin in a Cluster (wrr_locality) spreads
// RPCs over localities by their weight, then within a locality evenly;
// endpoint weights are for ring_hash, as in gRPC.
func TestLocalityWeights(t *testing.T) {
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	ev := newEnv(t, xdsgrpc.Options{})
	ev.srv.Set(basic(routeConfig(toCluster(prefix(""), "c1")), cluster("c1"), endpoints("c1",
		xdstest.Locality{Zone: "z1", Weight: 3, Endpoints: addrs(a, b)},
		xdstest.Locality{Zone: "z2", Weight: 1, Endpoints: addrs(c)}))...)
	cc := dial(t, ev.b, "xdsengine:///svc")
	warm(t, cc, []string{"a", "b", "c"})
	got := spread(t, cc, 400, testMethod)
	if math.Abs(float64(got["a"]+got["b"])-300) > 4 || math.Abs(float64(got["a"]-got["b"])) > 2 {
		t.Fatalf("400 RPCs went %s; want 75 %% to zone z1 (weight 3), split evenly, and 25 %% to z2", shares(got))
	}
}

// TestHealthStatus: only HEALTHY and UNKNOWN endpoints take RPCs
// (gRFC A27).
func TestHealthStatus(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	cases := []struct {
		status corepb.HealthStatus
		usable bool
	}{
		{corepb.HealthStatus_HEALTHY, true},
		{corepb.HealthStatus_UNKNOWN, true},
		{corepb.HealthStatus_UNHEALTHY, false},
		{corepb.HealthStatus_DRAINING, false},
		{corepb.HealthStatus_TIMEOUT, false},
		{corepb.HealthStatus_DEGRADED, false},
	}
	ev := newEnv(t, xdsgrpc.Options{})
	var resources []xdstest.Resource
	for i, c := range cases {
		lis, rc, cl := fmt.Sprintf("svc-%d", i), fmt.Sprintf("route-%d", i), fmt.Sprintf("c%d", i)
		routes := routeConfig(toCluster(prefix(""), cl))
		routes.Name = rc
		st := c.status
		resources = append(resources, xdstest.R(lis, xdstest.Listener(lis, rc)), xdstest.R(rc, routes), cluster(cl),
			endpointsWith(cl, func(cla *endpointpb.ClusterLoadAssignment) { cla.Endpoints[0].LbEndpoints[0].HealthStatus = st },
				xdstest.Locality{Zone: "z", Endpoints: addrs(a, b)}))
	}
	ev.srv.Set(resources...)
	for i, c := range cases {
		t.Run(c.status.String(), func(t *testing.T) {
			got := spread(t, dial(t, ev.b, fmt.Sprintf("xdsengine:///svc-%d", i)), 20, testMethod)
			if (got["a"] > 0) != c.usable || got["b"] == 0 {
				t.Errorf("20 RPCs went %v; endpoint a is %v, usable %v", got, c.status, c.usable)
			}
		})
	}
}

// TestPriorityFailover: traffic goes to priority 0; when its endpoints
// go (UNHEALTHY), to priority 1; back to 0 when they return.
func TestPriorityFailover(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	ev := newEnv(t, xdsgrpc.Options{})
	locs := []xdstest.Locality{{Zone: "z0", Priority: 0, Endpoints: addrs(a)}, {Zone: "z1", Priority: 1, Endpoints: addrs(b)}}
	set := func(h corepb.HealthStatus) {
		ev.srv.Set(basic(routeConfig(toCluster(prefix(""), "c1")), cluster("c1"), endpointsWith("c1", setHealth(0, h), locs...))...)
	}
	set(corepb.HealthStatus_HEALTHY)
	cc := dial(t, ev.b, "xdsengine:///svc")
	if got := spread(t, cc, 10, testMethod); got["a"] != 10 {
		t.Fatalf("10 RPCs went %v, want all to priority 0", got)
	}
	set(corepb.HealthStatus_UNHEALTHY)
	waitForBackend(t, cc, "b")
	if got := spread(t, cc, 10, testMethod); got["b"] != 10 {
		t.Fatalf("after failover 10 RPCs went %v, want all to priority 1", got)
	}
	set(corepb.HealthStatus_HEALTHY)
	waitForBackend(t, cc, "a")
	if got := spread(t, cc, 10, testMethod); got["a"] != 10 {
		t.Fatalf("after priority 0 returned 10 RPCs went %v, want all to it", got)
	}
}

// blackHole accepts TCP connections and never speaks: a channel to it
// stays CONNECTING until its connect timeout.
func blackHole(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return lis.Addr().String()
}

// TestFailoverTimer: a priority stuck CONNECTING fails over to the next
// when the failover timer (10 s, gRFC A56) fires, on the injected clock.
func TestFailoverTimer(t *testing.T) {
	b := startBackend(t, "b")
	clk := fakeclock.New(time.Unix(0, 0))
	ev := newEnv(t, xdsgrpc.Options{Clock: clk})
	ev.srv.Set(basic(routeConfig(toCluster(prefix(""), "c1")), cluster("c1"), endpoints("c1",
		xdstest.Locality{Zone: "z0", Priority: 0, Endpoints: []string{blackHole(t)}},
		xdstest.Locality{Zone: "z1", Priority: 1, Endpoints: addrs(b)}))...)
	// gRPC's own 20 s connect timeout, so the priority stays CONNECTING.
	cc, err := ev.b.NewClient("xdsengine:///svc", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	result := make(chan string, 1)
	go func() {
		got, err := call(ctx, cc, testMethod)
		if err != nil {
			got = err.Error()
		}
		result <- got
	}()
	clk.WaitForTimer(t, xdsgrpc.DefaultFailoverTimeout)
	select {
	case got := <-result:
		t.Fatalf("the RPC ended (%s) before the failover timer fired", got)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Advance(xdsgrpc.DefaultFailoverTimeout)
	if got := <-result; got != "b" {
		t.Fatalf("after the failover timer the RPC got %q, want priority 1's backend b", got)
	}
}

// TestEndpointWeights: ring_hash places endpoints on its ring by weight,
// locality weight times endpoint weight as grpc-go computes it (gRFC
// A113): RPCs without a hash land on each endpoint about in proportion.
func TestEndpointWeights(t *testing.T) {
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	ev := newEnv(t, xdsgrpc.Options{})
	// A ring of 4,096 entries (grpc-go's cap), so that each endpoint's
	// share of it is close to its weight: the entries' places are hashes.
	ring := &ringhashpb.RingHash{MinimumRingSize: wrapperspb.UInt64(4096), MaximumRingSize: wrapperspb.UInt64(4096)}
	ev.srv.Set(basic(routeConfig(toCluster(prefix(""), "c1")), cluster("c1", lbPolicy(ring)),
		endpointsWith("c1", func(cla *endpointpb.ClusterLoadAssignment) {
			// Locality z1 (a, b) weighs 3 × z2 (c); within z1, b weighs 2 × a.
			cla.Endpoints[0].LbEndpoints[1].LoadBalancingWeight = wrapperspb.UInt32(2)
		}, xdstest.Locality{Zone: "z1", Weight: 3, Endpoints: addrs(a, b)}, xdstest.Locality{Zone: "z2", Weight: 1, Endpoints: addrs(c)}))...)
	cc := dial(t, ev.b, "xdsengine:///svc")
	warm(t, cc, []string{"a", "b", "c"})
	const n = 1200
	got := spread(t, cc, n, testMethod)
	t.Logf("%d RPCs: %s", n, shares(got))
	want := map[string]float64{"a": 0.25, "b": 0.5, "c": 0.25}
	for name, share := range want {
		if d := float64(got[name])/n - share; d > 0.06 || d < -0.06 {
			t.Errorf("%d RPCs went %s; want a 25 %%, b 50 %%, c 25 %% (within 6 %%)", n, shares(got))
			break
		}
	}
}

// TestEndpointHashKey: ring_hash places an endpoint by the hash_key of
// its "envoy.lb" metadata when it has one (gRFC A76), not by its address:
// swapping the keys of two endpoints swaps the RPCs they get.
func TestEndpointHashKey(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	ev := newEnv(t, xdsgrpc.Options{})
	keys := func(ka, kb string) func(*endpointpb.ClusterLoadAssignment) {
		return func(cla *endpointpb.ClusterLoadAssignment) {
			for i, k := range []string{ka, kb} {
				cla.Endpoints[0].LbEndpoints[i].Metadata = &corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{
					"envoy.lb": {Fields: map[string]*structpb.Value{"hash_key": structpb.NewStringValue(k)}}}}
			}
		}
	}
	set := func(ka, kb string) {
		ev.srv.Set(basic(routeConfig(hashByHeader(toCluster(prefix(""), "c1"), "x-user")),
			cluster("c1", lbPolicy(&ringhashpb.RingHash{})),
			endpointsWith("c1", keys(ka, kb), xdstest.Locality{Zone: "z", Endpoints: addrs(a, b)}))...)
	}
	route := func(cc *grpc.ClientConn) []string {
		var out []string
		for i := range 20 {
			got := spread(t, cc, 1, testMethod, "x-user", fmt.Sprint("user-", i))
			for name := range got {
				out = append(out, name)
			}
		}
		return out
	}
	set("alpha", "beta")
	cc := dial(t, ev.b, "xdsengine:///svc")
	before := route(cc)
	set("beta", "alpha")
	waitFor(t, "the swapped keys", func() bool { return spread(t, cc, 1, testMethod, "x-user", "user-0")[before[0]] == 0 })
	after := route(cc)
	for i := range before {
		if before[i] == after[i] {
			t.Fatalf("user-%d went to %s with either key: %v, then %v", i, before[i], before, after)
		}
	}
}

// TestPriorityFailoverOnBackendLoss: when priority 0's backend goes down
// (its connections fail; EDS does not change), traffic goes to priority
// 1 at once; when the backend is back, to priority 0 again.
func TestPriorityFailoverOnBackendLoss(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	ev := newEnv(t, xdsgrpc.Options{})
	ev.srv.Set(basic(routeConfig(toCluster(prefix(""), "c1")), cluster("c1"), endpoints("c1",
		xdstest.Locality{Zone: "z0", Priority: 0, Endpoints: addrs(a)},
		xdstest.Locality{Zone: "z1", Priority: 1, Endpoints: addrs(b)}))...)
	cc := dial(t, ev.b, "xdsengine:///svc")
	waitForBackend(t, cc, "a")
	a.srv.Stop()
	waitForBackend(t, cc, "b")
	lis, err := net.Listen("tcp", a.addr)
	if err != nil {
		t.Fatalf("the backend cannot listen again on %s: %v", a.addr, err)
	}
	a.srv = grpc.NewServer(grpc.UnknownServiceHandler(a.handle))
	go a.srv.Serve(lis)
	t.Cleanup(a.srv.Stop)
	waitForBackend(t, cc, "a")
}
