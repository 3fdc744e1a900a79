package lds_test

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/lds"
)

// exampleListener is what a control plane sends for the channel target
// "xds:///payments.example.com": an API listener that fetches its routes
// with RDS over the same ADS stream.
func exampleListener() []byte {
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		panic(err)
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: "payments-routes",
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}},
	})
	if err != nil {
		panic(err)
	}
	raw, err := proto.Marshal(&listenerv3.Listener{
		Name:        "payments.example.com",
		ApiListener: &listenerv3.ApiListener{ApiListener: hcm},
	})
	if err != nil {
		panic(err)
	}
	return raw
}

// Decoding runs the decoder and the validator; the engine does the same
// with every Listener a server sends.
func ExampleType_decode() {
	res, err := lds.Type.Decode(exampleListener(), registry.DecodeOptions{})
	if err != nil {
		fmt.Println("NACK:", err)
		return
	}
	l := res.Resource.(*lds.Listener)
	fmt.Println(res.Name, "routes with", l.RouteConfigName)
	for _, f := range l.HTTPFilters {
		fmt.Println("filter", f.Name, f.ConfigTypeURL)
	}
	fmt.Println("depends on", lds.Type.Refs(l))
	// Output:
	// payments.example.com routes with payments-routes
	// filter envoy.filters.http.router type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
	// depends on [type.googleapis.com/envoy.config.route.v3.RouteConfiguration/payments-routes]
}

// A Source that delivers a decoded resource synchronously stands in for an
// engine here.
func ExampleWatch() {
	src := engine.NewSource(registry.MustNew(lds.Type), func(typeURL, name string, w engine.ResourceWatcher) func() {
		res, err := lds.Type.Decode(exampleListener(), registry.DecodeOptions{})
		w.OnResourceChanged(res.Resource, err, func() {})
		return func() {}
	})

	cancel := lds.Watch(src, "payments.example.com", engine.TypedWatcherFuncs[*lds.Listener]{
		ResourceChanged: func(l *lds.Listener, err error, done func()) {
			defer done()
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			fmt.Printf("%s: fetch RouteConfiguration %q\n", l.Name, l.RouteConfigName)
		},
	})
	defer cancel()
	// Output:
	// payments.example.com: fetch RouteConfiguration "payments-routes"
}
