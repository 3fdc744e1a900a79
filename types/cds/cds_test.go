package cds_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	aggregatepb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	cswrrpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	leastrequestpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	pickfirstpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	ringhashpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	roundrobinpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	wrrlocalitypb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const xdstpName = "xdstp://xdstest.example/envoy.config.cluster.v3.Cluster/backend"

func ads() *corepb.ConfigSource {
	return &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}}
}

func self() *corepb.ConfigSource {
	return &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Self{Self: &corepb.SelfConfigSource{}}}
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

func edsCluster(name string) *clusterpb.Cluster {
	return &clusterpb.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
		EdsClusterConfig:     &clusterpb.Cluster_EdsClusterConfig{EdsConfig: ads()},
	}
}

func dnsCluster(name, host string, port uint32) *clusterpb.Cluster {
	return &clusterpb.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_LOGICAL_DNS},
		LoadAssignment: &endpointpb.ClusterLoadAssignment{Endpoints: []*endpointpb.LocalityLbEndpoints{{
			LbEndpoints: []*endpointpb.LbEndpoint{{HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{
				Address: &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
					Address: host, PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: port},
				}}},
			}}}},
		}}},
	}
}

func aggregateCluster(name string, children ...string) *clusterpb.Cluster {
	return &clusterpb.Cluster{
		Name: name,
		ClusterDiscoveryType: &clusterpb.Cluster_ClusterType{ClusterType: &clusterpb.Cluster_CustomClusterType{
			Name:        "envoy.clusters.aggregate",
			TypedConfig: mustAny(&aggregatepb.ClusterConfig{Clusters: children}),
		}},
	}
}

// edit returns m after applying f, so table entries can tweak a base.
func edit[T proto.Message](m T, f func(T)) T {
	f(m)
	return m
}

func policies(ms ...proto.Message) *clusterpb.LoadBalancingPolicy {
	lbp := &clusterpb.LoadBalancingPolicy{}
	for _, m := range ms {
		lbp.Policies = append(lbp.Policies, &clusterpb.LoadBalancingPolicy_Policy{
			TypedExtensionConfig: &corepb.TypedExtensionConfig{Name: "p", TypedConfig: mustAny(m)},
		})
	}
	return lbp
}

func withPolicy(m *clusterpb.Cluster, lbp *clusterpb.LoadBalancingPolicy) *clusterpb.Cluster {
	m.LoadBalancingPolicy = lbp
	return m
}

func customPolicy(typeURL string) *xdstypepb.TypedStruct {
	s, err := structpb.NewStruct(map[string]any{"choiceCount": 3, "mode": "fast"})
	if err != nil {
		panic(err)
	}
	return &xdstypepb.TypedStruct{TypeUrl: typeURL, Value: s}
}

// nested wraps a round_robin policy in depth levels of wrr_locality.
func nested(depth int) *clusterpb.LoadBalancingPolicy {
	lbp := policies(&roundrobinpb.RoundRobin{})
	for range depth {
		lbp = policies(&wrrlocalitypb.WrrLocality{EndpointPickingPolicy: lbp})
	}
	return lbp
}

func transportSocket(m proto.Message) *corepb.TransportSocket {
	return &corepb.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(m)}}
}

func withTLS(m *clusterpb.Cluster, common *tlspb.CommonTlsContext) *clusterpb.Cluster {
	m.TransportSocket = transportSocket(&tlspb.UpstreamTlsContext{CommonTlsContext: common})
	return m
}

func caValidation(vc *tlspb.CertificateValidationContext) *tlspb.CommonTlsContext {
	if vc.CaCertificateProviderInstance == nil && vc.SystemRootCerts == nil {
		vc.CaCertificateProviderInstance = &tlspb.CertificateProviderPluginInstance{InstanceName: "ca"}
	}
	return &tlspb.CommonTlsContext{ValidationContextType: &tlspb.CommonTlsContext_ValidationContext{ValidationContext: vc}}
}

func prefixMatcher(p string) *matcherpb.StringMatcher {
	return &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Prefix{Prefix: p}}
}

var roundRobin = cds.LBPolicy{Kind: cds.LBWrrLocality, Child: &cds.LBPolicy{Kind: cds.LBRoundRobin}}

type validCase struct {
	name     string
	in       *clusterpb.Cluster
	want     cds.Cluster
	wantDeps []registry.Ref
}

func edsRef(name string) registry.Ref { return registry.Ref{TypeURL: eds.TypeURL, Name: name} }
func cdsRef(name string) registry.Ref { return registry.Ref{TypeURL: cds.TypeURL, Name: name} }

