package passthrough_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/passthrough"
)

// staticCluster is the kind of cluster istiod sends every Envoy sidecar.
func staticCluster() []byte {
	raw, err := proto.Marshal(&clusterpb.Cluster{
		Name:                 "BlackHoleCluster",
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(10 * time.Second),
	})
	if err != nil {
		log.Fatal(err)
	}
	return raw
}

// The built-in registry validates as gRPC does and rejects the STATIC
// cluster Envoy uses; the pass-through registry checks that the cluster
// reads, and takes it.
func ExampleRegistry() {
	raw := staticCluster()
	for _, r := range []struct {
		name string
		reg  *registry.Registry
	}{{"builtin", builtin.Registry()}, {"passthrough", passthrough.Registry()}} {
		rt, _ := r.reg.Lookup(passthrough.ClusterTypeURL)
		res, err := rt.Decode(raw, registry.DecodeOptions{})
		if err != nil {
			fmt.Printf("%s: NACK %s: %v\n", r.name, res.Name, err)
			continue
		}
		fmt.Printf("%s: %v\n", r.name, res.Resource)
	}
	// Output:
	// builtin: NACK BlackHoleCluster: type: discovery type STATIC is not supported; must be EDS, LOGICAL_DNS or an aggregate cluster_type
	// passthrough: Cluster "BlackHoleCluster" (24 bytes)
}

// With PGV validation the rules are protoc-gen-validate's, as Envoy
// applies them, to the resource and to the extension configs packed in
// it; every violation is listed, on one line.
func ExampleRegistry_validation() {
	hcm, _ := anypb.New(&hcmpb.HttpConnectionManager{
		RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{RouteConfigName: "80"}},
	})
	raw, _ := proto.Marshal(&listenerpb.Listener{
		Name: "0.0.0.0_80",
		FilterChains: []*listenerpb.FilterChain{{Filters: []*listenerpb.Filter{{
			ConfigType: &listenerpb.Filter_TypedConfig{TypedConfig: hcm}}}}},
	})
	rt, _ := passthrough.Options{Validation: passthrough.PGV}.Registry().Lookup(passthrough.ListenerTypeURL)
	res, err := rt.Decode(raw, registry.DecodeOptions{})
	fmt.Printf("NACK %s: %v\n", res.Name, err)
	// Output:
	// NACK 0.0.0.0_80: filter_chains[0].filters[0].name: value length must be at least 1 runes; filter_chains[0].filters[0].typed_config.stat_prefix: value length must be at least 1 runes
}

// istiod's Listener for a proxyless gRPC client is an api_listener whose
// connection manager has no stat_prefix: gRPC ignores the field, Envoy's
// rules (PGV) require it. Structural validation, the default, takes it;
// PGV, for a relay that serves only Envoys, rejects it.
func ExampleOptions() {
	hcm, _ := anypb.New(&hcmpb.HttpConnectionManager{
		RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{RouteConfigName: "reviews:9080",
			ConfigSource: &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}}}},
	})
	raw, _ := proto.Marshal(&listenerpb.Listener{Name: "reviews:9080", ApiListener: &listenerpb.ApiListener{ApiListener: hcm}})
	for _, v := range []passthrough.Validation{passthrough.Structural, passthrough.PGV} {
		rt, _ := passthrough.Options{Validation: v}.Registry().Lookup(passthrough.ListenerTypeURL)
		res, err := rt.Decode(raw, registry.DecodeOptions{})
		if err != nil {
			fmt.Printf("%v: NACK %s: %v\n", v, res.Name, err)
			continue
		}
		fmt.Printf("%v: takes %s, whose routes are %v\n", v, res.Name, rt.Refs(res.Resource))
	}
	// Output:
	// structural: takes reviews:9080, whose routes are [type.googleapis.com/envoy.config.route.v3.RouteConfiguration/reviews:9080]
	// pgv: NACK reviews:9080: api_listener.api_listener.stat_prefix: value length must be at least 1 runes
}

// Options.Type makes a type of any linked message, checked as the options
// say.
func ExampleOptions_Type() {
	rt, err := passthrough.Options{Validation: passthrough.PGV}.Type(passthrough.ClusterTypeURL)
	if err != nil {
		log.Fatal(err)
	}
	raw, _ := proto.Marshal(&clusterpb.Cluster{Name: "c", ConnectTimeout: durationpb.New(-time.Second)})
	_, err = rt.Decode(raw, registry.DecodeOptions{})
	fmt.Println(err)
	// Output: connect_timeout: value must be greater than 0s
}

