package csds_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/csds"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	nodeID       = "csds-test"
	listenerName = "listener.example"
	target       = "xds:///" + listenerName
)

// fastDial keeps the engine's reconnects short; gRPC's default first
// backoff is a second.
var fastDial = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.2, MaxDelay: 100 * time.Millisecond},
	MinConnectTimeout: time.Second,
})

// newEngine is an engine of target on the management server at addr,
// closed with the test.
func newEngine(t *testing.T, addr, target string, mutate func(*engine.Config)) *engine.Engine {
	t.Helper()
	e, err := engine.New(engineConfig(addr, target, mutate))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func engineConfig(addr, target string, mutate func(*engine.Config)) engine.Config {
	// Pinned switches: the A88 behaviour under test must not depend on
	// the environment the tests run in.
	sw := features.Switches{}
	cfg := engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: nodeID}},
		Registry:  builtin.Registry(),
		Target:    target,
		Transport: transport.GRPC(fastDial),
		Backoff:   func(int) time.Duration { return 20 * time.Millisecond },
		Switches:  &sw,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	return cfg
}

// serveCSDS serves src's CSDS on a real gRPC server on 127.0.0.1:0 and
// returns a client of it; both are closed with the test.
func serveCSDS(t *testing.T, src csds.Source, withReflection bool) (statuspb.ClientStatusDiscoveryServiceClient, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	if withReflection {
		csds.RegisterWithReflection(s, src)
	} else {
		csds.Register(s, src)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-served
	})
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return statuspb.NewClientStatusDiscoveryServiceClient(cc), lis.Addr().String()
}

func fetch(t *testing.T, c statuspb.ClientStatusDiscoveryServiceClient, req *statuspb.ClientStatusRequest) *statuspb.ClientStatusResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if req == nil {
		req = &statuspb.ClientStatusRequest{}
	}
	resp, err := c.FetchClientStatus(ctx, req)
	if err != nil {
		t.Fatalf("FetchClientStatus: %v", err)
	}
	return resp
}

// oneConfig returns the only ClientConfig of resp, checking its scope and
// node.
func oneConfig(t *testing.T, resp *statuspb.ClientStatusResponse, scope string) *statuspb.ClientConfig {
	t.Helper()
	if len(resp.GetConfig()) != 1 {
		t.Fatalf("got %d ClientConfigs, want 1: %v", len(resp.GetConfig()), resp)
	}
	cc := resp.GetConfig()[0]
	if cc.GetClientScope() != scope {
		t.Errorf("client_scope = %q, want %q", cc.GetClientScope(), scope)
	}
	if cc.GetNode().GetId() != nodeID {
		t.Errorf("node.id = %q, want %q", cc.GetNode().GetId(), nodeID)
	}
	return cc
}

// resource returns the entry of (typeURL, name), failing the test if
// there is none.
func resource(t *testing.T, cc *statuspb.ClientConfig, typeURL, name string) *statuspb.ClientConfig_GenericXdsConfig {
	t.Helper()
	for _, g := range cc.GetGenericXdsConfigs() {
		if g.GetTypeUrl() == typeURL && g.GetName() == name {
			return g
		}
	}
	t.Fatalf("no %s %q in %v", typeURL, name, cc)
	return nil
}

// checkListener checks that g holds listener name at version, as sent.
func checkListener(t *testing.T, g *statuspb.ClientConfig_GenericXdsConfig, version string) {
	t.Helper()
	if g.GetVersionInfo() != version {
		t.Errorf("%s: version_info = %q, want %q", g.GetName(), g.GetVersionInfo(), version)
	}
	if got := g.GetXdsConfig().GetTypeUrl(); got != lds.TypeURL {
		t.Fatalf("%s: xds_config type = %q, want %q", g.GetName(), got, lds.TypeURL)
	}
	l := &listenerpb.Listener{}
	if err := g.GetXdsConfig().UnmarshalTo(l); err != nil {
		t.Fatalf("%s: xds_config: %v", g.GetName(), err)
	}
	if l.GetName() != g.GetName() || l.GetApiListener() == nil {
		t.Errorf("%s: xds_config holds %v, want the API listener served", g.GetName(), l)
	}
	if g.GetLastUpdated() == nil {
		t.Errorf("%s: last_updated not set", g.GetName())
	}
}

