package graph_test

import (
	"fmt"
	"log"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// ExampleWatch resolves a listener down to its endpoints.
func ExampleWatch() {
	cp, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	cp.Set(
		xdstest.R("api.example", xdstest.Listener("api.example", "api-routes")),
		xdstest.R("api-routes", xdstest.RouteConfig("api-routes", "api-backend")),
		xdstest.R("api-backend", xdstest.Cluster("api-backend", "api-endpoints")),
		xdstest.R("api-endpoints", xdstest.ClusterLoadAssignment("api-endpoints",
			xdstest.Locality{Zone: "a", Endpoints: []string{"10.0.0.1:443", "10.0.0.2:443"}})),
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

	graphs := make(chan *graph.Graph, 1)
	cancel := graph.Watch(e, registry.Ref{TypeURL: lds.TypeURL, Name: "api.example"},
		graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
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
