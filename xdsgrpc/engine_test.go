package xdsgrpc_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/csds"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/lastgood"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

// oneCluster is a listener "svc" to cluster c1 on the given backends.
func oneCluster(bs ...*testBackend) []xdstest.Resource {
	return basic(routeConfig(toCluster(prefix(""), "c1")), cluster("c1"), endpoints("c1", xdstest.Locality{Zone: "z", Endpoints: addrs(bs...)}))
}

// engineOn is an engine with the bootstrap bs (JSON), closed when the
// test ends.
func engineOn(t testing.TB, bs []byte, mutate func(*engine.Config)) *engine.Engine {
	t.Helper()
	e, err := startEngine(bs, mutate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// startEngine is an engine with the bootstrap bs, the registry of
// xdsgrpc and the transport and backoff of the tests.
func startEngine(bs []byte, mutate func(*engine.Config)) (*engine.Engine, error) {
	parsed, err := bootstrap.Parse(bs)
	if err != nil {
		return nil, err
	}
	reg, err := xdsgrpc.Registry(nil, nil)
	if err != nil {
		return nil, err
	}
	cfg := engine.Config{Bootstrap: parsed, Registry: reg, Transport: transport.GRPC(xdstest.FastReconnect),
		Backoff: func(int) time.Duration { return 20 * time.Millisecond }}
	if mutate != nil {
		mutate(&cfg)
	}
	return engine.New(cfg)
}

// TestDelta: over incremental xDS (server feature delta_xds) the channel
// routes as over State of the World, and follows an EDS change.
func TestDelta(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	srv := xdstest.NewServer(t, xdstest.Options{})
	e := engineOn(t, srv.Bootstrap(xdstest.BootstrapOptions{ServerFeatures: []string{"delta_xds"}}), nil)
	bld := newBuilder(t, xdsgrpc.Options{Source: e})
	srv.Set(oneCluster(a)...)
	cc := dial(t, bld, "xdsengine:///svc")
	waitForBackend(t, cc, "a")
	if st := e.Authorities(); len(st) == 0 || !st[0].Delta {
		t.Fatalf("authorities %+v: want the server spoken to incrementally", st)
	}
	srv.Update(eds.TypeURL, endpoints("c1", xdstest.Locality{Zone: "z", Endpoints: addrs(b)}))
	waitForBackend(t, cc, "b")
}

// TestLastGoodStore: a channel dialed while the management server is down
// routes from the engine's last-known-good store.
func TestLastGoodStore(t *testing.T) {
	a := startBackend(t, "a")
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(oneCluster(a)...)
	path := filepath.Join(t.TempDir(), "lastgood")
	withStore := func(c *engine.Config) {
		st, err := lastgood.Open(path, lastgood.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c.Store = st
	}
	bs := srv.Bootstrap(xdstest.BootstrapOptions{})

	// A first process routes through the server, and keeps what it got.
	first := engineOn(t, bs, withStore)
	bld := newBuilder(t, xdsgrpc.Options{Source: first})
	cc := dial(t, bld, "xdsengine:///svc")
	waitForBackend(t, cc, "a")
	cc.Close()
	bld.Close()
	first.Close()

	// The server goes down; a second process starts and routes at once.
	srv.Stop()
	second := engineOn(t, bs, withStore)
	cc = dial(t, newBuilder(t, xdsgrpc.Options{Source: second}), "xdsengine:///svc")
	if got := spread(t, cc, 5, testMethod); got["a"] != 5 {
		t.Fatalf("with the server down, 5 RPCs went %v, want the stored configuration's backend", got)
	}
	if st := second.Authorities(); len(st) == 0 || st[0].FromStore == 0 {
		t.Fatalf("authorities %+v: want resources served from the store", st)
	}
}

// TestFallback: with the primary management server down, the channel
// routes by the fallback server's configuration (gRFC A71), and by the
// primary's once it is back.
func TestFallback(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	fallback := xdstest.NewServer(t, xdstest.Options{Name: "fallback"})
	primary.Set(oneCluster(a)...)
	fallback.Set(oneCluster(b)...)
	primary.Stop()
	e := engineOn(t, primary.Bootstrap(xdstest.BootstrapOptions{Fallback: []*xdstest.Server{fallback}}), nil)
	cc := dial(t, newBuilder(t, xdsgrpc.Options{Source: e}), "xdsengine:///svc")
	waitForBackend(t, cc, "b")
	primary.Restart()
	waitForBackend(t, cc, "a")
}

// TestFederation: a target with an authority names an xdstp:// Listener
// from the bootstrap's template (gRFC A47), served by that authority's
// server, resources below it included.
func TestFederation(t *testing.T) {
	a := startBackend(t, "a")
	top := xdstest.NewServer(t, xdstest.Options{Name: "top"})
	auth := xdstest.NewServer(t, xdstest.Options{Name: "authority"})
	const (
		lis   = "xdstp://mesh.example/envoy.config.listener.v3.Listener/svc"
		route = "xdstp://mesh.example/envoy.config.route.v3.RouteConfiguration/route"
		cl    = "xdstp://mesh.example/envoy.config.cluster.v3.Cluster/c1"
		cla   = "xdstp://mesh.example/envoy.config.endpoint.v3.ClusterLoadAssignment/c1"
	)
	rc := routeConfig(toCluster(prefix(""), cl))
	rc.Name = route
	auth.Set(xdstest.R(lis, xdstest.Listener(lis, route)), xdstest.R(route, rc),
		xdstest.R(cl, xdstest.Cluster(cl, cla)), xdstest.R(cla, xdstest.ClusterLoadAssignment(cla, xdstest.Locality{Zone: "z", Endpoints: addrs(a)})))
	top.Set(oneCluster()...) // what old-style names would get: nothing here
	bsJSON := top.Bootstrap(xdstest.BootstrapOptions{Authorities: map[string]xdstest.Authority{"mesh.example": {Servers: []*xdstest.Server{auth}}}})
	bs, err := bootstrap.Parse(bsJSON)
	if err != nil {
		t.Fatal(err)
	}
	e := engineOn(t, bsJSON, nil)
	cc := dial(t, newBuilder(t, xdsgrpc.Options{Source: e, Bootstrap: bs}), "xdsengine://mesh.example/svc")
	waitForBackend(t, cc, "a")
}

// TestCSDS: the channels of a pool-backed builder show in CSDS, each
// target's engine with the resources its channel resolved, ACKED.
func TestCSDS(t *testing.T) {
	a := startBackend(t, "a")
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(oneCluster(a)...)
	bs, err := bootstrap.Parse(srv.Bootstrap(xdstest.BootstrapOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := xdsgrpc.Registry(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := engine.NewPool(engine.Config{Bootstrap: bs, Registry: reg, Transport: transport.GRPC(xdstest.FastReconnect)})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	bld := newBuilder(t, xdsgrpc.Options{Pool: pool})
	cc := dial(t, bld, "xdsengine:///svc")
	waitForBackend(t, cc, "a")

	admin := grpc.NewServer()
	csds.Register(admin, csds.ForPool(pool))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go admin.Serve(lis)
	defer admin.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := statuspb.NewClientStatusDiscoveryServiceClient(conn).FetchClientStatus(ctx, &statuspb.ClientStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetConfig()) != 1 || resp.GetConfig()[0].GetClientScope() != "xdsengine:///svc" {
		t.Fatalf("CSDS has %d client configs (%v), want one, for target xdsengine:///svc", len(resp.GetConfig()), resp.GetConfig())
	}
	acked := map[string]bool{}
	for _, x := range resp.GetConfig()[0].GetGenericXdsConfigs() {
		if x.GetClientStatus() == adminpb.ClientResourceStatus_ACKED {
			acked[x.GetTypeUrl()+" "+x.GetName()] = true
		}
	}
	for _, want := range []string{
		"type.googleapis.com/envoy.config.listener.v3.Listener svc",
		"type.googleapis.com/envoy.config.route.v3.RouteConfiguration route",
		"type.googleapis.com/envoy.config.cluster.v3.Cluster c1",
		"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment c1-eds",
	} {
		if !acked[want] {
			t.Errorf("CSDS lacks %s ACKED; it has %v", want, acked)
		}
	}
}

// TestLEDS: endpoints kept in LEDS collections (gRFC A95) reach the
// channel composed into their cluster; a collection that does not exist
// fails its cluster's RPCs, and only those.
func TestLEDS(t *testing.T) {
	a := startBackend(t, "a")
	srv := xdstest.NewServer(t, xdstest.Options{})
	e := newEngine(t, srv, func(c *engine.Config) { c.ResourceTimeout = 100 * time.Millisecond })
	bld := newBuilder(t, xdsgrpc.Options{Source: e})
	srv.Set(basic(routeConfig(toCluster(prefix("/broken."), "broken"), toCluster(prefix(""), "c1")),
		cluster("c1"), endpoints("c1", xdstest.Locality{Zone: "z", Collection: "c1-leds"}),
		xdstest.Wrapped("c1-leds", xdstest.Collection(a.addr)),
		cluster("broken"), endpoints("broken", xdstest.Locality{Zone: "z", Collection: "absent-leds"}),
	)...)
	cc := dial(t, bld, "xdsengine:///svc")
	waitForBackend(t, cc, "a")
	err := rpcError(t, cc, "/broken.Service/Call")
	if !strings.Contains(err.Error(), `cluster "broken"`) || !strings.Contains(err.Error(), "absent-leds") {
		t.Fatalf("an RPC to the cluster whose collection is missing got %v, want its error", err)
	}
	if got := spread(t, cc, 5, testMethod); got["a"] != 5 {
		t.Fatalf("RPCs to the other cluster went %v", got)
	}
}