// A gateway's listener names the routes its connection manager fetches
// with RDS and the secret it fetches with SDS, both over ADS.
func ExampleRegistry_dependencies() {
	ads := &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}}
	hcm, _ := anypb.New(&hcmpb.HttpConnectionManager{
		StatPrefix:     "gateway",
		RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{ConfigSource: ads, RouteConfigName: "https.443"}},
	})
	tls, _ := anypb.New(&tlspb.DownstreamTlsContext{CommonTlsContext: &tlspb.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlspb.SdsSecretConfig{{Name: "kubernetes://shop-cred", SdsConfig: ads}}}})
	raw, _ := proto.Marshal(&listenerpb.Listener{
		Name: "0.0.0.0_443",
		FilterChains: []*listenerpb.FilterChain{{
			TransportSocket: &corepb.TransportSocket{Name: "tls", ConfigType: &corepb.TransportSocket_TypedConfig{TypedConfig: tls}},
			Filters: []*listenerpb.Filter{{Name: "envoy.filters.network.http_connection_manager",
				ConfigType: &listenerpb.Filter_TypedConfig{TypedConfig: hcm}}},
		}},
	})
	rt, _ := passthrough.Registry().Lookup(passthrough.ListenerTypeURL)
	res, err := rt.Decode(raw, registry.DecodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, ref := range rt.Refs(res.Resource) {
		fmt.Println(ref)
	}
	// Output:
	// type.googleapis.com/envoy.config.route.v3.RouteConfiguration/https.443
	// type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret/kubernetes://shop-cred
}

// Types lists what each Envoy type is named by and whether a SotW
// response of it carries every resource.
func ExampleTypes() {
	for _, rt := range passthrough.Types() {
		fmt.Printf("%-25s name field %d, all required %v\n", rt.ShortName(), rt.NameField, rt.AllResourcesRequiredInSotW)
	}
	// Output:
	// Listener                  name field 1, all required true
	// RouteConfiguration        name field 1, all required false
	// ScopedRouteConfiguration  name field 1, all required false
	// VirtualHost               name field 0, all required false
	// Cluster                   name field 1, all required true
	// ClusterLoadAssignment     name field 1, all required false
	// LbEndpoint                name field 0, all required false
	// LbEndpointCollection      name field 0, all required false
	// Secret                    name field 1, all required false
	// Runtime                   name field 1, all required false
	// TypedExtensionConfig      name field 1, all required false
	// ThriftRouteConfiguration  name field 1, all required false
}

// Type makes a type for any message linked into the program; a registry
// built with registry.New or Registry().With holds it beside the others.
func ExampleType() {
	rt, err := passthrough.Type("type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig")
	fmt.Println(rt.ShortName(), rt.NameField, err)

	_, err = passthrough.Type("type.googleapis.com/example.v1.NotLinked")
	fmt.Println(errors.Is(err, passthrough.ErrUnknownMessage))
	// Output:
	// TypedExtensionConfig 1 <nil>
	// true
}

func decodedCluster() *passthrough.Resource {
	rt, _ := passthrough.Registry().Lookup(passthrough.ClusterTypeURL)
	res, err := rt.Decode(staticCluster(), registry.DecodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	return res.Resource.(*passthrough.Resource)
}

// Message is the decoded message, to read; Proto a copy, to change.
func ExampleResource_Message() {
	r := decodedCluster()
	c := r.Message().(*clusterpb.Cluster)
	fmt.Println(r.TypeURL(), r.Name(), c.GetType(), c.GetConnectTimeout().AsDuration())

	changed := r.Proto().(*clusterpb.Cluster)
	changed.ConnectTimeout = durationpb.New(time.Second)
	fmt.Println(c.GetConnectTimeout().AsDuration(), changed.GetConnectTimeout().AsDuration())
	// Output:
	// type.googleapis.com/envoy.config.cluster.v3.Cluster BlackHoleCluster STATIC 10s
	// 10s 1s
}

// Raw is what the server sent, to relay as it is.
func ExampleResource_Raw() {
	r := decodedCluster()
	fmt.Println(bytes.Equal(r.Raw(), staticCluster()), r.Equal(decodedCluster()))
	// Output: true true
}

// Verbatim hands the resource to go-control-plane's caches, which then
// serve the upstream's bytes unchanged.
func ExampleResource_Verbatim() {
	r := decodedCluster()
	lc := cache.NewLinearCache(passthrough.ClusterTypeURL)
	if err := lc.UpdateResource(r.Name(), r.Verbatim()); err != nil {
		log.Fatal(err)
	}
	served, _ := cache.MarshalResource(lc.GetResources()[r.Name()])
	fmt.Println(bytes.Equal(served, r.Raw()))
	// Output: true
}
