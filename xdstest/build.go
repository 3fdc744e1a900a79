package xdstest

import (
	"net"
	"strconv"

	xdscorepb "github.com/cncf/xds/go/xds/core/v3"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

var ads = &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}}

// Listener is an API listener whose HttpConnectionManager fetches the
// route configuration routeConfig over ADS.
func Listener(name, routeConfig string) *listenerpb.Listener {
	hcm := &hcmpb.HttpConnectionManager{
		RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{ConfigSource: ads, RouteConfigName: routeConfig}},
		HttpFilters: []*hcmpb.HttpFilter{{
			Name:       "router",
			ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerpb.Router{})},
		}},
	}
	return &listenerpb.Listener{Name: name, ApiListener: &listenerpb.ApiListener{ApiListener: mustAny(hcm)}}
}

// RouteConfig has one virtual host for every domain whose single default
// route sends everything to cluster.
func RouteConfig(name, cluster string) *routepb.RouteConfiguration {
	return &routepb.RouteConfiguration{Name: name, VirtualHosts: []*routepb.VirtualHost{{
		Name:    "all",
		Domains: []string{"*"},
		Routes: []*routepb.Route{{
			Match:  &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: ""}},
			Action: &routepb.Route_Route{Route: &routepb.RouteAction{ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: cluster}}},
		}},
	}}}
}

// Cluster is an EDS cluster, round robin, whose endpoints are the
// ClusterLoadAssignment edsServiceName.
func Cluster(name, edsServiceName string) *clusterpb.Cluster {
	return &clusterpb.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
		EdsClusterConfig:     &clusterpb.Cluster_EdsClusterConfig{EdsConfig: ads, ServiceName: edsServiceName},
		LbPolicy:             clusterpb.Cluster_ROUND_ROBIN,
	}
}

// Locality describes one locality of a ClusterLoadAssignment: either its
// endpoints ("ip:port") or the LEDS collection that holds them.
type Locality struct {
	// Zone is the locality's zone; its region is always "region".
	Zone string
	// Priority is the locality's priority, 0 the highest.
	Priority uint32
	// Weight is the locality's load-balancing weight; 0 means 1.
	Weight uint32
	// Endpoints are the locality's endpoints, each "ip:port", listed
	// inline.
	Endpoints []string
	// Collection, when set, is the name of the LEDS LbEndpointCollection
	// that holds the locality's endpoints (gRFC A95); serve it with
	// [Wrapped] and [Collection].
	Collection string
}

// ClusterLoadAssignment builds an EDS resource from localities. It panics
// like [LbEndpoint] on an endpoint that is not "ip:port".
func ClusterLoadAssignment(name string, localities ...Locality) *endpointpb.ClusterLoadAssignment {
	cla := &endpointpb.ClusterLoadAssignment{ClusterName: name}
	for _, l := range localities {
		w := l.Weight
		if w == 0 {
			w = 1
		}
		lle := &endpointpb.LocalityLbEndpoints{
			Locality:            &corepb.Locality{Region: "region", Zone: l.Zone},
			Priority:            l.Priority,
			LoadBalancingWeight: wrapperspb.UInt32(w),
		}
		if l.Collection != "" {
			lle.LbConfig = &endpointpb.LocalityLbEndpoints_LedsClusterLocalityConfig{LedsClusterLocalityConfig: &endpointpb.LedsClusterLocalityConfig{
				LedsConfig:         &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Self{Self: &corepb.SelfConfigSource{}}},
				LedsCollectionName: l.Collection,
			}}
		}
		for _, ep := range l.Endpoints {
			lle.LbEndpoints = append(lle.LbEndpoints, LbEndpoint(ep))
		}
		cla.Endpoints = append(cla.Endpoints, lle)
	}
	return cla
}

// LbEndpoint is a healthy endpoint at addr ("ip:port"). It panics if addr
// is not a host and a numeric port.
func LbEndpoint(addr string) *endpointpb.LbEndpoint {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		panic(err)
	}
	port, err := strconv.ParseUint(portStr, 10, 32)
	if err != nil {
		panic(err)
	}
	return &endpointpb.LbEndpoint{
		HealthStatus: corepb.HealthStatus_HEALTHY,
		HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{Address: &corepb.Address{
			Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
				Address: host, PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: uint32(port)},
			}},
		}}},
	}
}

// Collection is an LbEndpointCollection of the endpoints ("ip:port"), each
// an inline entry (gRFC A95). It panics like [LbEndpoint].
func Collection(endpoints ...string) *endpointpb.LbEndpointCollection {
	c := &endpointpb.LbEndpointCollection{}
	for i, ep := range endpoints {
		c.Entries = append(c.Entries, &xdscorepb.CollectionEntry{ResourceSpecifier: &xdscorepb.CollectionEntry_InlineEntry_{
			InlineEntry: &xdscorepb.CollectionEntry_InlineEntry{Name: "ep" + strconv.Itoa(i), Resource: mustAny(LbEndpoint(ep))},
		}})
	}
	return c
}
