package xdsgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

func TestMain(m *testing.M) {
	if kind := os.Getenv(pushClientEnv); kind != "" { // a child of BenchmarkUnchangedPush
		if err := runPushClient(kind, []byte(os.Getenv(pushBootstrapEnv)), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "push client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// testBackend is a gRPC server on loopback that answers every method
// with an empty message and names itself in the "backend" header.
type testBackend struct {
	name string
	addr string
	srv  *grpc.Server

	mu    sync.Mutex
	calls int           // calls received
	last  metadata.MD   // the last call's metadata
	hold  chan struct{} // when set, calls wait on it
}

func startBackend(t testing.TB, name string) *testBackend {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &testBackend{name: name, addr: lis.Addr().String()}
	b.srv = grpc.NewServer(grpc.UnknownServiceHandler(b.handle))
	go b.srv.Serve(lis)
	t.Cleanup(b.srv.Stop)
	return b
}

func (b *testBackend) handle(_ any, stream grpc.ServerStream) error {
	var in emptypb.Empty
	if err := stream.RecvMsg(&in); err != nil {
		return err
	}
	md, _ := metadata.FromIncomingContext(stream.Context())
	b.mu.Lock()
	b.calls++
	b.last = md
	hold := b.hold
	b.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
	}
	if err := stream.SetHeader(metadata.Pairs("backend", b.name)); err != nil {
		return err
	}
	return stream.SendMsg(&emptypb.Empty{})
}

func (b *testBackend) lastSeen() metadata.MD {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

func (b *testBackend) received() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

const testMethod = "/test.Service/Call"

// call makes one RPC and returns the name of the backend that served it.
func call(ctx context.Context, cc *grpc.ClientConn, method string, md ...string) (string, error) {
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	var hdr metadata.MD
	err := cc.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{}, grpc.Header(&hdr))
	if err != nil {
		return "", err
	}
	if v := hdr.Get("backend"); len(v) == 1 {
		return v[0], nil
	}
	return "", errors.New("no backend header")
}

// spread makes n RPCs and counts them by backend.
func spread(t testing.TB, cc *grpc.ClientConn, n int, method string, md ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range n {
		b, err := call(ctx, cc, method, md...)
		if err != nil {
			t.Fatalf("RPC %s: %v", method, err)
		}
		out[b]++
	}
	return out
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitForBackend waits until RPCs (with md) reach backend want.
func waitForBackend(t testing.TB, cc *grpc.ClientConn, want string, md ...string) {
	t.Helper()
	var last string
	var lastErr error
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		last, lastErr = call(ctx, cc, testMethod, md...)
		cancel()
		if lastErr == nil && last == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("RPCs never reached %s: last reached %q, error %v", want, last, lastErr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// newEngine returns an engine on the management server srv, closed when
// the test ends.
func newEngine(t testing.TB, srv *xdstest.Server, mutate func(*engine.Config)) *engine.Engine {
	t.Helper()
	return engineOn(t, srv.Bootstrap(xdstest.BootstrapOptions{}), mutate)
}

// newBuilder returns a builder over src, closed when the test ends
// (before the engine, whose cleanup was registered first).
func newBuilder(t testing.TB, opts xdsgrpc.Options) *xdsgrpc.Builder {
	t.Helper()
	b, err := xdsgrpc.NewBuilder(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// dial makes a channel to target through b, closed when the test ends.
func dial(t testing.TB, b *xdsgrpc.Builder, target string) *grpc.ClientConn {
	t.Helper()
	cc, err := b.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()), xdstest.FastReconnect)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// env is a management server, an engine on it and a builder over the
// engine: what most tests start from.
type env struct {
	srv *xdstest.Server
	e   *engine.Engine
	b   *xdsgrpc.Builder
}

func newEnv(t testing.TB, opts xdsgrpc.Options) *env {
	t.Helper()
	srv := xdstest.NewServer(t, xdstest.Options{})
	e := newEngine(t, srv, nil)
	opts.Source = e
	return &env{srv: srv, e: e, b: newBuilder(t, opts)}
}

// --- resources ---

// basic is a listener "svc" on route "route" to the given clusters.
func basic(routes *routepb.RouteConfiguration, rest ...xdstest.Resource) []xdstest.Resource {
	return append([]xdstest.Resource{
		xdstest.R("svc", xdstest.Listener("svc", routes.Name)),
		xdstest.R(routes.Name, routes),
	}, rest...)
}

func routeConfig(routes ...*routepb.Route) *routepb.RouteConfiguration {
	return &routepb.RouteConfiguration{Name: "route", VirtualHosts: []*routepb.VirtualHost{{
		Name: "vh", Domains: []string{"*"}, Routes: routes,
	}}}
}

func prefix(p string) *routepb.RouteMatch {
	return &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: p}}
}

func toCluster(m *routepb.RouteMatch, cluster string) *routepb.Route {
	return &routepb.Route{Match: m, Action: &routepb.Route_Route{Route: &routepb.RouteAction{
		ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: cluster}}}}
}

func weighted(m *routepb.RouteMatch, clusters ...any) *routepb.Route {
	wc := &routepb.WeightedCluster{}
	for i := 0; i < len(clusters); i += 2 {
		wc.Clusters = append(wc.Clusters, &routepb.WeightedCluster_ClusterWeight{
			Name: clusters[i].(string), Weight: wrapperspb.UInt32(uint32(clusters[i+1].(int)))})
	}
	return &routepb.Route{Match: m, Action: &routepb.Route_Route{Route: &routepb.RouteAction{
		ClusterSpecifier: &routepb.RouteAction_WeightedClusters{WeightedClusters: wc}}}}
}

// cluster is an EDS cluster "name" on endpoints "name-eds", with mutations.
func cluster(name string, mutate ...func(*clusterpb.Cluster)) xdstest.Resource {
	c := xdstest.Cluster(name, name+"-eds")
	for _, m := range mutate {
		m(c)
	}
	return xdstest.R(name, c)
}

// endpoints is the ClusterLoadAssignment of cluster name.
func endpoints(name string, localities ...xdstest.Locality) xdstest.Resource {
	return xdstest.R(name+"-eds", xdstest.ClusterLoadAssignment(name+"-eds", localities...))
}

func endpointsWith(name string, mutate func(*endpointpb.ClusterLoadAssignment), localities ...xdstest.Locality) xdstest.Resource {
	cla := xdstest.ClusterLoadAssignment(name+"-eds", localities...)
	mutate(cla)
	return xdstest.R(name+"-eds", cla)
}

func addrs(bs ...*testBackend) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.addr
	}
	return out
}

// setHealth sets the health status of every endpoint of the locality
// at index i.
func setHealth(i int, h corepb.HealthStatus) func(*endpointpb.ClusterLoadAssignment) {
	return func(cla *endpointpb.ClusterLoadAssignment) {
		for _, e := range cla.Endpoints[i].LbEndpoints {
			e.HealthStatus = h
		}
	}
}

// shares renders counts as percentages, sorted, for messages.
func shares(counts map[string]int) string {
	total := 0
	var names []string
	for n, c := range counts {
		total += c
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f%%", n, 100*float64(counts[n])/float64(total)))
	}
	return strings.Join(parts, ", ")
}

func emptyMsg() *emptypb.Empty { return &emptypb.Empty{} }
