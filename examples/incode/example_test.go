package incode_test

import (
	"fmt"
	"log"
	"os"

	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// Example is the README's "In code": resolve a listener from the
// management server named by the bootstrap in the environment.
func Example() {
	srv, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.Set(
		xdstest.R("example.com", xdstest.Listener("example.com", "routes")),
		xdstest.R("routes", xdstest.RouteConfig("routes", "backend")),
		xdstest.R("backend", xdstest.Cluster("backend", "backend-endpoints")),
		xdstest.R("backend-endpoints", xdstest.ClusterLoadAssignment("backend-endpoints",
			xdstest.Locality{Zone: "z1", Endpoints: []string{"10.0.0.1:443", "10.0.0.2:443"}})),
	)
	os.Setenv(bootstrap.EnvConfig, string(srv.Bootstrap(xdstest.BootstrapOptions{})))
	defer os.Unsetenv(bootstrap.EnvConfig)

	// README begin
	bs, err := bootstrap.FromEnv() // GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry(), Target: "xds:///example.com"})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	resolved := make(chan *graph.Graph, 1)
	root := registry.Ref{TypeURL: lds.TypeURL, Name: "example.com"}
	cancel := graph.Watch(e, root, graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
		defer done() // flow control: the next response is read once every watcher is done
		if err != nil {
			log.Printf("cannot resolve: %v (code %s)", err, status.Code(err))
			return
		}
		select {
		case resolved <- g: // the first resolution; later ones follow each change
		default:
		}
	}))
	defer cancel()

	fmt.Print(<-resolved) // listener → route configuration → clusters → endpoints
	// README end

	// Output:
	// Listener example.com: RDS routes
	// └─ RouteConfiguration routes: all [*]: 1 route → backend
	//    └─ Cluster backend: EDS backend-endpoints, xds_wrr_locality_experimental(round_robin)
	//       └─ ClusterLoadAssignment backend-endpoints: region/z1 p0 w1: 10.0.0.1:443 10.0.0.2:443
}
