package passthrough_test

import (
	"strings"
	"testing"
	"time"

	xdscorepb "github.com/cncf/xds/go/xds/core/v3"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	aggregatepb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	oauth2pb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/oauth2/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	runtimepb "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/types/passthrough"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ref(typeURL, name string) registry.Ref { return registry.Ref{TypeURL: typeURL, Name: name} }

func rdsRef(name string) registry.Ref    { return ref(passthrough.RouteConfigurationTypeURL, name) }
func secretRef(name string) registry.Ref { return ref(passthrough.SecretTypeURL, name) }

// mustType returns the type with typeURL of the registry that applies
// Envoy's rules (PGV): the cases of the tests below are of those rules.
func mustType(t *testing.T, typeURL string) registry.ResourceType {
	t.Helper()
	rt, ok := passthrough.Options{Validation: passthrough.PGV}.Registry().Lookup(typeURL)
	if !ok {
		t.Fatalf("Registry has no %s", typeURL)
	}
	return rt
}

func edit[M proto.Message](m M, f func(M)) M {
	f(m)
	return m
}

// hcmOf returns the HTTP connection manager of l's first filter chain.
func hcmOf(l *listenerpb.Listener) *hcmpb.HttpConnectionManager {
	var h hcmpb.HttpConnectionManager
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&h); err != nil {
		panic(err)
	}
	return &h
}

// withHCM returns l with its first filter chain's connection manager
// replaced by the result of f.
func withHCM(l *listenerpb.Listener, f func(*hcmpb.HttpConnectionManager)) *listenerpb.Listener {
	h := hcmOf(l)
	f(h)
	l.FilterChains[0].Filters[0].ConfigType = &listenerpb.Filter_TypedConfig{TypedConfig: mustAny(h)}
	return l
}

// oauth2Filter is an OAuth2 filter whose client secret and HMAC key come
// from SDS over ADS.
func oauth2Filter() *oauth2pb.OAuth2 {
	endpoint := func(uri string) *corepb.HttpUri {
		return &corepb.HttpUri{Uri: uri, HttpUpstreamType: &corepb.HttpUri_Cluster{Cluster: "idp"}, Timeout: durationpb.New(time.Second)}
	}
	return &oauth2pb.OAuth2{Config: &oauth2pb.OAuth2Config{
		TokenEndpoint:         endpoint("https://idp.example.com/token"),
		AuthorizationEndpoint: "https://idp.example.com/authorize",
		Credentials: &oauth2pb.OAuth2Credentials{
			ClientId:       "shop",
			TokenSecret:    &tlspb.SdsSecretConfig{Name: "oauth-token", SdsConfig: ads()},
			TokenFormation: &oauth2pb.OAuth2Credentials_HmacSecret{HmacSecret: &tlspb.SdsSecretConfig{Name: "oauth-hmac", SdsConfig: ads()}},
		},
		RedirectUri:         "https://shop.example.com/callback",
		RedirectPathMatcher: &matcherpb.PathMatcher{Rule: &matcherpb.PathMatcher_Path{Path: &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Exact{Exact: "/callback"}}}},
		SignoutPath:         &matcherpb.PathMatcher{Rule: &matcherpb.PathMatcher_Path{Path: &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Exact{Exact: "/signout"}}}},
	}}
}

// scopeKeyBuilder builds scope keys from the "x-scope" header.
func scopeKeyBuilder() *hcmpb.ScopedRoutes_ScopeKeyBuilder {
	return &hcmpb.ScopedRoutes_ScopeKeyBuilder{Fragments: []*hcmpb.ScopedRoutes_ScopeKeyBuilder_FragmentBuilder{{
		Type: &hcmpb.ScopedRoutes_ScopeKeyBuilder_FragmentBuilder_HeaderValueExtractor_{HeaderValueExtractor: &hcmpb.ScopedRoutes_ScopeKeyBuilder_FragmentBuilder_HeaderValueExtractor{
			Name: "x-scope"}}}}}
}

