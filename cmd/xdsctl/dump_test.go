package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/csds"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// checkListenerConfig checks that g is listener.example, ACKED at
// version, with the resource that routes to route.
func checkListenerConfig(t *testing.T, g *statuspb.ClientConfig_GenericXdsConfig, version, route string) {
	t.Helper()
	if g.GetTypeUrl() != lds.TypeURL || g.GetName() != "listener.example" ||
		g.GetClientStatus() != adminpb.ClientResourceStatus_ACKED || g.GetVersionInfo() != version {
		t.Fatalf("config %v, want listener.example ACKED at version %q", g, version)
	}
	var l listenerpb.Listener
	if err := g.GetXdsConfig().UnmarshalTo(&l); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(protojson.Format(&l), route) {
		t.Fatalf("listener %v does not route to %q", &l, route)
	}
}

func TestDumpBootstrap(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(xdstest.R("listener.example", xdstest.Listener("listener.example", "route-1")))
	bs := writeBootstrap(t, srv.Addr())

	start := time.Now()
	r := runSync(t, "dump", "--bootstrap", bs, "--wait", "10s", "lds", "listener.example")
	if r.code != exitOK {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("dump took %v: it should not wait once the resource is there", d)
	}
	var cc statuspb.ClientConfig
	if err := protojson.Unmarshal([]byte(r.stdout), &cc); err != nil {
		t.Fatalf("stdout is not a ClientConfig: %v\n%s", err, r.stdout)
	}
	if cc.GetNode().GetId() != testNodeID || len(cc.GetGenericXdsConfigs()) != 1 {
		t.Fatalf("ClientConfig %v, want node %q and one resource", &cc, testNodeID)
	}
	checkListenerConfig(t, cc.GetGenericXdsConfigs()[0], "1", "route-1")
	if !strings.Contains(r.stdout, `"clientStatus": "ACKED"`) {
		t.Errorf("stdout does not show the state as protojson does:\n%s", r.stdout)
	}
	t.Logf("dump output:\n%s", r.stdout)
}

// TestDumpWaitPasses prints the dump when --wait passes, with what is
// still awaited on stderr; the bootstrap comes from the environment.
func TestDumpWaitPasses(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(xdstest.R("route-1", xdstest.RouteConfig("route-1", "c1")))
	t.Setenv(bootstrap.EnvFile, "")
	t.Setenv(bootstrap.EnvConfig, bootstrapJSON(srv.Addr()))

	// With the real timer alone, route-1 had to arrive within 300 ms, a
	// race that a loaded machine (or a frozen, CPU-throttled one) loses:
	// route-1 was then still REQUESTED. The wait still lasts at least
	// --wait, but also until the server has route-1's ACK; the client
	// caches a response before it ACKs it. route-missing stays REQUESTED
	// meanwhile: its does-not-exist timer is 15 s, longer than the 10 s
	// after which the test gives up on the ACK.
	var waitArg time.Duration
	acked := make(chan error, 1)
	restore := startWait
	t.Cleanup(func() { startWait = restore })
	startWait = func(d time.Duration) (<-chan time.Time, func()) {
		waitArg = d
		timer := time.NewTimer(d)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		passed := make(chan time.Time, 1)
		go func() {
			_, err := srv.WaitForRequest(ctx, ackOfRoute(srv, "route-1"))
			acked <- err
			select {
			case now := <-timer.C:
				passed <- now
			case <-ctx.Done():
			}
		}()
		return passed, func() {
			timer.Stop()
			cancel()
		}
	}

	r := runSync(t, "dump", "--wait", "300ms", "rds", "route-1", "route-missing")
	if err := <-acked; err != nil {
		t.Fatalf("the client did not ACK route-1: %v; stderr:\n%s", err, r.stderr)
	}
	if waitArg != 300*time.Millisecond {
		t.Errorf("the wait was %v, want --wait's 300ms", waitArg)
	}
	if r.code != exitOK {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	if want := `xdsctl dump: --wait 300ms passed; still awaited: RouteConfiguration "route-missing"`; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not contain %q:\n%s", want, r.stderr)
	}
	var cc statuspb.ClientConfig
	if err := protojson.Unmarshal([]byte(r.stdout), &cc); err != nil {
		t.Fatalf("stdout is not a ClientConfig: %v\n%s", err, r.stdout)
	}
	got := map[string]adminpb.ClientResourceStatus{}
	for _, g := range cc.GetGenericXdsConfigs() {
		got[g.GetName()] = g.GetClientStatus()
	}
	if got["route-1"] != adminpb.ClientResourceStatus_ACKED || got["route-missing"] != adminpb.ClientResourceStatus_REQUESTED || len(got) != 2 {
		t.Fatalf("states %v, want route-1 ACKED and route-missing REQUESTED", got)
	}
}

