package graph_test

import (
	"fmt"
	"log"

	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// A gRPC server's Listener is Shallow: its RouteConfigurations are
// resolved, and the cluster a misconfigured route names is not watched, as
// a server watches no clusters (gRFC A36).
func ExampleShallow() {
	cp, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	const name = "grpc/server?xds.resource.listening_address=0.0.0.0:50051"
	cp.Set(
		xdstest.R(name, xdstest.ServerListener(name, "0.0.0.0:50051", []xdstest.FilterChain{
			{Name: "local", SourceType: listenerpb.FilterChainMatch_SAME_IP_OR_LOOPBACK, RouteConfig: "local-routes"},
		}, &xdstest.FilterChain{Name: "others", RouteConfig: "other-routes"})),
		xdstest.R("local-routes", xdstest.ServerRouteConfig("local-routes")),
		xdstest.R("other-routes", xdstest.RouteConfig("other-routes", "no-such-cluster")),
	)
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(cp.Addr())}, Node: bootstrap.Node{ID: "example-node"}},
		Registry:  builtin.Registry(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	graphs := make(chan *graph.Graph, 1)
	cancel := graph.Watch(e, registry.Ref{TypeURL: lds.TypeURL, Name: name}, graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
		defer done()
		if err != nil {
			log.Fatal(err)
		}
		graphs <- g
	}))
	defer cancel()
	g := <-graphs
	fmt.Print(g)
	others := g.Node(g.Root).Resource.(*lds.Listener).Server.DefaultFilterChain
	fmt.Println("others:", others.HTTP.RouteConfig.CheckServerUse())
	// Output:
	// Listener grpc/server?xds.resource.listening_address=0.0.0.0:50051: server 0.0.0.0:50051: chain[0] "local" (plaintext) RDS local-routes; default "others" (plaintext) RDS other-routes
	// ├─ RouteConfiguration local-routes: inbound [*]: 1 route
	// └─ RouteConfiguration other-routes: all [*]: 1 route → no-such-cluster
	// others: virtual_hosts[0].routes[0]: action is cluster, not non_forwarding_action: a server fails the RPCs it matches with UNAVAILABLE
}
