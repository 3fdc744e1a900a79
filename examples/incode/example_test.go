package main

import (
	"log"
	"os"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/xdstest"
)

// Example runs the README's "In code" program against an embedded
// management server that serves example.com.
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

	main()
	// Output:
	// Listener example.com: RDS routes
	// └─ RouteConfiguration routes: all [*]: 1 route → backend
	//    └─ Cluster backend: EDS backend-endpoints, xds_wrr_locality_experimental(round_robin)
	//       └─ ClusterLoadAssignment backend-endpoints: region/z1 p0 w1: 10.0.0.1:443 10.0.0.2:443
}