func scopeKey(s string) *routepb.ScopedRouteConfiguration_Key {
	return &routepb.ScopedRouteConfiguration_Key{Fragments: []*routepb.ScopedRouteConfiguration_Key_Fragment{{
		Type: &routepb.ScopedRouteConfiguration_Key_Fragment_StringKey{StringKey: s}}}}
}

// nestedAnys is an Any holding an Any holding ... n deep.
func nestedAnys(n int) *anypb.Any {
	a := mustAny(&structpb.Struct{})
	for i := 0; i < n; i++ {
		a = mustAny(a)
	}
	return a
}

func TestListener(t *testing.T) {
	registrytest.Run(t, mustType(t, passthrough.ListenerTypeURL), []registrytest.Case{
		{Name: "outbound HTTP on RDS", Message: outboundHTTPListener(), WantName: "0.0.0.0_80", WantDeps: []registry.Ref{rdsRef("80")}},
		{Name: "virtualInbound with the agent's SDS", Message: virtualInbound(), WantName: "virtualInbound",
			// Its secrets come from istio-agent, not from the server: no deps.
			WantDeps: []registry.Ref{}},
		{Name: "gateway: SDS, RDS and ECDS over ADS", Message: gatewayListener(), WantName: "0.0.0.0_8443", WantDeps: []registry.Ref{
			secretRef("kubernetes://shop-cred"), rdsRef("https.443.shop.gateway"), ref(passthrough.ExtensionConfigTypeURL, "istio.wasm.auth")}},
		{Name: "api_listener, as gRPC's", Message: &listenerpb.Listener{Name: "grpc.example", ApiListener: &listenerpb.ApiListener{
			ApiListener: mustAny(hcmOf(outboundHTTPListener()))}}, WantName: "grpc.example", WantDeps: []registry.Ref{rdsRef("80")}},
		{Name: "inline scopes name their routes", WantName: "scoped", Message: withHCM(edit(outboundHTTPListener(), func(l *listenerpb.Listener) { l.Name = "scoped" }),
			func(h *hcmpb.HttpConnectionManager) {
				h.RouteSpecifier = &hcmpb.HttpConnectionManager_ScopedRoutes{ScopedRoutes: &hcmpb.ScopedRoutes{
					Name:            "scopes",
					ScopeKeyBuilder: scopeKeyBuilder(),
					RdsConfigSource: ads(),
					ConfigSpecifier: &hcmpb.ScopedRoutes_ScopedRouteConfigurationsList{ScopedRouteConfigurationsList: &hcmpb.ScopedRouteConfigurationsList{
						ScopedRouteConfigurations: []*routepb.ScopedRouteConfiguration{
							{Name: "a", RouteConfigurationName: "routes-a", Key: scopeKey("a")},
							{Name: "b", RouteConfigurationName: "routes-b", OnDemand: true, Key: scopeKey("a")},
						}}},
				}}
			}), WantDeps: []registry.Ref{rdsRef("routes-a")}},
		{Name: "connection manager without stat_prefix", WantName: "0.0.0.0_80",
			Message: withHCM(outboundHTTPListener(), func(h *hcmpb.HttpConnectionManager) { h.StatPrefix = "" }),
			WantErr: "filter_chains[0].filters[0].typed_config.stat_prefix: value length must be at least 1 runes"},
		{Name: "undefined codec type", WantName: "0.0.0.0_80",
			Message: withHCM(outboundHTTPListener(), func(h *hcmpb.HttpConnectionManager) { h.CodecType = 9 }),
			WantErr: "filter_chains[0].filters[0].typed_config.codec_type: value must be one of the defined enum values"},
		{Name: "filter and HTTP filter without names", WantName: "0.0.0.0_80",
			Message: edit(withHCM(outboundHTTPListener(), func(h *hcmpb.HttpConnectionManager) { h.HttpFilters[0].Name = "" }),
				func(l *listenerpb.Listener) { l.FilterChains[0].Filters[0].Name = "" }),
			WantErr: "filter_chains[0].filters[0].name: value length must be at least 1 runes; filter_chains[0].filters[0].typed_config.http_filters[0].name: value length must be at least 1 runes"},
		{Name: "connection manager that does not unmarshal", WantName: "0.0.0.0_80",
			Message: edit(outboundHTTPListener(), func(l *listenerpb.Listener) {
				l.FilterChains[0].Filters[0].GetTypedConfig().Value = []byte{0x0a, 0xff}
			}),
			WantErr: "filter_chains[0].filters[0].typed_config: cannot unmarshal envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"},
		{Name: "Anys nested too deep", WantName: "0.0.0.0_80",
			Message: edit(outboundHTTPListener(), func(l *listenerpb.Listener) {
				l.FilterChains[0].Filters[0].ConfigType = &listenerpb.Filter_TypedConfig{TypedConfig: nestedAnys(40)}
			}),
			WantErr: "filter_chains[0].filters[0].typed_config: google.protobuf.Any values nested more than 32 deep"},
		{Name: "not a Listener", Raw: []byte{0x0a, 0x03, 'a', 'b'}, WantName: "", WantErr: "cannot unmarshal Listener"},
		{Name: "no name", Message: &listenerpb.Listener{Address: socketAddress("0.0.0.0", 80)},
			WantErr: "name: must be non-empty, or the resource must arrive in a named envoy.service.discovery.v3.Resource wrapper"},
		{Name: "named by its wrapper", Message: &listenerpb.Listener{Address: socketAddress("0.0.0.0", 80)},
			Options: registry.DecodeOptions{WrapperName: "from-wrapper"}, WantName: "from-wrapper", WantDeps: []registry.Ref{}},
	})
}

