package builtin_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/types/rds"
	"github.com/xdsengine/xdsengine/xdstest"
)

const collectionZ2 = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpointCollection/svc-1/z2"

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

func names(g *graph.Graph) string {
	var out []string
	g.Walk(func(depth int, n *graph.Node) { out = append(out, strings.Repeat(">", depth)+n.Ref.Name) })
	return strings.Join(out, " ")
}

func addrs(eps []eds.Endpoint) []string {
	var out []string
	for _, ep := range eps {
		out = append(out, ep.Address.String())
	}
	return out
}

func state(cluster, edsName string, claLocalities ...xdstest.Locality) []xdstest.Resource {
	return []xdstest.Resource{
		xdstest.R("listener.example", xdstest.Listener("listener.example", "route-1")),
		xdstest.R("route-1", xdstest.RouteConfig("route-1", cluster)),
		xdstest.R("c1", xdstest.Cluster("c1", "eds-1")),
		xdstest.R("c2", xdstest.Cluster("c2", "eds-2")),
		xdstest.R("eds-1", xdstest.ClusterLoadAssignment("eds-1", claLocalities...)),
		xdstest.R("eds-2", xdstest.ClusterLoadAssignment("eds-2", xdstest.Locality{Zone: "z1", Endpoints: []string{"10.0.2.1:80"}})),
	}
}

// TestGraphEndToEnd resolves Listener → RouteConfiguration → Cluster →
// ClusterLoadAssignment → LbEndpointCollection from go-control-plane, then
// changes one piece at a time.
func TestGraphEndToEnd(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	eds1 := []xdstest.Locality{
		{Zone: "z1", Endpoints: []string{"10.0.0.1:80"}},
		{Zone: "z2", Collection: collectionZ2},
	}
	srv.Set(append(state("c1", "eds-1", eds1...),
		xdstest.Wrapped(collectionZ2, xdstest.Collection("10.0.1.1:80", "10.0.1.2:80")))...)

	reg := builtin.Registry()
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers:     []bootstrap.ServerConfig{bootstrap.InsecureServer(srv.Addr())},
			Node:        bootstrap.Node{ID: "graph-test"},
			Authorities: map[string]bootstrap.Authority{"endpoints.example": {}},
		},
		Registry: reg,
		Transport: transport.GRPC(grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.2, MaxDelay: 100 * time.Millisecond},
		})),
		Switches: &features.Switches{},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	ch := make(chan graphEvent, 100)
	root := registry.Ref{TypeURL: lds.TypeURL, Name: "listener.example"}
	cancel := graph.Watch(e, root, graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
		done()
		ch <- graphEvent{g, err}
	}))
	defer cancel()

	// 1. The whole chain resolves; LEDS endpoints are merged into their locality.
	g := nextGraph(t, ch)
	if got, want := names(g), "listener.example >route-1 >>c1 >>>eds-1 >>>>"+collectionZ2; got != want {
		t.Fatalf("graph %q, want %q", got, want)
	}
	edsRef := registry.Ref{TypeURL: eds.TypeURL, Name: "eds-1"}
	resolved := g.Node(edsRef).Resource.(*eds.ClusterLoadAssignment)
	if got := addrs(resolved.Localities[1].Endpoints); !slices.Equal(got, []string{"10.0.1.1:80", "10.0.1.2:80"}) {
		t.Fatalf("z2 endpoints %v, want the collection's", got)
	}
	if got := addrs(resolved.Localities[0].Endpoints); !slices.Equal(got, []string{"10.0.0.1:80"}) {
		t.Fatalf("z1 endpoints %v", got)
	}
	c1 := registry.Ref{TypeURL: cds.TypeURL, Name: "c1"}
	if note := g.ResolutionNote(c1); note != "xDS node ID: graph-test" {
		t.Fatalf("resolution note %q, want the node ID", note)
	}
	firstEDS := g.Node(edsRef).Decoded

	// 2. An endpoint is added in the LEDS collection only.
	srv.Update(leds.TypeURL, xdstest.Wrapped(collectionZ2, xdstest.Collection("10.0.1.1:80", "10.0.1.2:80", "10.0.1.3:80")))
	g = nextGraph(t, ch)
	if g.Node(edsRef).Decoded != firstEDS {
		t.Fatal("the EDS resource changed, want only the collection to")
	}
	resolved = g.Node(edsRef).Resource.(*eds.ClusterLoadAssignment)
	if got := addrs(resolved.Localities[1].Endpoints); len(got) != 3 {
		t.Fatalf("z2 endpoints %v, want 3", got)
	}

	// 3. An invalid EDS update is NACKed; the graph keeps the last good
	// tree and the NACK shows in the cluster's resolution note.
	srv.Update(eds.TypeURL,
		xdstest.R("eds-1", xdstest.ClusterLoadAssignment("eds-1", xdstest.Locality{Zone: "z1", Priority: 1, Endpoints: []string{"10.0.0.9:80"}})),
		xdstest.R("eds-2", xdstest.ClusterLoadAssignment("eds-2", xdstest.Locality{Zone: "z1", Endpoints: []string{"10.0.2.1:80"}})))
	g = nextGraph(t, ch)
	if g.Node(edsRef).Decoded != firstEDS {
		t.Fatal("the NACKed EDS replaced the last good one")
	}
	note := g.ResolutionNote(c1)
	if !strings.Contains(note, "priorities must be contiguous from 0") {
		t.Fatalf("resolution note %q does not carry the NACK", note)
	}
	t.Logf("resolution note after the NACK: %s", note)
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if nack, err := srv.WaitForRequest(ctx, xdstest.IsNACK(eds.TypeURL)); err != nil {
		t.Fatalf("no EDS NACK: %v", err)
	} else {
		t.Logf("EDS NACK error_detail: %s", nack.GetErrorDetail().GetMessage())
	}

	// 4. The route points at a new cluster: the old subtree leaves the
	// graph and is unsubscribed.
	srv.Set(append(state("c2", "eds-1", eds1...),
		xdstest.Wrapped(collectionZ2, xdstest.Collection("10.0.1.1:80")))...)
	g = nextGraph(t, ch)
	for names(g) != "listener.example >route-1 >>c2 >>>eds-2" {
		g = nextGraph(t, ch)
	}
	for _, want := range []struct {
		typeURL string
		names   []string
	}{{cds.TypeURL, []string{"c2"}}, {eds.TypeURL, []string{"eds-2"}}, {leds.TypeURL, nil}} {
		if _, err := srv.WaitForRequest(ctx, func(r *discoverypb.DiscoveryRequest) bool {
			return r.GetTypeUrl() == want.typeURL && slices.Equal(r.GetResourceNames(), want.names)
		}); err != nil {
			t.Fatalf("no %s request for exactly %v: %v", want.typeURL, want.names, err)
		}
	}
	if rc := g.Node(registry.Ref{TypeURL: rds.TypeURL, Name: "route-1"}).Resource.(*rds.RouteConfiguration); rc.VirtualHosts[0].Routes[0].Action.Cluster != "c2" {
		t.Fatalf("route points at %q", rc.VirtualHosts[0].Routes[0].Action.Cluster)
	}
}

