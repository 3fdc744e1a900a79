package leds_test

import (
	"fmt"
	"log"

	xdscorepb "github.com/cncf/xds/go/xds/core/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/leds"
)

// exampleCollection serializes a collection of two endpoints, the second
// one draining.
func exampleCollection() []byte {
	var coll endpointpb.LbEndpointCollection
	for i, ip := range []string{"10.0.0.1", "10.0.0.2"} {
		lb := &endpointpb.LbEndpoint{HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{
			Address: &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
				Address: ip, PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: 8080},
			}}},
		}}}
		if i == 1 {
			lb.HealthStatus = corepb.HealthStatus_DRAINING
		}
		a, err := anypb.New(lb)
		if err != nil {
			log.Fatal(err)
		}
		coll.Entries = append(coll.Entries, &xdscorepb.CollectionEntry{ResourceSpecifier: &xdscorepb.CollectionEntry_InlineEntry_{
			InlineEntry: &xdscorepb.CollectionEntry_InlineEntry{Resource: a},
		}})
	}
	raw, err := proto.Marshal(&coll)
	if err != nil {
		log.Fatal(err)
	}
	return raw
}

func Example_decode() {
	// The engine passes the name of the discovery Resource wrapper, since
	// the collection itself has none.
	res, err := leds.Type.Decode(exampleCollection(), registry.DecodeOptions{
		WrapperName: "xdstp://xdstest.example/envoy.config.endpoint.v3.LbEndpointCollection/svc/zone-a",
	})
	if err != nil {
		log.Fatal(err)
	}
	coll := res.Resource.(*leds.LbEndpointCollection)
	fmt.Println(coll.Name)
	for _, ep := range coll.Endpoints {
		fmt.Println(ep.Address, ep.Weight, ep.HealthStatus, ep.Usable())
	}
	// Output:
	// xdstp://xdstest.example/envoy.config.endpoint.v3.LbEndpointCollection/svc/zone-a
	// 10.0.0.1:8080 1 UNKNOWN true
	// 10.0.0.2:8080 1 DRAINING false
}

func ExampleWatch() {
	// A Source that answers every watch at once from fixed bytes; an
	// *engine.Engine is used the same way.
	src := engine.NewSource(registry.MustNew(leds.Type), func(typeURL, name string, w engine.ResourceWatcher) func() {
		res, err := leds.Type.Decode(exampleCollection(), registry.DecodeOptions{WrapperName: name})
		w.OnResourceChanged(res.Resource, err, func() {})
		return func() {}
	})
	cancel := leds.Watch(src, "xdstp://xdstest.example/envoy.config.endpoint.v3.LbEndpointCollection/svc/zone-a",
		engine.TypedWatcherFuncs[*leds.LbEndpointCollection]{
			ResourceChanged: func(c *leds.LbEndpointCollection, err error, done func()) {
				defer done()
				if err != nil {
					fmt.Println("error:", err)
					return
				}
				fmt.Printf("%d endpoints\n", len(c.Endpoints))
			},
		})
	defer cancel()
	// Output:
	// 2 endpoints
}

// ExampleGlobEndpoints decodes two members of a LEDS glob collection
// (xRFC TP1), as an engine does when an incremental server sends them,
// and lists the collection's endpoints as an EDS locality gets them.
// A program watches the collection with WatchGlob, or through the
// dependency graph of a ClusterLoadAssignment that names it.
func ExampleGlobEndpoints() {
	const glob = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpoint/backend/z1/*"
	coll := &registry.GlobCollection{Name: glob}
	for _, m := range []struct{ id, ip string }{{"m1", "10.0.0.1"}, {"m2", "10.0.0.2"}} {
		raw, err := proto.Marshal(&endpointpb.LbEndpoint{HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{
			Address: &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
				Address: m.ip, PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: 8080},
			}}},
		}}})
		if err != nil {
			log.Fatal(err)
		}
		name := glob[:len(glob)-1] + m.id
		res, err := leds.EndpointType.Decode(raw, registry.DecodeOptions{WrapperName: name})
		if err != nil {
			log.Fatal(err)
		}
		coll.Members = append(coll.Members, registry.GlobMember{Name: name, Resource: res.Resource})
	}
	eps, err := leds.GlobEndpoints(coll)
	if err != nil {
		log.Fatal(err)
	}
	for _, ep := range eps {
		fmt.Println(ep.Address)
	}
	// Output:
	// 10.0.0.1:8080
	// 10.0.0.2:8080
}