// TestValidation: structural validation, the default, takes what any
// reader can read, whatever Envoy's rules (PGV) say of it, such as
// istiod's Listener for proxyless gRPC, whose connection manager has no
// stat_prefix; it rejects what no reader can read. PGV rejects both.
func TestValidation(t *testing.T) {
	const proxyless = reviewsHost + ":9080"
	unreadableHCM := edit(outboundHTTPListener(), func(l *listenerpb.Listener) {
		l.FilterChains[0].Filters[0].GetTypedConfig().Value = []byte{0x0a, 0xff}
	})
	tooDeep := edit(outboundHTTPListener(), func(l *listenerpb.Listener) {
		l.FilterChains[0].Filters[0].ConfigType = &listenerpb.Filter_TypedConfig{TypedConfig: nestedAnys(40)}
	})
	for _, tc := range []struct {
		validation passthrough.Validation
		typeURL    string
		cases      []registrytest.Case
	}{
		{passthrough.Structural, passthrough.ListenerTypeURL, []registrytest.Case{
			{Name: "proxyless gRPC on RDS", Message: proxylessListener(false), WantName: proxyless, WantDeps: []registry.Ref{rdsRef(proxyless)}},
			{Name: "proxyless gRPC with inline routes", Message: proxylessListener(true), WantName: proxyless, WantDeps: []registry.Ref{}},
			{Name: "connection manager without stat_prefix", WantName: "0.0.0.0_80", WantDeps: []registry.Ref{rdsRef("80")},
				Message: withHCM(outboundHTTPListener(), func(h *hcmpb.HttpConnectionManager) { h.StatPrefix = "" })},
			{Name: "connection manager that does not unmarshal", WantName: "0.0.0.0_80", Message: unreadableHCM,
				WantErr: "filter_chains[0].filters[0].typed_config: cannot unmarshal envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"},
			{Name: "Anys nested too deep", WantName: "0.0.0.0_80", Message: tooDeep,
				WantErr: "filter_chains[0].filters[0].typed_config: google.protobuf.Any values nested more than 32 deep"},
			{Name: "not a Listener", Raw: []byte{0x0a, 0x03, 'a', 'b'}, WantName: "", WantErr: "cannot unmarshal Listener"},
			{Name: "no name", Message: &listenerpb.Listener{Address: socketAddress("0.0.0.0", 80)},
				WantErr: "name: must be non-empty, or the resource must arrive in a named envoy.service.discovery.v3.Resource wrapper"},
		}},
		{passthrough.Structural, passthrough.ClusterTypeURL, []registrytest.Case{
			{Name: "negative connect_timeout", WantName: "BlackHoleCluster", WantDeps: []registry.Ref{},
				Message: edit(blackHoleCluster(), func(c *clusterpb.Cluster) { c.ConnectTimeout = durationpb.New(-1) })},
		}},
		{passthrough.PGV, passthrough.ListenerTypeURL, []registrytest.Case{
			{Name: "proxyless gRPC on RDS", Message: proxylessListener(false), WantName: proxyless,
				WantErr: "api_listener.api_listener.stat_prefix: value length must be at least 1 runes"},
			{Name: "proxyless gRPC with inline routes", Message: proxylessListener(true), WantName: proxyless,
				WantErr: "api_listener.api_listener.stat_prefix: value length must be at least 1 runes"},
		}},
	} {
		t.Run(tc.validation.String()+"/"+tc.typeURL[strings.LastIndexByte(tc.typeURL, '.')+1:], func(t *testing.T) {
			rt, err := passthrough.Options{Validation: tc.validation}.Type(tc.typeURL)
			if err != nil {
				t.Fatal(err)
			}
			registrytest.Run(t, rt, tc.cases)
		})
	}
}

