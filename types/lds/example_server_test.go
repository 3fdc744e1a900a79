package lds_test

import (
	"fmt"
	"net/netip"

	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// exampleServerListener is what a control plane sends an xDS-enabled
// server listening on 0.0.0.0:50051: mutual TLS for the mesh's network,
// plaintext for the node itself, TLS for everyone else.
func exampleServerListener() []byte {
	raw, err := proto.Marshal(xdstest.ServerListener("grpc/server?xds.resource.listening_address=0.0.0.0:50051", "0.0.0.0:50051",
		[]xdstest.FilterChain{
			{Name: "local", SourceType: listenerpb.FilterChainMatch_SAME_IP_OR_LOOPBACK},
			{Name: "mesh", SourcePrefixes: []string{"10.0.0.0/8"}, RouteConfig: "mesh-routes",
				TLS: &xdstest.TLS{Identity: "spiffe", Root: "spiffe", RequireClientCertificate: true}},
		},
		&xdstest.FilterChain{Name: "public", TLS: &xdstest.TLS{Identity: "public"}},
	))
	if err != nil {
		panic(err)
	}
	return raw
}

// A server's Listener decodes to a Listener whose Server part holds the
// filter chains. The bootstrap's certificate_providers must define the
// providers the chains name.
func ExampleServerListener() {
	opts := registry.DecodeOptions{CertificateProviders: func(name string) bool { return name == "spiffe" || name == "public" }}
	res, err := lds.Type.Decode(exampleServerListener(), opts)
	if err != nil {
		fmt.Println("NACK:", err)
		return
	}
	s := res.Resource.(*lds.Listener).Server
	fmt.Println("listening on", s.Addr())
	for _, c := range append(s.FilterChains, *s.DefaultFilterChain) {
		fmt.Printf("%s: TLS %v, routes %q\n", c.Name, c.TLS != nil, c.HTTP.RouteConfigName)
	}
	// Output:
	// listening on 0.0.0.0:50051
	// local: TLS false, routes ""
	// mesh: TLS true, routes "mesh-routes"
	// public: TLS true, routes ""
}

// FilterChainFor picks a connection's chain as gRPC does.
func ExampleServerListener_FilterChainFor() {
	res, err := lds.Type.Decode(exampleServerListener(), registry.DecodeOptions{})
	if err != nil {
		panic(err)
	}
	s := res.Resource.(*lds.Listener).Server
	local := netip.MustParseAddrPort("10.0.0.7:50051")
	for _, peer := range []string{"127.0.0.1:41000", "10.3.2.1:41000", "203.0.113.9:41000"} {
		fmt.Println(peer, "→", s.FilterChainFor(local, netip.MustParseAddrPort(peer)).Name)
	}
	// Output:
	// 127.0.0.1:41000 → local
	// 10.3.2.1:41000 → mesh
	// 203.0.113.9:41000 → public
}

// WatchServer delivers server Listeners only; a Source that delivers a
// decoded resource synchronously stands in for an engine here.
func ExampleWatchServer() {
	src := engine.NewSource(registry.MustNew(lds.Type), func(typeURL, name string, w engine.ResourceWatcher) func() {
		res, err := lds.Type.Decode(exampleServerListener(), registry.DecodeOptions{})
		w.OnResourceChanged(res.Resource, err, func() {})
		return func() {}
	})
	cancel := lds.WatchServer(src, "grpc/server?xds.resource.listening_address=0.0.0.0:50051", engine.TypedWatcherFuncs[*lds.Listener]{
		ResourceChanged: func(l *lds.Listener, err error, done func()) {
			defer done()
			if err != nil {
				fmt.Println("not serving:", err)
				return
			}
			fmt.Println(l)
		},
	})
	defer cancel()
	// Output:
	// server 0.0.0.0:50051: chain[0] "local" (plaintext) inline routes; chain[1] "mesh" (mTLS) RDS mesh-routes; default "public" (TLS) inline routes
}

// Unmatchable says why gRPC never selects a chain.
func ExampleFilterChainMatch_Unmatchable() {
	for _, m := range []lds.FilterChainMatch{
		{SourcePorts: []uint32{8080}},
		{TransportProtocol: "tls"},
		{ServerNames: []string{"api.example"}},
	} {
		fmt.Printf("%q\n", m.Unmatchable())
	}
	// Output:
	// ""
	// "transport_protocol is \"tls\""
	// "server_names is set"
}
