package rds_test

import (
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/rds"
)

func exampleRouteConfiguration() *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: "routes",
		VirtualHosts: []*routev3.VirtualHost{
			{
				Name:    "payments",
				Domains: []string{"payments.example.com"},
				Routes: []*routev3.Route{{
					Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
					Action: &routev3.Route_Route{Route: &routev3.RouteAction{
						ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "payments-v2"},
					}},
				}},
			},
			{
				Name:    "default",
				Domains: []string{"*"},
				Routes: []*routev3.Route{{
					Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: ""}},
					Action: &routev3.Route_Route{Route: &routev3.RouteAction{
						ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "fallback"},
					}},
				}},
			},
		},
	}
}

// Decoding runs the decoder and the validator; the engine does the same
// with every RouteConfiguration a server sends.
func ExampleType_decode() {
	raw, err := proto.Marshal(exampleRouteConfiguration())
	if err != nil {
		panic(err)
	}
	res, err := rds.Type.Decode(raw, registry.DecodeOptions{})
	if err != nil {
		fmt.Println("NACK:", err)
		return
	}
	rc := res.Resource.(*rds.RouteConfiguration)
	fmt.Println(res.Name, len(rc.VirtualHosts), "virtual hosts")
	fmt.Println("depends on", rds.Type.Refs(rc))
	// Output:
	// routes 2 virtual hosts
	// depends on [type.googleapis.com/envoy.config.cluster.v3.Cluster/payments-v2 type.googleapis.com/envoy.config.cluster.v3.Cluster/fallback]
}

func ExampleRouteConfiguration_FindVirtualHost() {
	rc, err := rds.FromProto(exampleRouteConfiguration())
	if err != nil {
		panic(err)
	}
	for _, authority := range []string{"payments.example.com", "PAYMENTS.example.com", "payments.example.com:443", "other.example.com"} {
		vh := rc.FindVirtualHost(authority)
		fmt.Printf("%s -> %s -> %s\n", authority, vh.Name, vh.Routes[0].Action.Cluster)
	}
	// Output:
	// payments.example.com -> payments -> payments-v2
	// PAYMENTS.example.com -> payments -> payments-v2
	// payments.example.com:443 -> default -> fallback
	// other.example.com -> default -> fallback
}

// A Source that delivers a decoded resource synchronously stands in for an
// engine here.
func ExampleWatch() {
	raw, err := proto.Marshal(exampleRouteConfiguration())
	if err != nil {
		panic(err)
	}
	src := engine.NewSource(registry.MustNew(rds.Type), func(typeURL, name string, w engine.ResourceWatcher) func() {
		res, err := rds.Type.Decode(raw, registry.DecodeOptions{})
		w.OnResourceChanged(res.Resource, err, func() {})
		return func() {}
	})

	cancel := rds.Watch(src, "routes", engine.TypedWatcherFuncs[*rds.RouteConfiguration]{
		ResourceChanged: func(rc *rds.RouteConfiguration, err error, done func()) {
			defer done()
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			fmt.Println("got", rc.Name, "with", len(rc.VirtualHosts), "virtual hosts")
		},
	})
	defer cancel()
	// Output:
	// got routes with 2 virtual hosts
}
