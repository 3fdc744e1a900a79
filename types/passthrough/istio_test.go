package passthrough_test

import (
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	originaldstpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	tlsinspectorpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxypb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	rawbufferpb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The resources below have the shapes istiod sends an Envoy sidecar (and,
// for the SDS-over-ADS ones, a gateway): what the pass-through types must
// accept and the built-in ones reject.

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

func ads() *corepb.ConfigSource {
	return &corepb.ConfigSource{
		ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}},
		InitialFetchTimeout:   durationpb.New(0),
		ResourceApiVersion:    corepb.ApiVersion_V3,
	}
}

// agentSDS is istio-agent's SDS server, reached over a Unix socket through
// the bootstrap cluster "sds-grpc", not through ADS.
func agentSDS() *corepb.ConfigSource {
	return &corepb.ConfigSource{
		ConfigSourceSpecifier: &corepb.ConfigSource_ApiConfigSource{ApiConfigSource: &corepb.ApiConfigSource{
			ApiType:             corepb.ApiConfigSource_GRPC,
			TransportApiVersion: corepb.ApiVersion_V3,
			GrpcServices: []*corepb.GrpcService{{TargetSpecifier: &corepb.GrpcService_EnvoyGrpc_{
				EnvoyGrpc: &corepb.GrpcService_EnvoyGrpc{ClusterName: "sds-grpc"}}}},
			SetNodeOnFirstMessageOnly: true,
		}},
		InitialFetchTimeout: durationpb.New(0),
		ResourceApiVersion:  corepb.ApiVersion_V3,
	}
}

func socketAddress(ip string, port uint32) *corepb.Address {
	return &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
		Address: ip, PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: port}}}}
}

func lbEndpoint(ip string, port uint32) *endpointpb.LbEndpoint {
	return &endpointpb.LbEndpoint{
		HostIdentifier:      &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{Address: socketAddress(ip, port)}},
		LoadBalancingWeight: wrapperspb.UInt32(1),
	}
}

// commonTLS is the sidecar's mTLS context: the workload certificate
// "default" and the root "ROOTCA", both from src.
func commonTLS(src *corepb.ConfigSource, alpn ...string) *tlspb.CommonTlsContext {
	return &tlspb.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlspb.SdsSecretConfig{{Name: "default", SdsConfig: src}},
		ValidationContextType: &tlspb.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlspb.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         &tlspb.CertificateValidationContext{},
			ValidationContextSdsSecretConfig: &tlspb.SdsSecretConfig{Name: "ROOTCA", SdsConfig: src},
		}},
		AlpnProtocols: alpn,
	}
}

func transportSocket(name string, m proto.Message) *corepb.TransportSocket {
	return &corepb.TransportSocket{Name: name, ConfigType: &corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(m)}}
}

// blackHoleCluster is istiod's STATIC cluster without endpoints.
func blackHoleCluster() *clusterpb.Cluster {
	return &clusterpb.Cluster{
		Name:                 "BlackHoleCluster",
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(10 * time.Second),
	}
}

// passthroughCluster is istiod's ORIGINAL_DST cluster for traffic to
// unknown destinations.
func passthroughCluster() *clusterpb.Cluster {
	return &clusterpb.Cluster{
		Name:                 "PassthroughCluster",
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_ORIGINAL_DST},
		ConnectTimeout:       durationpb.New(10 * time.Second),
		LbPolicy:             clusterpb.Cluster_CLUSTER_PROVIDED,
		CircuitBreakers: &clusterpb.CircuitBreakers{Thresholds: []*clusterpb.CircuitBreakers_Thresholds{{
			MaxConnections: wrapperspb.UInt32(4294967295), MaxPendingRequests: wrapperspb.UInt32(4294967295),
			MaxRequests: wrapperspb.UInt32(4294967295), MaxRetries: wrapperspb.UInt32(4294967295),
			TrackRemaining: true,
		}}},
		Filters: []*clusterpb.Filter{{Name: "istio.metadata_exchange", TypedConfig: mustAny(&structpb.Struct{})}},
	}
}