var validCases = []validCase{
	{
		name:     "EDS over ADS",
		in:       edsCluster("backend"),
		want:     cds.Cluster{Name: "backend", Kind: cds.KindEDS, LBPolicy: roundRobin, MaxRequests: cds.DefaultMaxRequests},
		wantDeps: []registry.Ref{edsRef("backend")},
	},
	{
		name: "EDS over self with service name, LRS, circuit breaking and ring hash",
		in: edit(edsCluster("backend"), func(c *clusterpb.Cluster) {
			c.EdsClusterConfig = &clusterpb.Cluster_EdsClusterConfig{EdsConfig: self(), ServiceName: "backend-eds"}
			c.LrsServer = self()
			c.CircuitBreakers = &clusterpb.CircuitBreakers{Thresholds: []*clusterpb.CircuitBreakers_Thresholds{
				{Priority: corepb.RoutingPriority_HIGH, MaxRequests: wrapperspb.UInt32(5)},
				{Priority: corepb.RoutingPriority_DEFAULT, MaxRequests: wrapperspb.UInt32(77)},
			}}
			c.LbPolicy = clusterpb.Cluster_RING_HASH
			c.LbConfig = &clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterpb.Cluster_RingHashLbConfig{
				MinimumRingSize: wrapperspb.UInt64(10), MaximumRingSize: wrapperspb.UInt64(100),
			}}
		}),
		want: cds.Cluster{
			Name: "backend", Kind: cds.KindEDS, EDSServiceName: "backend-eds", LoadReporting: true, MaxRequests: 77,
			LBPolicy: cds.LBPolicy{Kind: cds.LBRingHash, RingHash: cds.RingHashConfig{MinRingSize: 10, MaxRingSize: 100}},
		},
		wantDeps: []registry.Ref{edsRef("backend-eds")},
	},
	{
		name: "ring hash defaults",
		in:   edit(edsCluster("backend"), func(c *clusterpb.Cluster) { c.LbPolicy = clusterpb.Cluster_RING_HASH }),
		want: cds.Cluster{
			Name: "backend", Kind: cds.KindEDS, MaxRequests: cds.DefaultMaxRequests,
			LBPolicy: cds.LBPolicy{Kind: cds.LBRingHash, RingHash: cds.RingHashConfig{MinRingSize: 1024, MaxRingSize: 8388608}},
		},
		wantDeps: []registry.Ref{edsRef("backend")},
	},
	{
		name: "xdstp name with service name",
		in: edit(edsCluster(xdstpName), func(c *clusterpb.Cluster) {
			c.EdsClusterConfig.ServiceName = "xdstp://xdstest.example/envoy.config.endpoint.v3.ClusterLoadAssignment/backend"
		}),
		want: cds.Cluster{
			Name: xdstpName, Kind: cds.KindEDS, EDSServiceName: "xdstp://xdstest.example/envoy.config.endpoint.v3.ClusterLoadAssignment/backend",
			LBPolicy: roundRobin, MaxRequests: cds.DefaultMaxRequests,
		},
		wantDeps: []registry.Ref{edsRef("xdstp://xdstest.example/envoy.config.endpoint.v3.ClusterLoadAssignment/backend")},
	},
	{
		name: "logical DNS with least request",
		in: edit(dnsCluster("dns", "dns.example", 443), func(c *clusterpb.Cluster) {
			c.LbPolicy = clusterpb.Cluster_LEAST_REQUEST
			c.LbConfig = &clusterpb.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterpb.Cluster_LeastRequestLbConfig{
				ChoiceCount: wrapperspb.UInt32(3),
			}}
		}),
		want: cds.Cluster{
			Name: "dns", Kind: cds.KindLogicalDNS, DNSHostname: "dns.example:443", MaxRequests: cds.DefaultMaxRequests,
			LBPolicy: cds.LBPolicy{Kind: cds.LBLeastRequest, LeastRequest: cds.LeastRequestConfig{ChoiceCount: 3}},
		},
		wantDeps: []registry.Ref{},
	},
	{
		name: "logical DNS with an IPv6 literal",
		in:   dnsCluster("dns", "2001:db8::1", 443),
		want: cds.Cluster{
			Name: "dns", Kind: cds.KindLogicalDNS, DNSHostname: "[2001:db8::1]:443", MaxRequests: cds.DefaultMaxRequests, LBPolicy: roundRobin,
		},
		wantDeps: []registry.Ref{},
	},
	{
		name: "aggregate naming itself, an xdstp child and a child twice",
		in:   aggregateCluster("agg", "primary", "agg", xdstpName, "primary"),
		want: cds.Cluster{
			Name: "agg", Kind: cds.KindAggregate, AggregateClusters: []string{"primary", "agg", xdstpName, "primary"},
			MaxRequests: cds.DefaultMaxRequests, LBPolicy: roundRobin,
		},
		wantDeps: []registry.Ref{cdsRef("primary"), cdsRef("agg"), cdsRef(xdstpName)},
	},
	{
		name: "load_balancing_policy skips unsupported entries and recurses",
		in: withPolicy(edsCluster("backend"), policies(
			&clusterpb.Cluster{}, // not an LB policy at all
			customPolicy("type.googleapis.com/myorg.UnregisteredPolicy"),
			&wrrlocalitypb.WrrLocality{EndpointPickingPolicy: policies(
				&endpointpb.ClusterLoadAssignment{},
				&leastrequestpb.LeastRequest{},
			)},
			&roundrobinpb.RoundRobin{},
		)),
		want: cds.Cluster{
			Name: "backend", Kind: cds.KindEDS, MaxRequests: cds.DefaultMaxRequests,
			LBPolicy: cds.LBPolicy{Kind: cds.LBWrrLocality, Child: &cds.LBPolicy{Kind: cds.LBLeastRequest, LeastRequest: cds.LeastRequestConfig{ChoiceCount: 2}}},
		},
		wantDeps: []registry.Ref{edsRef("backend")},
	},
	{
		name: "load_balancing_policy overrides lb_policy",
		in: edit(withPolicy(edsCluster("backend"), policies(&ringhashpb.RingHash{MaximumRingSize: wrapperspb.UInt64(4096)})), func(c *clusterpb.Cluster) {
			c.LbPolicy = clusterpb.Cluster_MAGLEV
		}),
		want: cds.Cluster{
			Name: "backend", Kind: cds.KindEDS, MaxRequests: cds.DefaultMaxRequests,
			LBPolicy: cds.LBPolicy{Kind: cds.LBRingHash, RingHash: cds.RingHashConfig{MinRingSize: 1024, MaxRingSize: 4096}},
		},
		wantDeps: []registry.Ref{edsRef("backend")},
	},
	{
		name: "pick_first",
		in:   withPolicy(edsCluster("backend"), policies(&pickfirstpb.PickFirst{ShuffleAddressList: true})),
		want: cds.Cluster{
			Name: "backend", Kind: cds.KindEDS, MaxRequests: cds.DefaultMaxRequests,
			LBPolicy: cds.LBPolicy{Kind: cds.LBPickFirst, PickFirst: cds.PickFirstConfig{ShuffleAddressList: true}},
		},
		wantDeps: []registry.Ref{edsRef("backend")},
	},
	{
		name: "client-side weighted round robin",
		in: withPolicy(edsCluster("backend"), policies(&cswrrpb.ClientSideWeightedRoundRobin{
			EnableOobLoadReport:     wrapperspb.Bool(true),
			BlackoutPeriod:          durationpb.New(5 * time.Second),
			ErrorUtilizationPenalty: wrapperspb.Float(0.5),
		})),
		want: cds.Cluster{
			Name: "backend", Kind: cds.KindEDS, MaxRequests: cds.DefaultMaxRequests,
			LBPolicy: cds.LBPolicy{Kind: cds.LBWeightedRoundRobin, WeightedRoundRobin: cds.WeightedRoundRobinConfig{
				EnableOOBLoadReport: true, OOBReportingPeriod: 10 * time.Second, BlackoutPeriod: 5 * time.Second,
				WeightExpirationPeriod: 3 * time.Minute, WeightUpdatePeriod: time.Second, ErrorUtilizationPenalty: 0.5,
			}},
		},
		wantDeps: []registry.Ref{edsRef("backend")},
	},
	{
		name: "outlier detection with defaults",
		in: edit(edsCluster("backend"), func(c *clusterpb.Cluster) {
			c.OutlierDetection = &clusterpb.OutlierDetection{
				Interval:                   durationpb.New(2 * time.Second),
				EnforcingSuccessRate:       wrapperspb.UInt32(0),
				EnforcingFailurePercentage: wrapperspb.UInt32(50),
				FailurePercentageThreshold: wrapperspb.UInt32(90),
			}
		}),
		want: cds.Cluster{
			Name: "backend", Kind: cds.KindEDS, MaxRequests: cds.DefaultMaxRequests, LBPolicy: roundRobin,
			OutlierDetection: &cds.OutlierDetection{
				Interval: 2 * time.Second, BaseEjectionTime: 30 * time.Second, MaxEjectionTime: 300 * time.Second, MaxEjectionPercent: 10,
				FailurePercentage: &cds.FailurePercentageEjection{Threshold: 90, EnforcementPercentage: 50, MinimumHosts: 5, RequestVolume: 50},
			},
		},
		wantDeps: []registry.Ref{edsRef("backend")},
	},
	{
		name: "outlier detection, empty",
		in:   edit(edsCluster("backend"), func(c *clusterpb.Cluster) { c.OutlierDetection = &clusterpb.OutlierDetection{} }),
		want: cds.Cluster{
			Name: "backend", Kind: cds.KindEDS, MaxRequests: cds.DefaultMaxRequests, LBPolicy: roundRobin,
			OutlierDetection: &cds.OutlierDetection{
				Interval: 10 * time.Second, BaseEjectionTime: 30 * time.Second, MaxEjectionTime: 300 * time.Second, MaxEjectionPercent: 10,
				SuccessRate: &cds.SuccessRateEjection{StdevFactor: 1900, EnforcementPercentage: 100, MinimumHosts: 5, RequestVolume: 100},
			},
		},
		wantDeps: []registry.Ref{edsRef("backend")},
	},
	{
		name: "TLS with certificate providers and SAN matchers",
		in: withTLS(edsCluster("backend"), &tlspb.CommonTlsContext{
			TlsCertificateProviderInstance: &tlspb.CertificateProviderPluginInstance{InstanceName: "id", CertificateName: "client"},
			ValidationContextType: &tlspb.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlspb.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: &tlspb.CertificateValidationContext{
					CaCertificateProviderInstance: &tlspb.CertificateProviderPluginInstance{InstanceName: "ca", CertificateName: "root"},
					//lint:ignore SA1019 the field gRPC reads.
					MatchSubjectAltNames: []*matcherpb.StringMatcher{
						{MatchPattern: &matcherpb.StringMatcher_Exact{Exact: "spiffe://example/backend"}},
						{MatchPattern: &matcherpb.StringMatcher_SafeRegex{SafeRegex: &matcherpb.RegexMatcher{Regex: `.*\.example\.com`}}},
						{MatchPattern: &matcherpb.StringMatcher_Suffix{Suffix: ".Example.Org"}, IgnoreCase: true},
					},
				},
			}},
		}),
		want: cds.Cluster{
			Name: "backend", Kind: cds.KindEDS, MaxRequests: cds.DefaultMaxRequests, LBPolicy: roundRobin,
			TLS: &cds.UpstreamTLS{
				RootCerts:     cds.CertProviderInstance{InstanceName: "ca", CertificateName: "root"},
				IdentityCerts: &cds.CertProviderInstance{InstanceName: "id", CertificateName: "client"},
				SubjectAltNameMatchers: []cds.StringMatcher{
					{Kind: cds.MatchExact, Pattern: "spiffe://example/backend"},
					{Kind: cds.MatchSafeRegex, Pattern: `.*\.example\.com`},
					{Kind: cds.MatchSuffix, Pattern: ".Example.Org", IgnoreCase: true},
				},
			},
		},
		wantDeps: []registry.Ref{edsRef("backend")},
	},
	{
		name: "TLS with system root certs",
		in: withTLS(edsCluster("backend"), caValidation(&tlspb.CertificateValidationContext{
			SystemRootCerts: &tlspb.CertificateValidationContext_SystemRootCerts{},
		})),
		want: cds.Cluster{
			Name: "backend", Kind: cds.KindEDS, MaxRequests: cds.DefaultMaxRequests, LBPolicy: roundRobin,
			TLS: &cds.UpstreamTLS{UseSystemRootCerts: true},
		},
		wantDeps: []registry.Ref{edsRef("backend")},
	},
}

