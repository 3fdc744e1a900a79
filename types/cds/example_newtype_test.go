package cds_test

import (
	"fmt"
	"log"

	xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	roundrobinpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
)

// ExampleNewType accepts a load-balancing policy the client implements
// itself. The management server lists it first in the Cluster's
// load_balancing_policy, as a TypedStruct, with round_robin after it for
// clients that lack it (gRFC A52). cds.Type knows no custom policy, so it
// takes round_robin; a type from NewType whose CustomLBPolicy knows the
// name takes the custom policy, with its configuration as JSON. The
// client's registry is the built-in one with cds.Type replaced.
func ExampleNewType() {
	cfg, err := structpb.NewStruct(map[string]any{"probeInterval": "5s"})
	if err != nil {
		log.Fatal(err)
	}
	custom, err := anypb.New(&xdstypepb.TypedStruct{TypeUrl: "type.googleapis.com/example.lb.v1.LeastLatency", Value: cfg})
	if err != nil {
		log.Fatal(err)
	}
	fallback, err := anypb.New(&roundrobinpb.RoundRobin{})
	if err != nil {
		log.Fatal(err)
	}
	raw, err := proto.Marshal(&clusterpb.Cluster{
		Name:                 "backend",
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
		EdsClusterConfig: &clusterpb.Cluster_EdsClusterConfig{
			EdsConfig: &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}},
		},
		LoadBalancingPolicy: &clusterpb.LoadBalancingPolicy{Policies: []*clusterpb.LoadBalancingPolicy_Policy{
			{TypedExtensionConfig: &corepb.TypedExtensionConfig{Name: "least-latency", TypedConfig: custom}},
			{TypedExtensionConfig: &corepb.TypedExtensionConfig{Name: "round-robin", TypedConfig: fallback}},
		}},
	})
	if err != nil {
		log.Fatal(err)
	}

	withCustom := cds.NewType(cds.Options{
		// The client's own LB policy registry answers; it must be safe for
		// concurrent use.
		CustomLBPolicy: func(name string) bool { return name == "example.lb.v1.LeastLatency" },
	})
	types := builtin.Types()
	for i, t := range types {
		if t.TypeURL == cds.TypeURL {
			types[i] = withCustom
		}
	}
	reg := registry.MustNew(types...) // engine.Config.Registry

	clusterType, _ := reg.Lookup(cds.TypeURL)
	for _, v := range []struct {
		name string
		rt   registry.ResourceType
	}{{"cds.Type", cds.Type}, {"NewType", clusterType}} {
		res, err := v.rt.Decode(raw, registry.DecodeOptions{})
		if err != nil {
			log.Fatal(err)
		}
		p := res.Resource.(*cds.Cluster).LBPolicy
		if p.Kind == cds.LBCustom {
			fmt.Println(v.name+":", p.Kind, p.Custom.Name, string(p.Custom.Config))
		} else {
			fmt.Println(v.name+":", p.Kind)
		}
	}
	// Output:
	// cds.Type: round_robin
	// NewType: custom example.lb.v1.LeastLatency {"probeInterval":"5s"}
}