// inboundCluster is istiod's STATIC cluster for the application's port.
func inboundCluster() *clusterpb.Cluster {
	return &clusterpb.Cluster{
		Name:                 "inbound|8080||",
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STATIC},
		ConnectTimeout:       durationpb.New(10 * time.Second),
		UpstreamBindConfig:   &corepb.BindConfig{SourceAddress: &corepb.SocketAddress{Address: "127.0.0.6", PortSpecifier: &corepb.SocketAddress_PortValue{}}},
		LoadAssignment: &endpointpb.ClusterLoadAssignment{ClusterName: "inbound|8080||", Endpoints: []*endpointpb.LocalityLbEndpoints{{
			LbEndpoints: []*endpointpb.LbEndpoint{lbEndpoint("127.0.0.1", 8080)},
		}}},
	}
}

const (
	reviewsHost = "reviews.default.svc.cluster.local"
	reviews     = "outbound|80||" + reviewsHost
)

// outboundCluster is istiod's EDS cluster for a mesh service: mTLS with
// the agent's SDS secrets to istio endpoints, plaintext to the others.
func outboundCluster() *clusterpb.Cluster {
	return &clusterpb.Cluster{
		Name:                 reviews,
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
		EdsClusterConfig:     &clusterpb.Cluster_EdsClusterConfig{EdsConfig: ads(), ServiceName: reviews},
		ConnectTimeout:       durationpb.New(10 * time.Second),
		LbPolicy:             clusterpb.Cluster_LEAST_REQUEST,
		TransportSocketMatches: []*clusterpb.Cluster_TransportSocketMatch{
			{
				Name:  "tlsMode-istio",
				Match: &structpb.Struct{Fields: map[string]*structpb.Value{"tlsMode": structpb.NewStringValue("istio")}},
				TransportSocket: transportSocket("envoy.transport_sockets.tls", &tlspb.UpstreamTlsContext{
					CommonTlsContext: commonTLS(agentSDS(), "istio-peer-exchange", "istio"),
					Sni:              "outbound_.80_._.reviews.default.svc.cluster.local",
				}),
			},
			{Name: "tlsMode-disabled", Match: &structpb.Struct{}, TransportSocket: transportSocket("envoy.transport_sockets.raw_buffer", &rawbufferpb.RawBuffer{})},
		},
	}
}

// egressCluster originates TLS with a client certificate that istiod
// serves over ADS (a gateway's credentialName): an SDS dependency.
func egressCluster() *clusterpb.Cluster {
	return &clusterpb.Cluster{
		Name:                 "outbound|443||api.example.com",
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STRICT_DNS},
		ConnectTimeout:       durationpb.New(10 * time.Second),
		LoadAssignment: &endpointpb.ClusterLoadAssignment{ClusterName: "outbound|443||api.example.com", Endpoints: []*endpointpb.LocalityLbEndpoints{{
			LbEndpoints: []*endpointpb.LbEndpoint{lbEndpoint("api.example.com", 443)},
		}}},
		TransportSocket: transportSocket("envoy.transport_sockets.tls", &tlspb.UpstreamTlsContext{
			CommonTlsContext: &tlspb.CommonTlsContext{TlsCertificateSdsSecretConfigs: []*tlspb.SdsSecretConfig{{Name: "kubernetes://client-cred", SdsConfig: ads()}}},
			Sni:              "api.example.com",
		}),
	}
}

func reviewsAssignment() *endpointpb.ClusterLoadAssignment {
	return &endpointpb.ClusterLoadAssignment{
		ClusterName: reviews,
		Endpoints: []*endpointpb.LocalityLbEndpoints{{
			Locality:            &corepb.Locality{Region: "us-central1", Zone: "us-central1-a"},
			LbEndpoints:         []*endpointpb.LbEndpoint{lbEndpoint("10.8.0.11", 9080), lbEndpoint("10.8.1.7", 9080)},
			LoadBalancingWeight: wrapperspb.UInt32(2),
		}},
	}
}

func router() *hcmpb.HttpFilter {
	return &hcmpb.HttpFilter{Name: "envoy.filters.http.router", ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerpb.Router{})}}
}

func networkFilter(name string, m proto.Message) *listenerpb.Filter {
	return &listenerpb.Filter{Name: name, ConfigType: &listenerpb.Filter_TypedConfig{TypedConfig: mustAny(m)}}
}

