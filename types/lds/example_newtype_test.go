package lds_test

import (
	"fmt"
	"log"

	xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/lds"
)

// A client that runs an HTTP filter of its own accepts Listeners that use
// it without is_optional; with the built-in type, gRPC's rules alone,
// the same Listener is rejected.
func ExampleNewType() {
	tenant, err := anypb.New(&xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/example.filters.v1.Tenant"})
	if err != nil {
		log.Fatal(err)
	}
	router, err := anypb.New(&routerpb.Router{})
	if err != nil {
		log.Fatal(err)
	}
	hcm, err := anypb.New(&hcmpb.HttpConnectionManager{
		RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{RouteConfigName: "routes",
			ConfigSource: &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}}}},
		HttpFilters: []*hcmpb.HttpFilter{
			{Name: "tenant", ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: tenant}},
			{Name: "router", ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: router}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	raw, err := proto.Marshal(&listenerpb.Listener{Name: "service", ApiListener: &listenerpb.ApiListener{ApiListener: hcm}})
	if err != nil {
		log.Fatal(err)
	}
	withTenant := lds.NewType(lds.Options{HTTPFilter: func(typeName string) bool { return typeName == "example.filters.v1.Tenant" }})
	for _, typ := range []registry.ResourceType{withTenant, lds.Type} {
		_, err := typ.Decode(raw, registry.DecodeOptions{})
		fmt.Println(err == nil)
	}
	// Output:
	// true
	// false
}