func wantStatus(t *testing.T, g *statuspb.ClientConfig_GenericXdsConfig, want adminpb.ClientResourceStatus) {
	t.Helper()
	if g.GetClientStatus() != want {
		t.Errorf("%s: client_status = %v, want %v", g.GetName(), g.GetClientStatus(), want)
	}
}

// serveTree serves a valid LDS → RDS → CDS → EDS tree for listenerName.
func serveTree(srv *xdstest.Server) {
	srv.Set(
		xdstest.R(listenerName, xdstest.Listener(listenerName, "route.example")),
		xdstest.R("route.example", xdstest.RouteConfig("route.example", "cluster.example")),
		xdstest.R("cluster.example", xdstest.Cluster("cluster.example", "endpoints.example")),
		xdstest.R("endpoints.example", xdstest.ClusterLoadAssignment("endpoints.example", xdstest.Locality{Zone: "a", Endpoints: []string{"127.0.0.1:8080"}})),
	)
}

// TestFetchAndStream runs an engine against go-control-plane and reads
// its state over a real gRPC connection, unary and streaming.
func TestFetchAndStream(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	serveTree(srv)
	e := newEngine(t, srv.Addr(), target, nil)
	rec := watchrec.New()
	defer e.Watch(lds.TypeURL, listenerName, rec)()
	// A second watch on a name the server is silent about stays
	// REQUESTED: LDS responses do not settle a name never sent.
	defer e.Watch(lds.TypeURL, "requested.example", watchrec.New())()
	if ev := rec.NextChanged(t); ev.Err != nil {
		t.Fatalf("watcher got %v, want the listener", ev)
	}
	client, _ := serveCSDS(t, csds.ForEngine(e), false)

	cc := oneConfig(t, fetch(t, client, nil), target)
	if n := len(cc.GetGenericXdsConfigs()); n != 2 {
		t.Errorf("got %d resources, want 2: %v", n, cc)
	}
	l := resource(t, cc, lds.TypeURL, listenerName)
	wantStatus(t, l, adminpb.ClientResourceStatus_ACKED)
	checkListener(t, l, "1")
	if l.GetErrorState() != nil {
		t.Errorf("ACKED listener has error_state %v", l.GetErrorState())
	}
	r := resource(t, cc, lds.TypeURL, "requested.example")
	wantStatus(t, r, adminpb.ClientResourceStatus_REQUESTED)
	if r.GetXdsConfig() != nil || r.GetVersionInfo() != "" {
		t.Errorf("REQUESTED resource has a resource: %v", r)
	}

	// node_matchers are ignored (gRFC A40, gRPC C++), even when they
	// match nothing: the full dump comes back.
	withMatchers := &statuspb.ClientStatusRequest{NodeMatchers: []*matcherpb.NodeMatcher{{
		NodeId: &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Exact{Exact: "some-other-node"}},
	}}}
	cc = oneConfig(t, fetch(t, client, withMatchers), target)
	wantStatus(t, resource(t, cc, lds.TypeURL, listenerName), adminpb.ClientResourceStatus_ACKED)

	// The stream answers each request with a fresh dump.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := client.StreamClientStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&statuspb.ClientStatusRequest{}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	checkListener(t, resource(t, oneConfig(t, resp, target), lds.TypeURL, listenerName), "1")

	// Version 2 changes the listener: the engine tells watchers only of
	// resources whose bytes changed.
	srv.Set(xdstest.R(listenerName, xdstest.Listener(listenerName, "route-2.example")))
	if ev := rec.NextChanged(t); ev.Err != nil {
		t.Fatalf("watcher got %v, want version 2", ev)
	}
	if err := stream.Send(withMatchers); err != nil {
		t.Fatal(err)
	}
	resp, err = stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	l = resource(t, oneConfig(t, resp, target), lds.TypeURL, listenerName)
	wantStatus(t, l, adminpb.ClientResourceStatus_ACKED)
	checkListener(t, l, "2")

	// Half-closing ends the RPC with OK, after no further response.
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if resp, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("Recv after CloseSend = %v, %v; want io.EOF", resp, err)
	}
}

