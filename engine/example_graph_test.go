package engine_test

import (
	"fmt"
	"log"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/controlplane"
	"github.com/xdsengine/xdsengine/internal/xdsbuild"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
)

// ExampleWatchGraph resolves a listener down to its endpoints.
func ExampleWatchGraph() {
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	cp.Set(
		controlplane.R("api.example", xdsbuild.Listener("api.example", "api-routes")),
		controlplane.R("api-routes", xdsbuild.RouteConfig("api-routes", "api-backend")),
		controlplane.R("api-backend", xdsbuild.Cluster("api-backend", "api-endpoints")),
		controlplane.R("api-endpoints", xdsbuild.ClusterLoadAssignment("api-endpoints",
			xdsbuild.Locality{Zone: "a", Endpoints: []string{"10.0.0.1:443", "10.0.0.2:443"}})),
	)
	reg := builtin.Registry()
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(cp.Addr())}, Node: bootstrap.Node{ID: "example-node"}},
		Registry:  reg,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	graphs := make(chan *engine.Graph, 1)
	cancel := engine.WatchGraph(e, reg, registry.Ref{TypeURL: lds.TypeURL, Name: "api.example"},
		engine.GraphWatcherFunc(func(g *engine.Graph, err error, done func()) {
			defer done()
			if err != nil {
				log.Fatal(err)
			}
			graphs <- g
		}))
	defer cancel()
	g := <-graphs
	fmt.Print(g)
	fmt.Println("note:", g.ResolutionNote(registry.Ref{TypeURL: cds.TypeURL, Name: "api-backend"}))
	// Output:
	// Listener api.example: RDS api-routes
	// └─ RouteConfiguration api-routes: all [*]: 1 route → api-backend
	//    └─ Cluster api-backend: EDS api-endpoints, xds_wrr_locality_experimental(round_robin)
	//       └─ ClusterLoadAssignment api-endpoints: region/a p0 w1: 10.0.0.1:443 10.0.0.2:443
	// note: xDS node ID: example-node
}

// ExampleNewPool shares one engine per data plane target (gRFC A71).
func ExampleNewPool() {
	pool, err := engine.NewPool(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("xds.example:443")}, Node: bootstrap.Node{ID: "n1"}},
		Registry:  builtin.Registry(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	a, releaseA, _ := pool.Get("xds:///a.example")
	a2, releaseA2, _ := pool.Get("xds:///a.example")
	_, releaseB, _ := pool.Get("xds:///b.example")
	fmt.Println(a == a2, pool.Targets())
	releaseA()
	releaseA2() // the last user of a.example: its engine closes
	fmt.Println(pool.Targets())
	releaseB()
	// Output:
	// true [xds:///a.example xds:///b.example]
	// [xds:///b.example]
}

func ExampleBootstrap_ListenerName() {
	bs, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "xds.example:443", "channel_creds": [{"type": "insecure"}]}],
		"client_default_listener_resource_name_template": "xdstp://mesh.example/envoy.config.listener.v3.Listener/%s",
		"authorities": {"mesh.example": {}, "edge.example": {}}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, target := range []string{"xds:///api.example:443", "xds://edge.example/www"} {
		name, _ := bs.ListenerName(target)
		fmt.Println(name)
	}
	// Output:
	// xdstp://mesh.example/envoy.config.listener.v3.Listener/api.example:443
	// xdstp://edge.example/envoy.config.listener.v3.Listener/www
}