type invalidCase struct {
	name     string
	in       *clusterpb.Cluster
	raw      []byte
	wantName string
	wantErr  string // "|"-separated parts
}

func dnsSocket(c *clusterpb.Cluster) *corepb.SocketAddress {
	return c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
}

var invalidCases = []invalidCase{
	{name: "not a proto", raw: []byte{0x0a, 0xff}, wantErr: "cannot unmarshal Cluster"},
	{name: "empty name", in: edsCluster(""), wantErr: "name: must be non-empty"},
	{
		name: "static discovery type",
		in: edit(edsCluster("c"), func(c *clusterpb.Cluster) {
			c.ClusterDiscoveryType = &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STATIC}
		}),
		wantName: "c",
		wantErr:  "type: discovery type STATIC is not supported",
	},
	{
		name:     "EDS without eds_cluster_config",
		in:       edit(edsCluster("c"), func(c *clusterpb.Cluster) { c.EdsClusterConfig = nil }),
		wantName: "c",
		wantErr:  "eds_cluster_config: field not present",
	},
	{
		name:     "EDS without eds_config",
		in:       edit(edsCluster("c"), func(c *clusterpb.Cluster) { c.EdsClusterConfig.EdsConfig = nil }),
		wantName: "c",
		wantErr:  "eds_cluster_config.eds_config: field not present",
	},
	{
		name: "EDS config source that is a separate API server",
		in: edit(edsCluster("c"), func(c *clusterpb.Cluster) {
			c.EdsClusterConfig.EdsConfig = &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_ApiConfigSource{
				ApiConfigSource: &corepb.ApiConfigSource{ApiType: corepb.ApiConfigSource_GRPC},
			}}
		}),
		wantName: "c",
		wantErr:  "eds_cluster_config.eds_config: ConfigSource must be ads or self",
	},
	{
		name:     "xdstp name without service name",
		in:       edsCluster(xdstpName),
		wantName: xdstpName,
		wantErr:  "eds_cluster_config.service_name: must be set if the Cluster has an xdstp name",
	},
	{
		name:     "logical DNS without load assignment",
		in:       edit(dnsCluster("c", "h", 1), func(c *clusterpb.Cluster) { c.LoadAssignment = nil }),
		wantName: "c",
		wantErr:  "load_assignment: field not present",
	},
	{
		name: "logical DNS with two localities",
		in: edit(dnsCluster("c", "h", 1), func(c *clusterpb.Cluster) {
			c.LoadAssignment.Endpoints = append(c.LoadAssignment.Endpoints, &endpointpb.LocalityLbEndpoints{})
		}),
		wantName: "c",
		wantErr:  "load_assignment.endpoints: must contain exactly one locality for a LOGICAL_DNS cluster, found 2",
	},
	{
		name: "logical DNS with two endpoints",
		in: edit(dnsCluster("c", "h", 1), func(c *clusterpb.Cluster) {
			l := c.LoadAssignment.Endpoints[0]
			l.LbEndpoints = append(l.LbEndpoints, l.LbEndpoints[0])
		}),
		wantName: "c",
		wantErr:  "load_assignment.endpoints[0].lb_endpoints: must contain exactly one endpoint for a LOGICAL_DNS cluster, found 2",
	},
	{
		name:     "logical DNS with custom resolver and no port",
		in:       edit(dnsCluster("c", "h", 1), func(c *clusterpb.Cluster) { s := dnsSocket(c); s.ResolverName = "r"; s.PortSpecifier = nil }),
		wantName: "c",
		wantErr: "load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.resolver_name: must be empty|" +
			"load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value: field not present",
	},
	{
		name:     "logical DNS without host",
		in:       dnsCluster("c", "", 1),
		wantName: "c",
		wantErr:  "load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address: field not present",
	},
	{
		name: "custom cluster type that is not aggregate",
		in: edit(aggregateCluster("c", "a"), func(c *clusterpb.Cluster) {
			c.GetClusterType().TypedConfig = mustAny(&endpointpb.ClusterLoadAssignment{})
		}),
		wantName: "c",
		wantErr:  `cluster_type.typed_config.type_url: unsupported cluster type "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"`,
	},
	{
		name:     "custom cluster type without config",
		in:       edit(aggregateCluster("c", "a"), func(c *clusterpb.Cluster) { c.GetClusterType().TypedConfig = nil }),
		wantName: "c",
		wantErr:  "cluster_type.typed_config: field not present",
	},
	{name: "aggregate without children", in: aggregateCluster("c"), wantName: "c", wantErr: "cluster_type.typed_config.clusters: must be non-empty"},
	{name: "aggregate with an empty child name", in: aggregateCluster("c", "a", ""), wantName: "c", wantErr: "cluster_type.typed_config.clusters[1]: must be non-empty"},
	{
		name:     "unsupported lb_policy",
		in:       edit(edsCluster("c"), func(c *clusterpb.Cluster) { c.LbPolicy = clusterpb.Cluster_MAGLEV }),
		wantName: "c",
		wantErr:  "lb_policy: MAGLEV is not supported",
	},
	{
		name: "ring hash sizes out of range",
		in: edit(edsCluster("c"), func(c *clusterpb.Cluster) {
			c.LbPolicy = clusterpb.Cluster_RING_HASH
			c.LbConfig = &clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterpb.Cluster_RingHashLbConfig{
				MinimumRingSize: wrapperspb.UInt64(0), MaximumRingSize: wrapperspb.UInt64(8388609),
			}}
		}),
		wantName: "c",
		wantErr:  "ring_hash_lb_config.maximum_ring_size: 8388609 out of range [1, 8388608]|ring_hash_lb_config.minimum_ring_size: 0 out of range [1, 8388608]",
	},
	{
		name: "ring hash minimum above maximum and murmur hash",
		in: edit(edsCluster("c"), func(c *clusterpb.Cluster) {
			c.LbPolicy = clusterpb.Cluster_RING_HASH
			c.LbConfig = &clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterpb.Cluster_RingHashLbConfig{
				MinimumRingSize: wrapperspb.UInt64(2000), MaximumRingSize: wrapperspb.UInt64(1000),
				HashFunction: clusterpb.Cluster_RingHashLbConfig_MURMUR_HASH_2,
			}}
		}),
		wantName: "c",
		wantErr:  "ring_hash_lb_config.minimum_ring_size: 2000 is greater than maximum_ring_size 1000|ring_hash_lb_config.hash_function: MURMUR_HASH_2 is not supported",
	},
	{
		name: "least request choice count below 2",
		in: edit(edsCluster("c"), func(c *clusterpb.Cluster) {
			c.LbPolicy = clusterpb.Cluster_LEAST_REQUEST
			c.LbConfig = &clusterpb.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterpb.Cluster_LeastRequestLbConfig{
				ChoiceCount: wrapperspb.UInt32(1),
			}}
		}),
		wantName: "c",
		wantErr:  "least_request_lb_config.choice_count: 1 must be at least 2",
	},
	{
		name:     "load_balancing_policy with no supported policy",
		in:       withPolicy(edsCluster("c"), policies(&clusterpb.Cluster{}, customPolicy("type.googleapis.com/myorg.Unknown"))),
		wantName: "c",
		wantErr:  "load_balancing_policy: no supported load balancing policy found",
	},
	{
		name:     "load_balancing_policy empty",
		in:       withPolicy(edsCluster("c"), &clusterpb.LoadBalancingPolicy{}),
		wantName: "c",
		wantErr:  "load_balancing_policy: no supported load balancing policy found",
	},
	{
		name:     "load_balancing_policy nested too deep",
		in:       withPolicy(edsCluster("c"), nested(16)),
		wantName: "c",
		wantErr:  "exceeds the maximum nesting depth of 16",
	},
	{
		name: "load_balancing_policy entry without typed_extension_config",
		in: withPolicy(edsCluster("c"), &clusterpb.LoadBalancingPolicy{Policies: []*clusterpb.LoadBalancingPolicy_Policy{
			{}, {TypedExtensionConfig: &corepb.TypedExtensionConfig{TypedConfig: mustAny(&roundrobinpb.RoundRobin{})}},
		}}),
		wantName: "c",
		wantErr:  "load_balancing_policy.policies[0].typed_extension_config: field not present",
	},
	{
		name:     "load_balancing_policy ring hash with murmur hash",
		in:       withPolicy(edsCluster("c"), policies(&ringhashpb.RingHash{HashFunction: ringhashpb.RingHash_MURMUR_HASH_2})),
		wantName: "c",
		wantErr:  "load_balancing_policy.policies[0].typed_extension_config.typed_config.hash_function: MURMUR_HASH_2 is not supported",
	},
	{
		name:     "load_balancing_policy wrr_locality without child",
		in:       withPolicy(edsCluster("c"), policies(&wrrlocalitypb.WrrLocality{})),
		wantName: "c",
		wantErr:  "load_balancing_policy.policies[0].typed_extension_config.typed_config.endpoint_picking_policy: field not present",
	},
	{
		name: "load_balancing_policy weighted round robin out of range",
		in: withPolicy(edsCluster("c"), policies(&cswrrpb.ClientSideWeightedRoundRobin{
			BlackoutPeriod:          &durationpb.Duration{Seconds: -1},
			ErrorUtilizationPenalty: wrapperspb.Float(-0.5),
		})),
		wantName: "c",
		wantErr:  "typed_config.blackout_period.seconds: -1 out of range|typed_config.error_utilization_penalty: -0.5 must not be negative",
	},
	{
		name:     "LRS server not self",
		in:       edit(edsCluster("c"), func(c *clusterpb.Cluster) { c.LrsServer = ads() }),
		wantName: "c",
		wantErr:  "lrs_server: must have self set",
	},
	{
		name: "outlier detection out of range",
		in: edit(edsCluster("c"), func(c *clusterpb.Cluster) {
			c.OutlierDetection = &clusterpb.OutlierDetection{
				Interval:                      &durationpb.Duration{Seconds: -5},
				BaseEjectionTime:              &durationpb.Duration{Nanos: 1_000_000_000},
				MaxEjectionPercent:            wrapperspb.UInt32(101),
				EnforcingSuccessRate:          wrapperspb.UInt32(200),
				FailurePercentageThreshold:    wrapperspb.UInt32(150),
				EnforcingFailurePercentage:    wrapperspb.UInt32(300),
				FailurePercentageMinimumHosts: wrapperspb.UInt32(1),
			}
		}),
		wantName: "c",
		wantErr: "outlier_detection.interval.seconds: -5 out of range|outlier_detection.base_ejection_time.nanos: 1000000000 out of range|" +
			"outlier_detection.max_ejection_percent: 101 must be at most 100|outlier_detection.enforcing_success_rate: 200|" +
			"outlier_detection.failure_percentage_threshold: 150|outlier_detection.enforcing_failure_percentage: 300",
	},
	{
		name: "transport_socket_matches",
		in: edit(edsCluster("c"), func(c *clusterpb.Cluster) {
			c.TransportSocketMatches = []*clusterpb.Cluster_TransportSocketMatch{{Name: "m"}}
		}),
		wantName: "c",
		wantErr:  "transport_socket_matches: not supported",
	},
	{
		name:     "transport socket that is not TLS",
		in:       edit(edsCluster("c"), func(c *clusterpb.Cluster) { c.TransportSocket = transportSocket(&tlspb.DownstreamTlsContext{}) }),
		wantName: "c",
		wantErr:  `transport_socket.typed_config.type_url: unsupported transport socket type "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"`,
	},
	{
		name:     "TLS without CA certificates",
		in:       withTLS(edsCluster("c"), &tlspb.CommonTlsContext{}),
		wantName: "c",
		wantErr:  "transport_socket.typed_config.common_tls_context: no CA certs configured",
	},
	{
		name:     "TLS without common_tls_context",
		in:       edit(edsCluster("c"), func(c *clusterpb.Cluster) { c.TransportSocket = transportSocket(&tlspb.UpstreamTlsContext{}) }),
		wantName: "c",
		wantErr:  "transport_socket.typed_config.common_tls_context: no CA certs configured",
	},
	{
		name: "TLS with unsupported certificate sources",
		in: withTLS(edsCluster("c"), edit(caValidation(&tlspb.CertificateValidationContext{
			VerifyCertificateSpki: []string{"x"},
			Crl:                   &corepb.DataSource{},
		}), func(c *tlspb.CommonTlsContext) {
			c.TlsCertificates = []*tlspb.TlsCertificate{{}}
			c.TlsParams = &tlspb.TlsParameters{}
		})),
		wantName: "c",
		wantErr: "common_tls_context.validation_context.verify_certificate_spki: not supported|common_tls_context.validation_context.crl: not supported|" +
			"common_tls_context.tls_certificates: not supported|common_tls_context.tls_params: not supported",
	},
	{
		name: "TLS validation context from SDS",
		in: withTLS(edsCluster("c"), &tlspb.CommonTlsContext{ValidationContextType: &tlspb.CommonTlsContext_ValidationContextSdsSecretConfig{
			ValidationContextSdsSecretConfig: &tlspb.SdsSecretConfig{Name: "s"},
		}}),
		wantName: "c",
		wantErr:  "common_tls_context.validation_context_sds_secret_config: not supported|no CA certs configured",
	},
	{
		name: "TLS with invalid SAN matchers",
		in: withTLS(edsCluster("c"), caValidation(&tlspb.CertificateValidationContext{
			//lint:ignore SA1019 the field gRPC reads.
			MatchSubjectAltNames: []*matcherpb.StringMatcher{
				{MatchPattern: &matcherpb.StringMatcher_SafeRegex{SafeRegex: &matcherpb.RegexMatcher{Regex: "a("}}},
				{MatchPattern: &matcherpb.StringMatcher_SafeRegex{SafeRegex: &matcherpb.RegexMatcher{Regex: "a"}}, IgnoreCase: true},
				prefixMatcher(""),
				{},
			}})),
		wantName: "c",
		wantErr: "match_subject_alt_names[0].safe_regex.regex: invalid regular expression|match_subject_alt_names[1].ignore_case: not supported with safe_regex|" +
			"match_subject_alt_names[2]: empty prefix, suffix or contains is not allowed|match_subject_alt_names[3]: invalid StringMatcher",
	},
	{
		name: "every problem listed",
		in: edit(edsCluster("c"), func(c *clusterpb.Cluster) {
			c.EdsClusterConfig.EdsConfig = nil
			c.LbPolicy = clusterpb.Cluster_RANDOM
			c.LrsServer = ads()
		}),
		wantName: "c",
		wantErr:  "eds_cluster_config.eds_config: field not present|lb_policy: RANDOM is not supported|lrs_server: must have self set",
	},
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeWith(t testing.TB, rt registry.ResourceType, m proto.Message) *cds.Cluster {
	t.Helper()
	res, err := rt.Decode(marshal(t, m), registry.DecodeOptions{})
	if err != nil {
		t.Fatalf("Decode() error = %v", err)
	}
	return res.Resource.(*cds.Cluster)
}