// outboundHTTPListener is istiod's listener for port 80 of the mesh: it
// does not bind, and fetches its routes "80" with RDS over ADS.
func outboundHTTPListener() *listenerpb.Listener {
	return &listenerpb.Listener{
		Name:       "0.0.0.0_80",
		Address:    socketAddress("0.0.0.0", 80),
		BindToPort: wrapperspb.Bool(false),
		FilterChains: []*listenerpb.FilterChain{{
			Filters: []*listenerpb.Filter{networkFilter("envoy.filters.network.http_connection_manager", &hcmpb.HttpConnectionManager{
				StatPrefix: "outbound_0.0.0.0_80",
				RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{
					ConfigSource: ads(), RouteConfigName: "80"}},
				HttpFilters: []*hcmpb.HttpFilter{router()},
			})},
		}},
		TrafficDirection: corepb.TrafficDirection_OUTBOUND,
	}
}

// proxylessListener is istiod's Listener for a proxyless gRPC client of
// reviews:9080 (pilot/pkg/networking/grpcgen): an api_listener whose
// connection manager has no stat_prefix, gRPC's fault and router filters,
// and its routes on RDS over ADS or, with inline, in it.
func proxylessListener(inline bool) *listenerpb.Listener {
	hcm := &hcmpb.HttpConnectionManager{
		RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{
			ConfigSource:    &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}},
			RouteConfigName: reviewsHost + ":9080"}},
		HttpFilters: []*hcmpb.HttpFilter{
			{Name: "envoy.filters.http.fault", ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: mustAny(&faultpb.HTTPFault{})}},
			router(),
		},
	}
	if inline {
		hcm.RouteSpecifier = &hcmpb.HttpConnectionManager_RouteConfig{RouteConfig: &routepb.RouteConfiguration{
			Name: reviewsHost + ":9080",
			VirtualHosts: []*routepb.VirtualHost{{Name: reviewsHost + ":9080", Domains: []string{reviewsHost, "reviews"},
				Routes: []*routepb.Route{clusterRoute("default", "", "outbound|9080||"+reviewsHost)}}},
		}}
	}
	return &listenerpb.Listener{Name: reviewsHost + ":9080", ApiListener: &listenerpb.ApiListener{ApiListener: mustAny(hcm)}}
}

// virtualInbound is istiod's capture listener for inbound traffic: mTLS
// with the agent's SDS secrets, and routes inline.
func virtualInbound() *listenerpb.Listener {
	return &listenerpb.Listener{
		Name:           "virtualInbound",
		Address:        socketAddress("0.0.0.0", 15006),
		UseOriginalDst: wrapperspb.Bool(true),
		ListenerFilters: []*listenerpb.ListenerFilter{
			{Name: "envoy.filters.listener.original_dst", ConfigType: &listenerpb.ListenerFilter_TypedConfig{TypedConfig: mustAny(&originaldstpb.OriginalDst{})}},
			{Name: "envoy.filters.listener.tls_inspector", ConfigType: &listenerpb.ListenerFilter_TypedConfig{TypedConfig: mustAny(&tlsinspectorpb.TlsInspector{})}},
		},
		FilterChains: []*listenerpb.FilterChain{{
			FilterChainMatch: &listenerpb.FilterChainMatch{DestinationPort: wrapperspb.UInt32(8080), TransportProtocol: "tls"},
			TransportSocket: transportSocket("envoy.transport_sockets.tls", &tlspb.DownstreamTlsContext{
				CommonTlsContext:         commonTLS(agentSDS(), "h2", "http/1.1"),
				RequireClientCertificate: wrapperspb.Bool(true),
			}),
			Filters: []*listenerpb.Filter{networkFilter("envoy.filters.network.http_connection_manager", &hcmpb.HttpConnectionManager{
				StatPrefix: "inbound_0.0.0.0_8080",
				RouteSpecifier: &hcmpb.HttpConnectionManager_RouteConfig{RouteConfig: &routepb.RouteConfiguration{
					Name: "inbound|8080||",
					VirtualHosts: []*routepb.VirtualHost{{Name: "inbound|http|8080", Domains: []string{"*"}, Routes: []*routepb.Route{
						clusterRoute("default", "/", "inbound|8080||"),
					}}},
				}},
				HttpFilters: []*hcmpb.HttpFilter{router()},
			})},
		}},
		DefaultFilterChain: &listenerpb.FilterChain{Filters: []*listenerpb.Filter{networkFilter("envoy.filters.network.tcp_proxy", &tcpproxypb.TcpProxy{
			StatPrefix:       "InboundPassthroughCluster",
			ClusterSpecifier: &tcpproxypb.TcpProxy_Cluster{Cluster: "InboundPassthroughCluster"},
		})}},
		TrafficDirection: corepb.TrafficDirection_INBOUND,
	}
}