// TestUnknownValidation: a Validation this package does not define is an
// error, not a silent default.
func TestUnknownValidation(t *testing.T) {
	if _, err := (passthrough.Options{Validation: 7}).Type(passthrough.ClusterTypeURL); err == nil || !strings.Contains(err.Error(), "unknown Validation(7)") {
		t.Errorf("Type with Validation 7: %v, want an error naming it", err)
	}
}

func TestCluster(t *testing.T) {
	aggregate := &clusterpb.Cluster{Name: "aggregate", ConnectTimeout: durationpb.New(time.Second),
		ClusterDiscoveryType: &clusterpb.Cluster_ClusterType{ClusterType: &clusterpb.Cluster_CustomClusterType{
			Name: "envoy.clusters.aggregate", TypedConfig: mustAny(&aggregatepb.ClusterConfig{Clusters: []string{"primary", "secondary"}})}},
		LbPolicy: clusterpb.Cluster_CLUSTER_PROVIDED}
	registrytest.Run(t, mustType(t, passthrough.ClusterTypeURL), []registrytest.Case{
		{Name: "STATIC without endpoints", Message: blackHoleCluster(), WantName: "BlackHoleCluster", WantDeps: []registry.Ref{}},
		{Name: "ORIGINAL_DST", Message: passthroughCluster(), WantName: "PassthroughCluster", WantDeps: []registry.Ref{}},
		{Name: "STATIC inbound", Message: inboundCluster(), WantName: "inbound|8080||", WantDeps: []registry.Ref{}},
		{Name: "EDS with the agent's SDS", Message: outboundCluster(), WantName: reviews,
			WantDeps: []registry.Ref{ref(passthrough.ClusterLoadAssignmentTypeURL, reviews)}},
		{Name: "EDS named by the cluster", WantName: "c", Message: &clusterpb.Cluster{Name: "c",
			ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
			EdsClusterConfig:     &clusterpb.Cluster_EdsClusterConfig{EdsConfig: ads()}},
			WantDeps: []registry.Ref{ref(passthrough.ClusterLoadAssignmentTypeURL, "c")}},
		{Name: "EDS from another source", WantName: "c", Message: &clusterpb.Cluster{Name: "c",
			ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
			EdsClusterConfig:     &clusterpb.Cluster_EdsClusterConfig{EdsConfig: agentSDS(), ServiceName: "s"}},
			WantDeps: []registry.Ref{}},
		{Name: "EDS with an xdstp name and no source", WantName: "xdstp://a.example/envoy.config.cluster.v3.Cluster/c",
			Message: &clusterpb.Cluster{Name: "xdstp://a.example/envoy.config.cluster.v3.Cluster/c",
				ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
				EdsClusterConfig:     &clusterpb.Cluster_EdsClusterConfig{ServiceName: "xdstp://a.example/envoy.config.endpoint.v3.ClusterLoadAssignment/c"}},
			WantDeps: []registry.Ref{ref(passthrough.ClusterLoadAssignmentTypeURL, "xdstp://a.example/envoy.config.endpoint.v3.ClusterLoadAssignment/c")}},
		{Name: "STRICT_DNS with a client certificate over ADS", Message: egressCluster(), WantName: "outbound|443||api.example.com",
			WantDeps: []registry.Ref{secretRef("kubernetes://client-cred")}},
		{Name: "aggregate", Message: aggregate, WantName: "aggregate",
			WantDeps: []registry.Ref{ref(passthrough.ClusterTypeURL, "primary"), ref(passthrough.ClusterTypeURL, "secondary")}},
		{Name: "negative connect_timeout", WantName: "BlackHoleCluster",
			Message: edit(blackHoleCluster(), func(c *clusterpb.Cluster) { c.ConnectTimeout = durationpb.New(-1) }),
			WantErr: "connect_timeout: value must be greater than 0s"},
		{Name: "every violation, on one line", WantName: "from-wrapper", Options: registry.DecodeOptions{WrapperName: "from-wrapper"},
			Message: edit(outboundCluster(), func(c *clusterpb.Cluster) {
				c.Name = ""
				c.LbPolicy = 99
				c.TransportSocketMatches[0].Name = ""
			}),
			WantErr: "transport_socket_matches[0].name: value length must be at least 1 runes; name: value length must be at least 1 runes; lb_policy: value must be one of the defined enum values"},
		{Name: "SDS secret without a name", WantName: reviews,
			Message: edit(outboundCluster(), func(c *clusterpb.Cluster) {
				c.TransportSocketMatches[0].TransportSocket = transportSocket("tls", &tlspb.UpstreamTlsContext{CommonTlsContext: &tlspb.CommonTlsContext{
					TlsCertificateSdsSecretConfigs: []*tlspb.SdsSecretConfig{{SdsConfig: ads()}},
				}})
			}),
			WantErr: "transport_socket_matches[0].transport_socket.typed_config.common_tls_context.tls_certificate_sds_secret_configs[0].name: value length must be at least 1 runes"},
	})
}