func TestGraphString(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(append(state("c1", "eds-1", xdstest.Locality{Zone: "z1", Endpoints: []string{"10.0.0.1:80"}}, xdstest.Locality{Zone: "z2", Collection: collectionZ2}),
		xdstest.Wrapped(collectionZ2, xdstest.Collection("10.0.1.1:80", "[::1]:81")))...)
	reg := builtin.Registry()
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(srv.Addr())}, Node: bootstrap.Node{ID: "n"},
			Authorities: map[string]bootstrap.Authority{"endpoints.example": {}}},
		Registry: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ch := make(chan graphEvent, 10)
	defer graph.Watch(e, registry.Ref{TypeURL: lds.TypeURL, Name: "listener.example"}, graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
		done()
		ch <- graphEvent{g, err}
	}))()
	got := nextGraph(t, ch).String()
	want := `Listener listener.example: RDS route-1
└─ RouteConfiguration route-1: all [*]: 1 route → c1
   └─ Cluster c1: EDS eds-1, xds_wrr_locality_experimental(round_robin)
      └─ ClusterLoadAssignment eds-1: region/z1 p0 w1: 10.0.0.1:80 | region/z2 p0 w1 (LEDS): 10.0.1.1:80 [::1]:81
         └─ LbEndpointCollection xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpointCollection/svc-1/z2: 2 endpoints: 10.0.1.1:80 [::1]:81
`
	if got != want {
		t.Fatalf("Graph.String() =\n%s\nwant\n%s", got, want)
	}
}
