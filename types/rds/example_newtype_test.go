package rds_test

import (
	"fmt"
	"log"

	xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/rds"
)

// A client that runs an HTTP filter of its own accepts a route's override
// of it (typed_per_filter_config) without is_optional; with the built-in
// type, gRPC's rules alone, the same RouteConfiguration is rejected.
func ExampleNewType() {
	override, err := anypb.New(&xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/example.filters.v1.Tenant"})
	if err != nil {
		log.Fatal(err)
	}
	raw, err := proto.Marshal(&routepb.RouteConfiguration{Name: "routes", VirtualHosts: []*routepb.VirtualHost{{
		Name: "all", Domains: []string{"*"},
		Routes: []*routepb.Route{{
			Match:                &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"}},
			Action:               &routepb.Route_Route{Route: &routepb.RouteAction{ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: "backend"}}},
			TypedPerFilterConfig: map[string]*anypb.Any{"tenant": override},
		}},
	}}})
	if err != nil {
		log.Fatal(err)
	}
	withTenant := rds.NewType(rds.Options{HTTPFilter: func(typeName string) bool { return typeName == "example.filters.v1.Tenant" }})
	for _, typ := range []registry.ResourceType{withTenant, rds.Type} {
		_, err := typ.Decode(raw, registry.DecodeOptions{})
		fmt.Println(err == nil)
	}
	// Output:
	// true
	// false
}