func TestRouteConfiguration(t *testing.T) {
	registrytest.Run(t, mustType(t, passthrough.RouteConfigurationTypeURL), []registrytest.Case{
		{Name: "istiod's port 80", Message: routes80(), WantName: "80", WantDeps: []registry.Ref{}},
		{Name: "virtual host without domains, route without action", WantName: "80",
			Message: edit(routes80(), func(rc *routepb.RouteConfiguration) {
				rc.VirtualHosts[0].Domains = nil
				rc.VirtualHosts[1].Routes[0].Action = nil
			}),
			WantErr: "virtual_hosts[0].domains: value must contain at least 1 item(s); virtual_hosts[1].routes[0].action: value is required"},
		{Name: "retry host predicate without a name", WantName: "80",
			Message: edit(routes80(), func(rc *routepb.RouteConfiguration) {
				rc.VirtualHosts[0].Routes[0].GetRoute().RetryPolicy.RetryHostPredicate[0].Name = ""
			}),
			WantErr: "virtual_hosts[0].routes[0].route.retry_policy.retry_host_predicate[0].name: value length must be at least 1 runes"},
	})
}

func TestClusterLoadAssignment(t *testing.T) {
	leds := func(name string) *endpointpb.LocalityLbEndpoints {
		return &endpointpb.LocalityLbEndpoints{LbConfig: &endpointpb.LocalityLbEndpoints_LedsClusterLocalityConfig{
			LedsClusterLocalityConfig: &endpointpb.LedsClusterLocalityConfig{LedsConfig: ads(), LedsCollectionName: name}}}
	}
	const glob = "xdstp://test/envoy.config.endpoint.v3.LbEndpoint/foo-endpoints/*"
	const list = "xdstp://test/envoy.config.endpoint.v3.LbEndpointCollection/foo/z1"
	registrytest.Run(t, mustType(t, passthrough.ClusterLoadAssignmentTypeURL), []registrytest.Case{
		{Name: "mesh endpoints", Message: reviewsAssignment(), WantName: reviews, WantDeps: []registry.Ref{}},
		{Name: "LEDS", Message: &endpointpb.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointpb.LocalityLbEndpoints{leds(glob), leds(list)}},
			WantName: "c", WantDeps: []registry.Ref{ref(passthrough.LbEndpointTypeURL, glob), ref(passthrough.LbEndpointCollectionTypeURL, list)}},
		{Name: "port out of range", WantName: reviews,
			Message: edit(reviewsAssignment(), func(c *endpointpb.ClusterLoadAssignment) {
				c.Endpoints[0].LbEndpoints[1].GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = &corepb.SocketAddress_PortValue{PortValue: 70000}
			}),
			WantErr: "endpoints[0].lb_endpoints[1].endpoint.address.socket_address.port_value: value must be less than or equal to 65535"},
	})
}