// ackOfRoute matches an ACK of a response that held the route
// configuration name, which the client had therefore applied.
func ackOfRoute(srv *xdstest.Server, name string) func(*discoverypb.DiscoveryRequest) bool {
	return func(req *discoverypb.DiscoveryRequest) bool {
		if req.GetTypeUrl() != rds.TypeURL || req.GetResponseNonce() == "" || req.GetErrorDetail() != nil {
			return false
		}
		for _, resp := range srv.Responses() {
			if resp.GetTypeUrl() != rds.TypeURL || resp.GetNonce() != req.GetResponseNonce() {
				continue
			}
			for _, res := range resp.GetResources() {
				var rc routepb.RouteConfiguration
				if res.UnmarshalTo(&rc) == nil && rc.GetName() == name {
					return true
				}
			}
		}
		return false
	}
}

// TestDumpCSDS fetches the dump of a running client from its CSDS
// service.
func TestDumpCSDS(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(xdstest.R("listener.example", xdstest.Listener("listener.example", "route-1")))

	// The "running client": an engine watching the listener, with a
	// CSDS service.
	reg := builtin.Registry()
	bs, err := bootstrap.Parse([]byte(bootstrapJSON(srv.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: reg, Target: "listener.example"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got := make(chan struct{}, 1) // the listener may arrive before the select below
	defer lds.Watch(e, "listener.example", engine.TypedWatcherFuncs[*lds.Listener]{
		ResourceChanged: func(_ *lds.Listener, err error, done func()) {
			done()
			if err == nil {
				select {
				case got <- struct{}{}:
				default:
				}
			}
		},
	})()
	admin := grpc.NewServer()
	csds.Register(admin, csds.ForEngine(e))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = admin.Serve(lis)
	}()
	defer func() {
		admin.Stop()
		<-served
	}()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the client got no listener within 10s")
	}

	r := runSync(t, "dump", "--csds", lis.Addr().String())
	if r.code != exitOK {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	var resp statuspb.ClientStatusResponse
	if err := protojson.Unmarshal([]byte(r.stdout), &resp); err != nil {
		t.Fatalf("stdout is not a ClientStatusResponse: %v\n%s", err, r.stdout)
	}
	if len(resp.GetConfig()) != 1 || resp.GetConfig()[0].GetClientScope() != "listener.example" ||
		resp.GetConfig()[0].GetNode().GetId() != testNodeID || len(resp.GetConfig()[0].GetGenericXdsConfigs()) != 1 {
		t.Fatalf("response %v, want one config of scope listener.example, node %q, one resource", &resp, testNodeID)
	}
	checkListenerConfig(t, resp.GetConfig()[0].GetGenericXdsConfigs()[0], "1", "route-1")
}

// TestDumpCSDSUnreachable fails with the gRPC status when nothing listens.
func TestDumpCSDSUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()

	r := runSync(t, "dump", "--csds", addr, "--timeout", "5s")
	if r.code != exitFailure || !strings.Contains(r.stderr, "FetchClientStatus from "+addr+": UNAVAILABLE: ") {
		t.Fatalf("exit status %d, want 1 and UNAVAILABLE; stderr:\n%s", r.code, r.stderr)
	}
}