// TestPool reports one ClientConfig per target of a pool, sorted by
// target, each with only its own resources.
func TestPool(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(
		xdstest.R("a.example", xdstest.Listener("a.example", "route.example")),
		xdstest.R("b.example", xdstest.Listener("b.example", "route.example")),
	)
	pool, err := engine.NewPool(engineConfig(srv.Addr(), "", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	client, _ := serveCSDS(t, csds.ForPool(pool), false)

	if resp := fetch(t, client, nil); len(resp.GetConfig()) != 0 {
		t.Errorf("pool without engines: got %v, want an empty response", resp)
	}

	// Got in reverse order, to see the response sorted.
	for _, name := range []string{"b.example", "a.example"} {
		e, release, err := pool.Get("xds:///" + name)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		rec := watchrec.New()
		defer e.Watch(lds.TypeURL, name, rec)()
		if ev := rec.NextChanged(t); ev.Err != nil {
			t.Fatalf("%s: watcher got %v", name, ev)
		}
	}

	resp := fetch(t, client, nil)
	if len(resp.GetConfig()) != 2 {
		t.Fatalf("got %d ClientConfigs, want 2: %v", len(resp.GetConfig()), resp)
	}
	for i, name := range []string{"a.example", "b.example"} {
		cc := resp.GetConfig()[i]
		if want := "xds:///" + name; cc.GetClientScope() != want {
			t.Errorf("config[%d].client_scope = %q, want %q", i, cc.GetClientScope(), want)
		}
		if cc.GetNode().GetId() != nodeID {
			t.Errorf("config[%d].node.id = %q, want %q", i, cc.GetNode().GetId(), nodeID)
		}
		if n := len(cc.GetGenericXdsConfigs()); n != 1 {
			t.Errorf("config[%d] has %d resources, want only its own listener: %v", i, n, cc)
		}
		l := resource(t, cc, lds.TypeURL, name)
		wantStatus(t, l, adminpb.ClientResourceStatus_ACKED)
		checkListener(t, l, "1")
	}

	// A closed pool has no engines: an empty response, not an error, as
	// gRPC answers when it has no xDS client.
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	if resp := fetch(t, client, nil); len(resp.GetConfig()) != 0 {
		t.Errorf("closed pool: got %v, want an empty response", resp)
	}
}

// TestConsistentWithWatchers checks that once a watcher has been told of
// an error, CSDS reports the matching state for that resource. The
// recorder holds each callback's done, so the engine reads no further
// response while CSDS is asked: the dump is taken at the very moment the
// watcher holds the error.
func TestConsistentWithWatchers(t *testing.T) {
	// acked starts a server with the listener and a watch that has seen
	// it, version 1.
	acked := func(t *testing.T) (*xdstest.Server, *watchrec.Recorder, statuspb.ClientStatusDiscoveryServiceClient) {
		srv := xdstest.NewServer(t, xdstest.Options{})
		srv.Set(xdstest.R(listenerName, xdstest.Listener(listenerName, "route.example")))
		e := newEngine(t, srv.Addr(), target, nil)
		rec := watchrec.NewHolding()
		t.Cleanup(e.Watch(lds.TypeURL, listenerName, rec))
		ev := rec.NextChanged(t)
		ev.Done()
		if ev.Err != nil {
			t.Fatalf("watcher got %v, want the listener", ev)
		}
		client, _ := serveCSDS(t, csds.ForEngine(e), false)
		return srv, rec, client
	}

	t.Run("NACK", func(t *testing.T) {
		srv, rec, client := acked(t)
		// No api_listener: invalid for a gRPC client, so version 2 is
		// NACKed and version 1 stays in use, reported as ambient.
		srv.Set(xdstest.R(listenerName, &listenerpb.Listener{Name: listenerName}))
		ev := rec.NextAmbient(t)
		defer ev.Done()
		if status.Code(ev.Err) != codes.InvalidArgument {
			t.Fatalf("watcher got %v, want an INVALID_ARGUMENT ambient error", ev)
		}

		l := resource(t, oneConfig(t, fetch(t, client, nil), target), lds.TypeURL, listenerName)
		wantStatus(t, l, adminpb.ClientResourceStatus_NACKED)
		checkListener(t, l, "1") // still cached and in use
		if got := l.GetErrorState().GetVersionInfo(); got != "2" {
			t.Errorf("error_state.version_info = %q, want the rejected version 2", got)
		}
		if l.GetErrorState().GetDetails() == "" || l.GetErrorState().GetLastUpdateAttempt() == nil {
			t.Errorf("error_state = %v, want details and last_update_attempt", l.GetErrorState())
		}
	})

	t.Run("deleted", func(t *testing.T) {
		srv, rec, client := acked(t)
		// LDS is full state: a response without the listener deletes it.
		// A88 keeps the cached listener in use and reports NOT_FOUND as
		// ambient.
		srv.Set(xdstest.R("other.example", xdstest.Listener("other.example", "route.example")))
		ev := rec.NextAmbient(t)
		defer ev.Done()
		if status.Code(ev.Err) != codes.NotFound {
			t.Fatalf("watcher got %v, want a NOT_FOUND ambient error", ev)
		}

		l := resource(t, oneConfig(t, fetch(t, client, nil), target), lds.TypeURL, listenerName)
		wantStatus(t, l, adminpb.ClientResourceStatus_DOES_NOT_EXIST)
		checkListener(t, l, "1") // still cached and in use
	})

	t.Run("does-not-exist timer", func(t *testing.T) {
		srv := xdstest.NewServer(t, xdstest.Options{})
		srv.Set(xdstest.R("other.example", xdstest.Listener("other.example", "route.example")))
		e := newEngine(t, srv.Addr(), target, func(c *engine.Config) { c.ResourceTimeout = 200 * time.Millisecond })
		client, _ := serveCSDS(t, csds.ForEngine(e), false)
		rec := watchrec.NewHolding()
		defer e.Watch(lds.TypeURL, listenerName, rec)()
		ev := rec.NextChanged(t)
		defer ev.Done()
		if status.Code(ev.Err) != codes.NotFound {
			t.Fatalf("watcher got %v, want a NOT_FOUND error", ev)
		}

		l := resource(t, oneConfig(t, fetch(t, client, nil), target), lds.TypeURL, listenerName)
		wantStatus(t, l, adminpb.ClientResourceStatus_DOES_NOT_EXIST)
		if l.GetXdsConfig() != nil || l.GetVersionInfo() != "" {
			t.Errorf("resource never received has one in CSDS: %v", l)
		}
	})
}

// TestSourceFunc checks what a custom source controls: the configs, in its
// order, and that nil entries are dropped rather than failing the RPC.
func TestSourceFunc(t *testing.T) {
	src := csds.SourceFunc(func() []*statuspb.ClientConfig {
		return []*statuspb.ClientConfig{{ClientScope: "z"}, nil, {ClientScope: "a"}}
	})
	client, _ := serveCSDS(t, src, false)
	resp := fetch(t, client, nil)
	if len(resp.GetConfig()) != 2 || resp.GetConfig()[0].GetClientScope() != "z" || resp.GetConfig()[1].GetClientScope() != "a" {
		t.Errorf("got %v, want the scopes z and a, in that order", resp)
	}

	empty := csds.SourceFunc(func() []*statuspb.ClientConfig { return nil })
	client, _ = serveCSDS(t, empty, false)
	if resp := fetch(t, client, nil); len(resp.GetConfig()) != 0 {
		t.Errorf("empty source: got %v, want an empty response", resp)
	}
}
