package eds_test

import (
	"fmt"
	"log"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/eds"
)

// exampleAssignment serializes a ClusterLoadAssignment with one locality
// of two endpoints and a drop category.
func exampleAssignment() []byte {
	endpoint := func(ip string) *endpointpb.LbEndpoint {
		return &endpointpb.LbEndpoint{HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{
			Address: &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
				Address: ip, PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: 8080},
			}}},
		}}}
	}
	raw, err := proto.Marshal(&endpointpb.ClusterLoadAssignment{
		ClusterName: "backend",
		Endpoints: []*endpointpb.LocalityLbEndpoints{{
			Locality:            &corepb.Locality{Region: "eu", Zone: "eu-1a"},
			LoadBalancingWeight: wrapperspb.UInt32(10),
			LbEndpoints:         []*endpointpb.LbEndpoint{endpoint("10.0.0.1"), endpoint("2001:db8::2")},
		}},
		Policy: &endpointpb.ClusterLoadAssignment_Policy{DropOverloads: []*endpointpb.ClusterLoadAssignment_Policy_DropOverload{{
			Category:       "throttle",
			DropPercentage: &typepb.FractionalPercent{Numerator: 5, Denominator: typepb.FractionalPercent_HUNDRED},
		}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	return raw
}

func Example_decode() {
	res, err := eds.Type.Decode(exampleAssignment(), registry.DecodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	cla := res.Resource.(*eds.ClusterLoadAssignment)
	fmt.Println(cla.ClusterName)
	for _, loc := range cla.Localities {
		fmt.Println(loc.ID.Zone, "priority", loc.Priority, "weight", loc.Weight)
		for _, ep := range loc.Endpoints {
			fmt.Println(" ", ep.Address)
		}
	}
	for _, d := range cla.Drops {
		fmt.Println("drop", d.Category, d.PartsPerMillion, "ppm")
	}
	// Output:
	// backend
	// eu-1a priority 0 weight 10
	//   10.0.0.1:8080
	//   [2001:db8::2]:8080
	// drop throttle 50000 ppm
}

func ExampleWatch() {
	// A Source that answers every watch at once from fixed bytes; an
	// *engine.Engine is used the same way.
	src := engine.NewSource(registry.MustNew(eds.Type), func(typeURL, name string, w engine.ResourceWatcher) func() {
		res, err := eds.Type.Decode(exampleAssignment(), registry.DecodeOptions{})
		w.OnResourceChanged(res.Resource, err, func() {})
		return func() {}
	})
	cancel := eds.Watch(src, "backend", engine.TypedWatcherFuncs[*eds.ClusterLoadAssignment]{
		ResourceChanged: func(cla *eds.ClusterLoadAssignment, err error, done func()) {
			defer done()
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			fmt.Printf("%s: %d localities\n", cla.ClusterName, len(cla.Localities))
		},
	})
	defer cancel()
	// Output:
	// backend: 1 localities
}