// cmpCluster compares the exported fields: comparing whole values would
// call Cluster.Equal, which compares the bytes they came from.
var cmpCluster = cmp.Options{
	cmpopts.IgnoreUnexported(cds.Cluster{}),
	cmpopts.EquateEmpty(),
}

func exported(c *cds.Cluster) cds.Cluster {
	v := *c
	return v
}

func TestDecodeValid(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeWith(t, cds.Type, tc.in)
			if diff := cmp.Diff(tc.want, exported(got), cmpCluster); diff != "" {
				t.Errorf("Decode() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConformance(t *testing.T) {
	var cases []registrytest.Case
	for _, tc := range validCases {
		cases = append(cases, registrytest.Case{Name: "valid/" + tc.name, Message: tc.in, WantName: tc.want.Name, WantDeps: tc.wantDeps})
	}
	for _, tc := range invalidCases {
		cases = append(cases, registrytest.Case{Name: "invalid/" + tc.name, Message: tc.in, Raw: tc.raw, WantName: tc.wantName, WantErr: tc.wantErr})
	}
	registrytest.Run(t, cds.Type, cases)
}

func TestCustomLBPolicy(t *testing.T) {
	rt := cds.NewType(cds.Options{CustomLBPolicy: func(name string) bool { return name == "myorg.MyPolicy" }})
	in := withPolicy(edsCluster("backend"), policies(
		customPolicy("type.googleapis.com/myorg.Unregistered"),
		&wrrlocalitypb.WrrLocality{EndpointPickingPolicy: policies(customPolicy("type.googleapis.com/myorg.MyPolicy"))},
	))
	got := decodeWith(t, rt, in).LBPolicy
	if got.Kind != cds.LBWrrLocality || got.Child == nil || got.Child.Kind != cds.LBCustom {
		t.Fatalf("LBPolicy = %+v, want wrr_locality with a custom child", got)
	}
	if got.Child.Custom.Name != "myorg.MyPolicy" {
		t.Errorf("custom policy name = %q, want %q", got.Child.Custom.Name, "myorg.MyPolicy")
	}
	var cfg map[string]any
	if err := json.Unmarshal(got.Child.Custom.Config, &cfg); err != nil || cfg["mode"] != "fast" || cfg["choiceCount"] != 3.0 {
		t.Errorf("custom policy config = %s (%v), want the TypedStruct's value", got.Child.Custom.Config, err)
	}
	// cds.Type knows no custom policies, so the same Cluster has none it
	// supports.
	if _, err := cds.Type.Decode(marshal(t, in), registry.DecodeOptions{}); err == nil || !strings.Contains(err.Error(), "no supported load balancing policy") {
		t.Errorf("cds.Type.Decode() error = %v, want no supported policy", err)
	}
}

func TestNestingLimit(t *testing.T) {
	// 15 wrr_locality levels and a leaf make 16 levels, the most allowed.
	p := decodeWith(t, cds.Type, withPolicy(edsCluster("c"), nested(15))).LBPolicy
	levels := 1
	for ; p.Child != nil; p = *p.Child {
		levels++
	}
	if levels != 16 || p.Kind != cds.LBRoundRobin {
		t.Errorf("decoded %d levels ending in %v, want 16 ending in round_robin", levels, p.Kind)
	}
}

func TestEqualAndProto(t *testing.T) {
	a := decodeWith(t, cds.Type, edsCluster("a"))
	if !a.Equal(decodeWith(t, cds.Type, edsCluster("a"))) {
		t.Error("Equal(same bytes) = false")
	}
	if a.Equal(decodeWith(t, cds.Type, edsCluster("b"))) {
		t.Error("Equal(other cluster) = true")
	}
	if a.Equal(nil) {
		t.Error("Equal(nil) = true")
	}
	if diff := cmp.Diff(edsCluster("a"), a.Proto(), protocmp.Transform()); diff != "" {
		t.Errorf("Proto() mismatch (-want +got):\n%s", diff)
	}
}

func TestKindStrings(t *testing.T) {
	if got := cds.KindAggregate.String(); got != "AGGREGATE" {
		t.Errorf("KindAggregate.String() = %q", got)
	}
	if got := cds.LBRingHash.String(); got != "ring_hash_experimental" {
		t.Errorf("LBRingHash.String() = %q", got)
	}
}

func FuzzDecode(f *testing.F) {
	for _, tc := range validCases {
		f.Add(marshal(f, tc.in))
	}
	for _, tc := range invalidCases {
		raw := tc.raw
		if raw == nil {
			raw = marshal(f, tc.in)
		}
		f.Add(raw)
	}
	rt := cds.NewType(cds.Options{CustomLBPolicy: func(name string) bool { return strings.HasPrefix(name, "myorg.") }})
	f.Fuzz(func(t *testing.T, raw []byte) {
		r1, problem, err := registrytest.DecodeTwice(rt, raw, registry.DecodeOptions{})
		if problem != "" {
			t.Fatal(problem)
		}
		if err != nil {
			return
		}
		r2, _ := rt.Decoder.Decode(raw, registry.DecodeOptions{})
		c1, c2 := r1.Resource.(*cds.Cluster), r2.Resource.(*cds.Cluster)
		if !c1.Equal(c2) || !cmp.Equal(exported(c1), exported(c2), cmpCluster) {
			t.Fatal("two decodings of the same bytes differ")
		}
		if c1.Name == "" || c1.Kind == 0 || c1.LBPolicy.Kind == 0 {
			t.Fatalf("valid Cluster with empty name, kind or policy: %+v", exported(c1))
		}
	})
}
