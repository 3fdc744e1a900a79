package lds_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

const serverTemplate = "grpc/server?xds.resource.listening_address=%s"

// fileWatcher is a certificate provider as a bootstrap names it; the
// engine only checks the instance names.
var fileWatcher = bootstrap.CertificateProvider{PluginName: "file_watcher", Config: json.RawMessage(
	`{"certificate_file": "/certs/cert.pem", "private_key_file": "/certs/key.pem", "ca_certificate_file": "/certs/ca.pem"}`)}

// startServerWorld starts a management server and an engine whose
// bootstrap has the server template and the certificate providers named.
func startServerWorld(t *testing.T, cfg func(*engine.Config), providers ...string) (*xdstest.Server, *engine.Engine, *bootstrap.Bootstrap) {
	t.Helper()
	mgmt := xdstest.NewServer(t, xdstest.Options{})
	opts := xdstest.BootstrapOptions{ServerListenerResourceNameTemplate: serverTemplate, CertificateProviders: map[string]bootstrap.CertificateProvider{}}
	for _, p := range providers {
		opts.CertificateProviders[p] = fileWatcher
	}
	bs, err := bootstrap.Parse(mgmt.Bootstrap(opts))
	if err != nil {
		t.Fatal(err)
	}
	c := engine.Config{Bootstrap: bs, Registry: builtin.Registry()}
	if cfg != nil {
		cfg(&c)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return mgmt, e, bs
}

// threeChains is a server Listener on addr with a plaintext chain for
// loopback peers, an mTLS chain with RBAC for the 10/8 network and a TLS
// default chain; two of them fetch routes with RDS.
func threeChains(name, addr string) *listenerpb.Listener {
	allowEcho := &rbacconfigv3.RBAC{Action: rbacconfigv3.RBAC_ALLOW, Policies: map[string]*rbacconfigv3.Policy{
		"echo": policy([]*rbacconfigv3.Permission{anyPermission()}, anyPrincipal()),
	}}
	return xdstest.ServerListener(name, addr, []xdstest.FilterChain{
		{Name: "local", SourceType: listenerpb.FilterChainMatch_SAME_IP_OR_LOOPBACK},
		{Name: "mesh", SourcePrefixes: []string{"10.0.0.0/8"}, RouteConfig: "mesh-routes", RBAC: allowEcho,
			TLS: &xdstest.TLS{Identity: "mesh", Root: "mesh", RequireClientCertificate: true}},
	}, &xdstest.FilterChain{Name: "edge", RouteConfig: "edge-routes", TLS: &xdstest.TLS{Identity: "edge"}})
}

// TestServerListenerEndToEnd resolves a server's Listener of three filter
// chains with graph.Watch, as an xDS-enabled server would: each chain
// ends up with its routes, TLS and RBAC, and connections find their
// chain.
func TestServerListenerEndToEnd(t *testing.T) {
	mgmt, e, bs := startServerWorld(t, nil, "mesh", "edge")
	name, err := bs.ServerListenerName("0.0.0.0:50051")
	if err != nil {
		t.Fatal(err)
	}
	mgmt.Set(
		xdstest.R(name, threeChains(name, "0.0.0.0:50051")),
		xdstest.R("mesh-routes", xdstest.ServerRouteConfig("mesh-routes")),
		xdstest.R("edge-routes", xdstest.RouteConfig("edge-routes", "some-cluster")),
	)
	graphs := make(chan graphEvent, 4)
	cancel := graph.Watch(e, registry.Ref{TypeURL: lds.TypeURL, Name: name}, graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
		graphs <- graphEvent{g, err}
		done()
	}))
	defer cancel()
	g := nextGraph(t, graphs)

	root := g.Node(g.Root)
	l := root.Resource.(*lds.Listener)
	if !l.IsServer() || l.Server.Addr() != "0.0.0.0:50051" || len(l.Server.FilterChains) != 2 || l.Server.DefaultFilterChain == nil {
		t.Fatalf("root = %v, want the server Listener with two chains and a default", l)
	}
	if decoded := root.Decoded.(*lds.Listener); decoded.Server.FilterChains[1].HTTP.RouteConfig != nil {
		t.Error("Compose changed the decoded Listener")
	}
	if want := []registry.Ref{rdsRef("mesh-routes"), rdsRef("edge-routes")}; !equalRefs(root.Deps, want) {
		t.Errorf("Deps = %v, want %v", root.Deps, want)
	}
	// The resolved graph says which chain uses which routes.
	local, mesh, edge := &l.Server.FilterChains[0], &l.Server.FilterChains[1], l.Server.DefaultFilterChain
	if local.HTTP.RouteConfig == nil || local.HTTP.RouteConfigName != "" {
		t.Errorf("local chain routes = %q %v, want inline", local.HTTP.RouteConfigName, local.HTTP.RouteConfig)
	}
	if rc := mesh.HTTP.RouteConfig; rc == nil || rc.Name != "mesh-routes" || rc != g.Node(rdsRef("mesh-routes")).Resource {
		t.Errorf("mesh chain routes = %v, want the graph's mesh-routes", rc)
	}
	if err := mesh.HTTP.RouteConfig.CheckServerUse(); err != nil {
		t.Errorf("mesh routes CheckServerUse() = %v, want nil", err)
	}
	// edge-routes send to a cluster: gRFC A36's configuration error,
	// reported, not NACKed.
	if err := edge.HTTP.RouteConfig.CheckServerUse(); err == nil || !strings.Contains(err.Error(), "action is cluster, not non_forwarding_action") {
		t.Errorf("edge routes CheckServerUse() = %v, want the cluster route named", err)
	}
	if mesh.TLS == nil || !mesh.TLS.RequireClientCertificate || mesh.HTTP.HTTPFilters[0].RBAC.Rules.Policies[0].Name != "echo" {
		t.Errorf("mesh chain = %+v, want mTLS and the echo RBAC policy", mesh)
	}
	for _, c := range []struct {
		remote string
		want   *lds.FilterChain
	}{
		{"127.0.0.1:40000", local},
		{"10.1.2.3:40000", mesh},
		{"192.0.2.7:40000", edge},
	} {
		if got := l.Server.FilterChainFor(netip.MustParseAddrPort("10.9.9.9:50051"), netip.MustParseAddrPort(c.remote)); got != c.want {
			t.Errorf("FilterChainFor(%s) = %q, want %q", c.remote, got.Name, c.want.Name)
		}
	}
	// A server watches no clusters (graph.Shallow): the graph holds the
	// Listener and its two RouteConfigurations, not edge-routes' cluster.
	if got := len(g.Nodes); got != 3 || g.Node(rdsRef("edge-routes")).Deps != nil {
		t.Errorf("graph has %d nodes, want 3 and no cluster:\n%s", got, g)
	}
}

