package relay_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	originaldstpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_dst/v3"
	tlsinspectorpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxypb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/passthrough"
	"github.com/xdsengine/xdsengine/types/rds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func anyOf(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

func addr(ip string, port uint32) *corepb.Address {
	return &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
		Address: ip, PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: port}}}}
}

var adsSource = &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}},
	InitialFetchTimeout: durationpb.New(0), ResourceApiVersion: corepb.ApiVersion_V3}

// agentSDS is a secret source outside ADS: istio-agent's SDS server,
// through the bootstrap cluster sds-grpc.
var agentSDS = &corepb.ConfigSource{ResourceApiVersion: corepb.ApiVersion_V3,
	ConfigSourceSpecifier: &corepb.ConfigSource_ApiConfigSource{ApiConfigSource: &corepb.ApiConfigSource{
		ApiType: corepb.ApiConfigSource_GRPC, TransportApiVersion: corepb.ApiVersion_V3,
		GrpcServices: []*corepb.GrpcService{{TargetSpecifier: &corepb.GrpcService_EnvoyGrpc_{
			EnvoyGrpc: &corepb.GrpcService_EnvoyGrpc{ClusterName: "sds-grpc"}}}},
	}}}

// istioSidecar is the shape of what istiod sends an Envoy sidecar for n
// services, which gRPC's rules reject: STATIC and ORIGINAL_DST clusters,
// mutual TLS with certificates from SDS, listeners bound to ports with
// listener filters and TCP proxies, no api_listener. By type URL and name.
func istioSidecar(n int) map[string]map[string]proto.Message {
	out := map[string]map[string]proto.Message{lds.TypeURL: {}, rds.TypeURL: {}, cds.TypeURL: {}, eds.TypeURL: {}}
	mtls := &tlspb.UpstreamTlsContext{CommonTlsContext: &tlspb.CommonTlsContext{
		TlsCertificateSdsSecretConfigs: []*tlspb.SdsSecretConfig{{Name: "default", SdsConfig: agentSDS}},
		ValidationContextType: &tlspb.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlspb.CommonTlsContext_CombinedCertificateValidationContext{
			DefaultValidationContext:         &tlspb.CertificateValidationContext{},
			ValidationContextSdsSecretConfig: &tlspb.SdsSecretConfig{Name: "ROOTCA", SdsConfig: agentSDS},
		}},
		AlpnProtocols: []string{"istio-peer-exchange", "istio"},
	}, Sni: "outbound_.80_._.svc.ns.svc.cluster.local"}
	out[cds.TypeURL]["BlackHoleCluster"] = &clusterpb.Cluster{Name: "BlackHoleCluster", ConnectTimeout: durationpb.New(10 * time.Second),
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STATIC}}
	out[cds.TypeURL]["PassthroughCluster"] = &clusterpb.Cluster{Name: "PassthroughCluster", ConnectTimeout: durationpb.New(10 * time.Second),
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_ORIGINAL_DST}, LbPolicy: clusterpb.Cluster_CLUSTER_PROVIDED}
	out[cds.TypeURL]["InboundPassthroughCluster"] = &clusterpb.Cluster{Name: "InboundPassthroughCluster", ConnectTimeout: durationpb.New(10 * time.Second),
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_ORIGINAL_DST}, LbPolicy: clusterpb.Cluster_CLUSTER_PROVIDED,
		UpstreamBindConfig: &corepb.BindConfig{SourceAddress: &corepb.SocketAddress{Address: "127.0.0.6", PortSpecifier: &corepb.SocketAddress_PortValue{}}}}
	out[cds.TypeURL]["prometheus_stats"] = &clusterpb.Cluster{Name: "prometheus_stats", ConnectTimeout: durationpb.New(250 * time.Millisecond),
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STATIC},
		LoadAssignment: &endpointpb.ClusterLoadAssignment{ClusterName: "prometheus_stats", Endpoints: []*endpointpb.LocalityLbEndpoints{{
			LbEndpoints: []*endpointpb.LbEndpoint{{HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{Address: addr("127.0.0.1", 15000)}}}}}}}}
	var vhosts []*routepb.VirtualHost
	for i := range n {
		host := fmt.Sprintf("svc-%d.ns-%d.svc.cluster.local", i, i%5)
		name := "outbound|80||" + host
		c := &clusterpb.Cluster{Name: name, ConnectTimeout: durationpb.New(10 * time.Second),
			ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
			EdsClusterConfig:     &clusterpb.Cluster_EdsClusterConfig{EdsConfig: adsSource, ServiceName: name},
			TransportSocketMatches: []*clusterpb.Cluster_TransportSocketMatch{{
				Name: "tlsMode-istio", Match: must(structpb.NewStruct(map[string]any{"tlsMode": "istio"})),
				TransportSocket: &corepb.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corepb.TransportSocket_TypedConfig{TypedConfig: anyOf(mtls)}},
			}},
			Metadata: &corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{"istio": must(structpb.NewStruct(map[string]any{
				"services": []any{map[string]any{"host": host, "name": fmt.Sprintf("svc-%d", i), "namespace": fmt.Sprintf("ns-%d", i%5)}}}))}},
		}
		out[cds.TypeURL][name] = c
		out[eds.TypeURL][name] = &endpointpb.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointpb.LocalityLbEndpoints{{
			Locality: &corepb.Locality{Region: "us-east1", Zone: "us-east1-b"},
			LbEndpoints: []*endpointpb.LbEndpoint{{
				HostIdentifier:      &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{Address: addr(fmt.Sprintf("10.8.%d.%d", i/250, i%250+1), 8080)}},
				HealthStatus:        corepb.HealthStatus_HEALTHY,
				Metadata:            &corepb.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.transport_socket_match": must(structpb.NewStruct(map[string]any{"tlsMode": "istio"}))}},
				LoadBalancingWeight: wrapperspb.UInt32(1),
			}},
			LoadBalancingWeight: wrapperspb.UInt32(1),
		}}}
		vhosts = append(vhosts, &routepb.VirtualHost{Name: host + ":80", Domains: []string{host, host + ":80", fmt.Sprintf("svc-%d", i)},
			Routes: []*routepb.Route{{Name: "default", Match: &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routepb.Route_Route{Route: &routepb.RouteAction{ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: name},
					Timeout: durationpb.New(0), RetryPolicy: &routepb.RetryPolicy{RetryOn: "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes",
						NumRetries: wrapperspb.UInt32(2)}}}}}})
	}
	out[rds.TypeURL]["80"] = &routepb.RouteConfiguration{Name: "80", VirtualHosts: vhosts, ValidateClusters: wrapperspb.Bool(false)}
	hcm := &hcmpb.HttpConnectionManager{StatPrefix: "outbound_0.0.0.0_80",
		RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{ConfigSource: adsSource, RouteConfigName: "80"}},
		HttpFilters:    []*hcmpb.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: anyOf(&routerpb.Router{})}}}}
	out[lds.TypeURL]["0.0.0.0_80"] = &listenerpb.Listener{Name: "0.0.0.0_80", Address: addr("0.0.0.0", 80), BindToPort: wrapperspb.Bool(false),
		FilterChains: []*listenerpb.FilterChain{{Filters: []*listenerpb.Filter{{Name: "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerpb.Filter_TypedConfig{TypedConfig: anyOf(hcm)}}}}}}
	tcp := func(cluster string) *listenerpb.Filter {
		return &listenerpb.Filter{Name: "envoy.filters.network.tcp_proxy", ConfigType: &listenerpb.Filter_TypedConfig{TypedConfig: anyOf(
			&tcpproxypb.TcpProxy{StatPrefix: cluster, ClusterSpecifier: &tcpproxypb.TcpProxy_Cluster{Cluster: cluster}})}}
	}
	out[lds.TypeURL]["virtualOutbound"] = &listenerpb.Listener{Name: "virtualOutbound", Address: addr("0.0.0.0", 15001),
		UseOriginalDst: wrapperspb.Bool(true), FilterChains: []*listenerpb.FilterChain{{Filters: []*listenerpb.Filter{tcp("PassthroughCluster")}}}}
	out[lds.TypeURL]["virtualInbound"] = &listenerpb.Listener{Name: "virtualInbound", Address: addr("0.0.0.0", 15006),
		ListenerFilters: []*listenerpb.ListenerFilter{
			{Name: "envoy.filters.listener.original_dst", ConfigType: &listenerpb.ListenerFilter_TypedConfig{TypedConfig: anyOf(&originaldstpb.OriginalDst{})}},
			{Name: "envoy.filters.listener.tls_inspector", ConfigType: &listenerpb.ListenerFilter_TypedConfig{TypedConfig: anyOf(&tlsinspectorpb.TlsInspector{})}},
		},
		FilterChains: []*listenerpb.FilterChain{{Filters: []*listenerpb.Filter{tcp("InboundPassthroughCluster")}}}}
	return out
}

// envoyStream is an Envoy's ADS stream to the relay, State of the World
// or incremental: wildcard for Listeners and Clusters, by name for routes
// and endpoints. It keeps what it was sent, by type and name.
type envoyStream struct {
	sotw  *sotwStream
	delta *deltaStream
	held  map[string]map[string][]byte
}

func openEnvoy(t *testing.T, addr string, delta bool, names map[string][]string) *envoyStream {
	e := &envoyStream{held: map[string]map[string][]byte{}}
	n := node("sidecar~10.8.0.1~pod-1.ns~ns.svc.cluster.local", "blue")
	if delta {
		e.delta = openDelta(t, addr)
	} else {
		e.sotw = openSotw(t, addr)
	}
	for _, typeURL := range []string{cds.TypeURL, eds.TypeURL, lds.TypeURL, rds.TypeURL} {
		e.held[typeURL] = map[string][]byte{}
		sub := names[typeURL] // nil: wildcard
		if delta {
			if sub == nil {
				sub = []string{"*"}
			}
			e.delta.request(t, &discoverypb.DeltaDiscoveryRequest{Node: n, TypeUrl: typeURL, ResourceNamesSubscribe: sub})
		} else {
			e.sotw.request(t, &discoverypb.DiscoveryRequest{Node: n, TypeUrl: typeURL, ResourceNames: sub})
		}
		n = nil
	}
	return e
}

// until applies responses, ACKing each, until the client holds want's
// names of every type.
func (e *envoyStream) until(t *testing.T, want map[string]map[string]proto.Message, names map[string][]string) {
	t.Helper()
	complete := func() bool {
		for typeURL, byName := range want {
			if !slices.Equal(slices.Sorted(maps.Keys(e.held[typeURL])), slices.Sorted(maps.Keys(byName))) {
				return false
			}
		}
		return true
	}
	for !complete() {
		if e.delta != nil {
			resp := e.delta.next(t)
			for _, r := range resp.GetResources() {
				e.held[resp.GetTypeUrl()][r.GetName()] = r.GetResource().GetValue()
			}
			e.delta.request(t, &discoverypb.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce()})
			continue
		}
		resp := e.sotw.next(t)
		byName := e.held[resp.GetTypeUrl()]
		if resp.GetTypeUrl() == cds.TypeURL || resp.GetTypeUrl() == lds.TypeURL {
			clear(byName) // full state
		}
		for _, a := range resp.GetResources() {
			byName[nameOf(t, resp.GetTypeUrl(), a.GetValue())] = a.GetValue()
		}
		e.sotw.request(t, &discoverypb.DiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResourceNames: names[resp.GetTypeUrl()],
			VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce()})
	}
}

// TestEnvoyConfigRelayed: an istiod-shaped Envoy configuration, which
// gRPC's rules reject, reaches Envoy-style clients of a relay of the
// pass-through types, State of the World and incremental, byte for byte
// as the upstream serves it.
func TestEnvoyConfigRelayed(t *testing.T) {
	mesh := istioSidecar(20)
	byName := map[string][]string{rds.TypeURL: {"80"}, eds.TypeURL: slices.Sorted(maps.Keys(mesh[eds.TypeURL]))}
	up := newUpstream(t, "upstream")
	setAll(up, mesh)
	r := newRelay(t, up, relaytest.Options{}, func(c *relay.Config) { c.Upstream.Registry = passthrough.Registry() })
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(t *testing.T) {
			envoy := openEnvoy(t, r.Addr(), delta, byName)
			envoy.until(t, mesh, byName)
			for typeURL, want := range mesh {
				for name, m := range want {
					if diff := sameBytes(m, envoy.held[typeURL][name]); diff != "" {
						t.Errorf("%s %s: %s", typeURL, name, diff)
					}
				}
			}
		})
	}
	if n := len(up.NACKs()); n != 0 {
		t.Errorf("the relay NACKed %d responses of the upstream: %v", n, up.NACKs())
	}
}

// TestEnvoyConfigBuiltinRejects: the same configuration through a relay
// of the built-in types is NACKed upstream, as gRPC would NACK it: the
// relay's registry decides what it passes on.
func TestEnvoyConfigBuiltinRejects(t *testing.T) {
	up := newUpstream(t, "upstream")
	setAll(up, istioSidecar(2))
	r := newRelay(t, up, relaytest.Options{}, nil)
	s := openSotw(t, r.Addr())
	s.request(t, &discoverypb.DiscoveryRequest{Node: node("envoy", "blue"), TypeUrl: cds.TypeURL,
		ResourceNames: []string{"PassthroughCluster", "BlackHoleCluster"}})
	if _, err := up.WaitForRequest(ctxFor(t), xdstest.IsNACK(cds.TypeURL)); err != nil {
		t.Fatalf("the built-in relay did not NACK istiod's Envoy clusters: %v", err)
	}
}