// gatewayListener terminates TLS with a credential istiod serves over ADS
// and runs a Wasm filter fetched with ECDS: SDS, RDS and ECDS
// dependencies.
func gatewayListener() *listenerpb.Listener {
	return &listenerpb.Listener{
		Name:    "0.0.0.0_8443",
		Address: socketAddress("0.0.0.0", 8443),
		FilterChains: []*listenerpb.FilterChain{{
			FilterChainMatch: &listenerpb.FilterChainMatch{ServerNames: []string{"shop.example.com"}},
			TransportSocket: transportSocket("envoy.transport_sockets.tls", &tlspb.DownstreamTlsContext{
				CommonTlsContext: &tlspb.CommonTlsContext{
					TlsCertificateSdsSecretConfigs: []*tlspb.SdsSecretConfig{{Name: "kubernetes://shop-cred", SdsConfig: ads()}},
					AlpnProtocols:                  []string{"h2", "http/1.1"},
				},
			}),
			Filters: []*listenerpb.Filter{networkFilter("envoy.filters.network.http_connection_manager", &hcmpb.HttpConnectionManager{
				StatPrefix: "outbound_0.0.0.0_8443",
				RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{
					ConfigSource: ads(), RouteConfigName: "https.443.shop.gateway"}},
				HttpFilters: []*hcmpb.HttpFilter{
					{Name: "istio.wasm.auth", ConfigType: &hcmpb.HttpFilter_ConfigDiscovery{ConfigDiscovery: &corepb.ExtensionConfigSource{
						ConfigSource: ads(),
						TypeUrls:     []string{"type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm"},
					}}},
					router(),
				},
			})},
		}},
	}
}

func clusterRoute(name, prefix, cluster string) *routepb.Route {
	return &routepb.Route{
		Name:  name,
		Match: &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: prefix}},
		Action: &routepb.Route_Route{Route: &routepb.RouteAction{
			ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: cluster},
			Timeout:          durationpb.New(0),
			RetryPolicy: &routepb.RetryPolicy{
				RetryOn:    "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes",
				NumRetries: wrapperspb.UInt32(2),
				RetryHostPredicate: []*routepb.RetryPolicy_RetryHostPredicate{{
					Name: "envoy.retry_host_predicates.previous_hosts"}},
				HostSelectionRetryMaxAttempts: 5,
			},
		}},
		Decorator: &routepb.Decorator{Operation: cluster + "/*"},
	}
}

// routes80 is istiod's RouteConfiguration for port 80: the mesh service's
// virtual host and the "allow_any" one to PassthroughCluster.
func routes80() *routepb.RouteConfiguration {
	return &routepb.RouteConfiguration{
		Name: "80",
		VirtualHosts: []*routepb.VirtualHost{
			{Name: "reviews.default.svc.cluster.local:80", Domains: []string{"reviews.default.svc.cluster.local", "reviews", "reviews.default", "10.96.12.4"},
				Routes: []*routepb.Route{clusterRoute("default", "/", reviews)}, IncludeRequestAttemptCount: true},
			{Name: "allow_any", Domains: []string{"*"}, Routes: []*routepb.Route{{
				Name:  "allow_any",
				Match: &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routepb.Route_Route{Route: &routepb.RouteAction{
					ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: "PassthroughCluster"}, Timeout: durationpb.New(0)}},
			}}},
		},
		ValidateClusters: wrapperspb.Bool(false),
	}
}

func credential(name string) *tlspb.Secret {
	return &tlspb.Secret{Name: name, Type: &tlspb.Secret_TlsCertificate{TlsCertificate: &tlspb.TlsCertificate{
		CertificateChain: &corepb.DataSource{Specifier: &corepb.DataSource_InlineBytes{InlineBytes: []byte("-----BEGIN CERTIFICATE-----\n...")}},
		PrivateKey:       &corepb.DataSource{Specifier: &corepb.DataSource_InlineBytes{InlineBytes: []byte("-----BEGIN PRIVATE KEY-----\n...")}},
	}}}
}

// exactSAN matches a SAN, for validation contexts.
func exactSAN(s string) *tlspb.SubjectAltNameMatcher {
	return &tlspb.SubjectAltNameMatcher{SanType: tlspb.SubjectAltNameMatcher_URI, Matcher: &matcherpb.StringMatcher{
		MatchPattern: &matcherpb.StringMatcher_Exact{Exact: s}}}
}