func TestSecret(t *testing.T) {
	registrytest.Run(t, mustType(t, passthrough.SecretTypeURL), []registrytest.Case{
		{Name: "credential", Message: credential("kubernetes://shop-cred"), WantName: "kubernetes://shop-cred"},
		{Name: "root", WantName: "ROOTCA", Message: &tlspb.Secret{Name: "ROOTCA", Type: &tlspb.Secret_ValidationContext{
			ValidationContext: &tlspb.CertificateValidationContext{MatchTypedSubjectAltNames: []*tlspb.SubjectAltNameMatcher{exactSAN("spiffe://cluster.local/ns/default/sa/reviews")}}}}},
		{Name: "empty file name", WantName: "kubernetes://shop-cred",
			Message: edit(credential("kubernetes://shop-cred"), func(s *tlspb.Secret) {
				s.GetTlsCertificate().PrivateKey = &corepb.DataSource{Specifier: &corepb.DataSource_Filename{}}
			}),
			WantErr: "tls_certificate.private_key.filename: value length must be at least 1 runes"},
	})
}

func TestOtherEnvoyTypes(t *testing.T) {
	for _, tc := range []struct {
		typeURL string
		cases   []registrytest.Case
	}{
		{passthrough.ScopedRouteConfigurationTypeURL, []registrytest.Case{
			{Name: "scope", Message: &routepb.ScopedRouteConfiguration{Name: "s", RouteConfigurationName: "r", Key: scopeKey("a")}, WantName: "s"},
			{Name: "no key", Message: &routepb.ScopedRouteConfiguration{Name: "s", RouteConfigurationName: "r"}, WantName: "s", WantErr: "key: value is required"},
		}},
		{passthrough.VirtualHostTypeURL, []registrytest.Case{
			{Name: "named by VHDS's wrapper", Message: routes80().VirtualHosts[0], Options: registry.DecodeOptions{WrapperName: "80/reviews:80"}, WantName: "80/reviews:80"},
			{Name: "unwrapped", Message: routes80().VirtualHosts[1], WantName: "allow_any"},
			{Name: "no domains", Message: &routepb.VirtualHost{Name: "v"}, Options: registry.DecodeOptions{WrapperName: "80/v"}, WantName: "80/v",
				WantErr: "domains: value must contain at least 1 item(s)"},
		}},
		{passthrough.LbEndpointCollectionTypeURL, []registrytest.Case{
			{Name: "wrapped", Options: registry.DecodeOptions{WrapperName: "xdstp://test/envoy.config.endpoint.v3.LbEndpointCollection/foo/z1"},
				WantName: "xdstp://test/envoy.config.endpoint.v3.LbEndpointCollection/foo/z1",
				Message: &endpointpb.LbEndpointCollection{Entries: []*xdscorepb.CollectionEntry{{ResourceSpecifier: &xdscorepb.CollectionEntry_InlineEntry_{
					InlineEntry: &xdscorepb.CollectionEntry_InlineEntry{Name: "ep0", Resource: mustAny(lbEndpoint("10.0.0.1", 80))}}}}}},
			{Name: "unwrapped", Message: &endpointpb.LbEndpointCollection{}, WantErr: "LbEndpointCollection has no name field: it must arrive in a named envoy.service.discovery.v3.Resource wrapper"},
			{Name: "entry without resource", Options: registry.DecodeOptions{WrapperName: "coll"}, WantName: "coll",
				Message: &endpointpb.LbEndpointCollection{Entries: []*xdscorepb.CollectionEntry{{}}}, WantErr: "entries[0].resource_specifier: value is required"},
			{Name: "inline endpoint out of range", Options: registry.DecodeOptions{WrapperName: "coll"}, WantName: "coll",
				Message: &endpointpb.LbEndpointCollection{Entries: []*xdscorepb.CollectionEntry{{ResourceSpecifier: &xdscorepb.CollectionEntry_InlineEntry_{
					InlineEntry: &xdscorepb.CollectionEntry_InlineEntry{Name: "ep0", Resource: mustAny(lbEndpoint("10.0.0.1", 70000))}}}}},
				WantErr: "entries[0].inline_entry.resource.endpoint.address.socket_address.port_value: value must be less than or equal to 65535"},
		}},
		{passthrough.LbEndpointTypeURL, []registrytest.Case{
			{Name: "glob member", Message: lbEndpoint("10.0.0.1", 80), Options: registry.DecodeOptions{WrapperName: "xdstp://test/envoy.config.endpoint.v3.LbEndpoint/foo/ep0"},
				WantName: "xdstp://test/envoy.config.endpoint.v3.LbEndpoint/foo/ep0"},
		}},
		{passthrough.RuntimeTypeURL, []registrytest.Case{
			{Name: "layer", Message: &runtimepb.Runtime{Name: "rtds", Layer: &structpb.Struct{}}, WantName: "rtds"},
			{Name: "name only in the wrapper", Message: &runtimepb.Runtime{}, Options: registry.DecodeOptions{WrapperName: "rtds"}, WantName: "rtds",
				WantErr: "name: value length must be at least 1 runes"},
		}},
		{passthrough.ExtensionConfigTypeURL, []registrytest.Case{
			{Name: "filter config", Message: &corepb.TypedExtensionConfig{Name: "istio.wasm.auth", TypedConfig: mustAny(&structpb.Struct{})}, WantName: "istio.wasm.auth"},
			{Name: "no config", Message: &corepb.TypedExtensionConfig{Name: "istio.wasm.auth"}, WantName: "istio.wasm.auth", WantErr: "typed_config: value is required"},
			{Name: "OAuth2 with secrets from SDS", Message: &corepb.TypedExtensionConfig{Name: "oauth", TypedConfig: mustAny(oauth2Filter())}, WantName: "oauth",
				WantDeps: []registry.Ref{secretRef("oauth-token"), secretRef("oauth-hmac")}},
		}},
	} {
		rt := mustType(t, tc.typeURL)
		t.Run(rt.ShortName(), func(t *testing.T) { registrytest.Run(t, rt, tc.cases) })
	}
}
