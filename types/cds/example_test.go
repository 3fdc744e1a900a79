package cds_test

import (
	"fmt"
	"log"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	aggregatepb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
)

func exampleCluster() []byte {
	raw, err := proto.Marshal(&clusterpb.Cluster{
		Name:                 "backend",
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
		EdsClusterConfig: &clusterpb.Cluster_EdsClusterConfig{
			EdsConfig:   &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}},
			ServiceName: "backend-endpoints",
		},
		LbPolicy:  clusterpb.Cluster_RING_HASH,
		LrsServer: &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Self{Self: &corepb.SelfConfigSource{}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	return raw
}

func Example_decode() {
	res, err := cds.Type.Decode(exampleCluster(), registry.DecodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	c := res.Resource.(*cds.Cluster)
	fmt.Println(c.Name, c.Kind, "EDS name:", c.EDSName())
	fmt.Println(c.LBPolicy.Kind, c.LBPolicy.RingHash.MinRingSize, c.LBPolicy.RingHash.MaxRingSize)
	fmt.Println("load reporting:", c.LoadReporting, "max requests:", c.MaxRequests)
	for _, ref := range cds.Type.Refs(c) {
		fmt.Println("depends on", ref)
	}
	// Output:
	// backend EDS EDS name: backend-endpoints
	// ring_hash_experimental 1024 8388608
	// load reporting: true max requests: 1024
	// depends on type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment/backend-endpoints
}

func Example_aggregate() {
	cfg, err := anypb.New(&aggregatepb.ClusterConfig{Clusters: []string{"primary", "fallback"}})
	if err != nil {
		log.Fatal(err)
	}
	raw, err := proto.Marshal(&clusterpb.Cluster{
		Name: "backend",
		ClusterDiscoveryType: &clusterpb.Cluster_ClusterType{ClusterType: &clusterpb.Cluster_CustomClusterType{
			Name: "envoy.clusters.aggregate", TypedConfig: cfg,
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := cds.Type.Decode(raw, registry.DecodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	c := res.Resource.(*cds.Cluster)
	fmt.Println(c.Kind, c.AggregateClusters)
	// Output:
	// AGGREGATE [primary fallback]
}

func ExampleWatch() {
	// A Source that answers every watch at once from fixed bytes; an
	// *engine.Engine is used the same way.
	src := engine.NewSource(registry.MustNew(cds.Type), func(typeURL, name string, w engine.ResourceWatcher) func() {
		res, err := cds.Type.Decode(exampleCluster(), registry.DecodeOptions{})
		w.OnResourceChanged(res.Resource, err, func() {})
		return func() {}
	})
	cancel := cds.Watch(src, "backend", engine.TypedWatcherFuncs[*cds.Cluster]{
		ResourceChanged: func(c *cds.Cluster, err error, done func()) {
			defer done()
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			fmt.Println(c.Name, "uses", c.EDSName())
		},
	})
	defer cancel()
	// Output:
	// backend uses backend-endpoints
}