func equalRefs(a, b []registry.Ref) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestWatchServer checks the typed watch: a server Listener arrives, an
// API listener under the same name is an error a server cannot use.
func TestWatchServer(t *testing.T) {
	mgmt, e, bs := startServerWorld(t, nil, "mesh", "edge")
	name, err := bs.ServerListenerName("[::]:8443")
	if err != nil {
		t.Fatal(err)
	}
	if name != "grpc/server?xds.resource.listening_address=[::]:8443" {
		t.Fatalf("ServerListenerName = %q", name)
	}
	type update struct {
		l   *lds.Listener
		err error
	}
	updates := make(chan update, 4)
	cancel := lds.WatchServer(e, name, engine.TypedWatcherFuncs[*lds.Listener]{
		ResourceChanged: func(l *lds.Listener, err error, done func()) { updates <- update{l, err}; done() },
	})
	defer cancel()
	next := func() update {
		t.Helper()
		select {
		case u := <-updates:
			return u
		case <-time.After(10 * time.Second):
			t.Fatal("no update within 10s")
		}
		return update{}
	}
	mgmt.Set(xdstest.R(name, threeChains(name, "[::]:8443")), xdstest.R("mesh-routes", xdstest.ServerRouteConfig("mesh-routes")))
	if u := next(); u.err != nil || u.l == nil || u.l.Server.Addr() != "[::]:8443" {
		t.Fatalf("first update = %+v, want the server Listener on [::]:8443", u)
	}
	mgmt.Set(xdstest.R(name, xdstest.Listener(name, "mesh-routes")))
	u := next()
	var ee *engine.Error
	if u.l != nil || !errors.As(u.err, &ee) || ee.Kind != engine.KindUnknownType || status.Code(u.err) != codes.FailedPrecondition || ee.NodeID != xdstest.DefaultNodeID {
		t.Fatalf("update for an API listener = %+v, want a FAILED_PRECONDITION KindUnknownType error", u)
	}
}

// TestCertificateProvidersChecked checks gRFC A29 through an engine: a
// Listener naming a provider the bootstrap lacks is NACKed, unless the
// engine is told the program does its own TLS.
func TestCertificateProvidersChecked(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(map[bool]string{false: "checked", true: "ignored"}[ignore], func(t *testing.T) {
			mgmt, e, _ := startServerWorld(t, func(c *engine.Config) { c.IgnoreCertificateProviders = ignore }, "mesh")
			const name = "grpc/server?xds.resource.listening_address=0.0.0.0:1"
			errs := make(chan error, 4)
			cancel := lds.Watch(e, name, engine.TypedWatcherFuncs[*lds.Listener]{
				ResourceChanged: func(l *lds.Listener, err error, done func()) { errs <- err; done() },
			})
			defer cancel()
			// "edge" is not in the bootstrap.
			mgmt.Set(xdstest.R(name, threeChains(name, "0.0.0.0:1")))
			var err error
			select {
			case err = <-errs:
			case <-time.After(10 * time.Second):
				t.Fatal("no update within 10s")
			}
			if ignore {
				if err != nil {
					t.Fatalf("update error = %v, want the Listener", err)
				}
				return
			}
			if err == nil || status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `unrecognized certificate provider instance name "edge"`) {
				t.Fatalf("update error = %v, want a NACK naming the edge provider", err)
			}
		})
	}
}

type graphEvent struct {
	g   *graph.Graph
	err error
}

func nextGraph(t *testing.T, ch chan graphEvent) *graph.Graph {
	t.Helper()
	select {
	case ev := <-ch:
		if ev.err != nil {
			t.Fatalf("graph error: %v", ev.err)
		}
		return ev.g
	case <-time.After(10 * time.Second):
		t.Fatal("no graph within 10s")
	}
	return nil
}
