package xdstest_test

import (
	"fmt"

	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdsengine/xdsengine/xdstest"
)

// ServerListener builds an xDS-enabled server's Listener of several filter
// chains, in the shape istiod sends.
func ExampleServerListener() {
	l := xdstest.ServerListener("grpc/server?xds.resource.listening_address=[::]:50051", "[::]:50051",
		[]xdstest.FilterChain{
			{Name: "mesh", SourcePrefixes: []string{"fd00::/8"}, RouteConfig: "mesh-routes", TLS: &xdstest.TLS{Identity: "spiffe", Root: "spiffe", RequireClientCertificate: true}},
			{Name: "local", SourceType: listenerpb.FilterChainMatch_SAME_IP_OR_LOOPBACK},
		}, nil)
	sa := l.GetAddress().GetSocketAddress()
	fmt.Println("address", sa.GetAddress(), sa.GetPortValue())
	for _, c := range l.GetFilterChains() {
		fmt.Printf("chain %s: source type %s, %d source prefixes, transport socket %q\n",
			c.GetName(), c.GetFilterChainMatch().GetSourceType(), len(c.GetFilterChainMatch().GetSourcePrefixRanges()), c.GetTransportSocket().GetName())
	}
	route := xdstest.ServerRouteConfig("mesh-routes").GetVirtualHosts()[0].GetRoutes()[0]
	fmt.Println("server routes are non-forwarding:", route.GetNonForwardingAction() != nil)
	// Output:
	// address :: 50051
	// chain mesh: source type ANY, 1 source prefixes, transport socket "envoy.transport_sockets.tls"
	// chain local: source type SAME_IP_OR_LOOPBACK, 0 source prefixes, transport socket ""
	// server routes are non-forwarding: true
}
