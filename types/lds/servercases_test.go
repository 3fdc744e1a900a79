//lint:file-ignore SA1019 a deprecated ConfigSource.path must be rejected, so a test builds one

package lds_test

import (
	"net/netip"
	"testing"
	"time"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// The server Listener cases below come from gRPC's own tests, each
// naming its source: C-core's test/core/xds/xds_listener_resource_type_test.cc
// ("C-core" plus the test name; the HttpConnectionManagerTest cases in
// their TcpListener form), grpc-go's
// internal/xds/xdsclient/xdsresource/unmarshal_lds_test.go
// (TestUnmarshalListener_ServerSide, "grpc-go lds" plus the case) and
// filter_chain_test.go ("grpc-go fc" plus the test and case). Each
// expects gRPC's verdict; where C-core and grpc-go disagree the case says
// which one is followed, as the package doc does.

// hcmAt is the HttpConnectionManager's path in a default chain.
const hcmAt = "default_filter_chain.filters[0].typed_config"

func rdsRef(name string) registry.Ref { return registry.Ref{TypeURL: rds.TypeURL, Name: name} }

// defaultHCM is a server whose default chain holds h.
func defaultHCM(edit func(*hcmv3.HttpConnectionManager)) *listenerv3.Listener {
	return server(withHCM(chain("", nil), serverHCM(edit)))
}

// rdsHCM is a server whose default chain fetches "rds_name" over self,
// as in C-core's tests, changed by edit.
func rdsHCM(edit func(*hcmv3.HttpConnectionManager)) *listenerv3.Listener {
	return defaultHCM(func(h *hcmv3.HttpConnectionManager) {
		h.RouteSpecifier = selfRDS("rds_name")
		if edit != nil {
			edit(h)
		}
	})
}

func serverListenerCases() []serverCase {
	return []serverCase{
		{
			// C-core TcpListenerTest.MinimumValidConfig: the network
			// filter has no name, which C-core accepts and grpc-go
			// ("missing name field in filter") rejects; C-core is followed.
			name: "C-core MinimumValidConfig",
			msg: func() *listenerv3.Listener {
				l := rdsHCM(nil)
				l.DefaultFilterChain.Filters[0].Name = ""
				return l
			}(),
			wantDeps: []registry.Ref{rdsRef("rds_name")},
			check: func(t *testing.T, s *lds.ServerListener) {
				if s.Addr() != "127.0.0.1:443" || len(s.FilterChains) != 0 || s.DefaultFilterChain == nil {
					t.Fatalf("server = %+v, want 127.0.0.1:443 with only a default chain", s)
				}
				h := s.DefaultFilterChain.HTTP
				if h.RouteConfigName != "rds_name" || len(h.HTTPFilters) != 1 || h.HTTPFilters[0].Name != "router" || h.MaxStreamDuration != 0 || s.DefaultFilterChain.TLS != nil {
					t.Errorf("default chain = %+v, want RDS rds_name, the router, plaintext", s.DefaultFilterChain)
				}
			},
		},
		{
			name:     "C-core RdsConfigSourceUsesAds",
			msg:      defaultHCM(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = adsRDS("rds_name") }),
			wantDeps: []registry.Ref{rdsRef("rds_name")},
		},
		{
			name:    "C-core NeitherRouteConfigNorRdsName",
			msg:     defaultHCM(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = &hcmv3.HttpConnectionManager_ScopedRoutes{} }),
			wantErr: hcmAt + ".scoped_routes: not supported",
		},
		{
			// Also grpc-go fc TestUnmarshalListener_ServerSide_BadRouteUpdate/missing-route-specifier.
			name:    "C-core NeitherRouteConfigNorRdsName without specifier",
			msg:     defaultHCM(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = nil }),
			wantErr: hcmAt + ": neither rds nor route_config is set",
		},
		{
			name: "C-core RdsConfigSourceNotAdsOrSelf",
			msg: rdsHCM(func(h *hcmv3.HttpConnectionManager) {
				h.GetRds().ConfigSource = &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Path{Path: "/foo/bar"}}
			}),
			wantErr: hcmAt + ".rds.config_source: must specify ads or self",
		},
		{
			name:    "C-core RdsConfigSourceNotSet",
			msg:     rdsHCM(func(h *hcmv3.HttpConnectionManager) { h.GetRds().ConfigSource = nil }),
			wantErr: hcmAt + ".rds.config_source: field not present",
		},
		{
			name: "C-core SetsMaxStreamDuration",
			msg: rdsHCM(func(h *hcmv3.HttpConnectionManager) {
				h.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxStreamDuration: &durationpb.Duration{Seconds: 5, Nanos: 5000000}}
			}),
			wantDeps: []registry.Ref{rdsRef("rds_name")},
			check: func(t *testing.T, s *lds.ServerListener) {
				if got := s.DefaultFilterChain.HTTP.MaxStreamDuration; got != 5005*time.Millisecond {
					t.Errorf("MaxStreamDuration = %v, want 5.005s", got)
				}
			},
		},
		{
			name: "C-core InvalidMaxStreamDuration",
			msg: rdsHCM(func(h *hcmv3.HttpConnectionManager) {
				h.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxStreamDuration: &durationpb.Duration{Seconds: -1}}
			}),
			wantErr: hcmAt + ".common_http_protocol_options.max_stream_duration: must be non-negative",
		},
		{
			// Also grpc-go lds rbac-allow-equating-direct-remote-ip-and-remote-ip-invalid-*.
			name: "C-core UnsupportedFieldsSet",
			msg: rdsHCM(func(h *hcmv3.HttpConnectionManager) {
				h.XffNumTrustedHops = 1
				h.OriginalIpDetectionExtensions = []*corev3.TypedExtensionConfig{{}}
			}),
			wantErr: hcmAt + ".xff_num_trusted_hops: must be zero|" + hcmAt + ".original_ip_detection_extensions: must be empty",
		},
		{
			name:    "C-core EmptyHttpFilterName",
			msg:     rdsHCM(func(h *hcmv3.HttpConnectionManager) { h.HttpFilters[0].Name = "" }),
			wantErr: hcmAt + ".http_filters[0].name: must be non-empty",
		},
		{
			// Also grpc-go lds "duplicate filter names in http filter".
			name:    "C-core DuplicateHttpFilterName",
			msg:     rdsHCM(func(h *hcmv3.HttpConnectionManager) { h.HttpFilters = append(h.HttpFilters, routerFilter()) }),
			wantErr: hcmAt + `.http_filters[1].name: duplicate filter name "router"`,
		},
		{
			name:    "C-core HttpFilterMissingConfig",
			msg:     rdsHCM(func(h *hcmv3.HttpConnectionManager) { h.HttpFilters[0].ConfigType = nil }),
			wantErr: hcmAt + ".http_filters[0].typed_config: field not present",
		},
		{
			name: "C-core HttpFilterTypeNotSupported",
			msg: rdsHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters[0].ConfigType = &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&listenerv3.Listener{})}
			}),
			wantErr: hcmAt + `.http_filters[0].typed_config: unsupported filter type "type.googleapis.com/envoy.config.listener.v3.Listener"`,
		},
		{
			name: "C-core HttpFilterTypeNotSupportedButOptional",
			msg: rdsHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = append([]*hcmv3.HttpFilter{{Name: "unsupported", IsOptional: true,
					ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&listenerv3.Listener{})}}}, h.HttpFilters...)
			}),
			wantDeps: []registry.Ref{rdsRef("rds_name")},
		},
		{
			// Also grpc-go lds "no terminal filter".
			name:    "C-core NoHttpFilters",
			msg:     rdsHCM(func(h *hcmv3.HttpConnectionManager) { h.HttpFilters = nil }),
			wantErr: hcmAt + ".http_filters: no filter the server implements",
		},
		{
			// Also grpc-go lds "terminal filter not last".
			name: "C-core TerminalFilterNotLast",
			msg: rdsHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = append(h.HttpFilters, rbacFilter("rbac", nil))
			}),
			wantErr: hcmAt + `.http_filters[0]: terminal filter "router" must be the last filter|` +
				hcmAt + `.http_filters[1]: last filter "rbac" is not terminal`,
		},
		{
			// Also grpc-go fc BadHTTPFilters/client side HTTP filter.
			name: "C-core HttpFilterNotSupportedOnServer",
			msg: rdsHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = append([]*hcmv3.HttpFilter{filter("fault", &faultv3.HTTPFault{})}, h.HttpFilters...)
			}),
			wantErr: hcmAt + `.http_filters[0].typed_config: filter type "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault" is not supported on servers`,
		},
		{
			name: "C-core HttpFilterNotSupportedOnServerButOptional",
			msg: rdsHCM(func(h *hcmv3.HttpConnectionManager) {
				f := filter("fault", &faultv3.HTTPFault{})
				f.IsOptional = true
				h.HttpFilters = append([]*hcmv3.HttpFilter{f}, h.HttpFilters...)
			}),
			wantDeps: []registry.Ref{rdsRef("rds_name")},
		},
		{
			name: "C-core FilterChainMatchCriteria",
			msg: server(nil, withHCM(chain("", &listenerv3.FilterChainMatch{
				PrefixRanges:       []*corev3.CidrRange{cidr("1.2.3.4", 24)},
				SourcePrefixRanges: []*corev3.CidrRange{cidr("5.6.7.8", 16)},
				SourcePorts:        []uint32{1025},
				TransportProtocol:  "raw_buffer",
			}), serverHCM(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = selfRDS("rds_name") }))),
			wantDeps: []registry.Ref{rdsRef("rds_name")},
			check: func(t *testing.T, s *lds.ServerListener) {
				m := s.FilterChains[0].Match
				if len(m.DestinationPrefixes) != 1 || m.DestinationPrefixes[0] != netip.MustParsePrefix("1.2.3.0/24") ||
					len(m.SourcePrefixes) != 1 || m.SourcePrefixes[0] != netip.MustParsePrefix("5.6.0.0/16") ||
					len(m.SourcePorts) != 1 || m.SourcePorts[0] != 1025 || m.TransportProtocol != "raw_buffer" || m.Unmatchable() != "" {
					t.Errorf("match = %+v, want 1.2.3.0/24 from 5.6.0.0/16 port 1025, raw_buffer", m)
				}
				if s.DefaultFilterChain != nil {
					t.Errorf("DefaultFilterChain = %+v, want nil", s.DefaultFilterChain)
				}
			},
		},
		{
			// Also grpc-go lds "no socket address field".
			name:    "C-core SocketAddressNotPresent",
			msg:     editServer(func(l *listenerv3.Listener) { l.Address = &corev3.Address{} }),
			wantErr: "address.socket_address: field not present",
		},
		{
			name: "C-core SocketAddressBadValues",
			msg: editServer(func(l *listenerv3.Listener) {
				l.Address = socketAddress("127.0.0.1", 65536)
				l.Address.GetSocketAddress().Protocol = corev3.SocketAddress_UDP
			}),
			wantErr: "address.socket_address.port_value: invalid port 65536|address.socket_address.protocol: value must be TCP",
		},
		{
			// Also grpc-go lds "use_original_dst is set".
			name:    "C-core UseOriginalDstNotSupported",
			msg:     editServer(func(l *listenerv3.Listener) { l.UseOriginalDst = wrapperspb.Bool(true) }),
			wantErr: "use_original_dst: field not supported",
		},
		{
			name:    "C-core NoFilterChains",
			msg:     server(nil),
			wantErr: "default_filter_chain: must be set if filter_chains is unset",
		},
		{
			name: "C-core UnsupportedFilter",
			msg: editServer(func(l *listenerv3.Listener) {
				l.DefaultFilterChain.Filters = append([]*listenerv3.Filter{{ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(&listenerv3.Listener{})}}},
					l.DefaultFilterChain.Filters...)
			}),
			wantErr: "default_filter_chain.filters: must have exactly one filter|" +
				`default_filter_chain.filters[0].typed_config: unsupported network filter type "type.googleapis.com/envoy.config.listener.v3.Listener"`,
		},
		{
			// Also grpc-go fc FilterChains_FailureCases/bad dest address
			// prefix and bad source address prefix.
			name: "C-core BadCidrRanges",
			msg: server(nil, chain("", &listenerv3.FilterChainMatch{
				PrefixRanges:       []*corev3.CidrRange{cidr("foobar", 24)},
				SourcePrefixRanges: []*corev3.CidrRange{cidr("invalid", 16)},
				SourcePorts:        []uint32{1025},
				TransportProtocol:  "raw_buffer",
			})),
			wantErr: `filter_chains[0].filter_chain_match.prefix_ranges[0].address_prefix: invalid IP address "foobar"|` +
				`filter_chains[0].filter_chain_match.source_prefix_ranges[0].address_prefix: invalid IP address "invalid"`,
		},
		{
			// grpc-go lds "non-empty listener filters"; C-core does not
			// look at listener_filters, gRFC A36 and grpc-go reject them.
			name: "grpc-go lds non-empty listener filters",
			msg: editServer(func(l *listenerv3.Listener) {
				l.ListenerFilters = []*listenerv3.ListenerFilter{{Name: "listener-filter-1"}}
			}),
			wantErr: "listener_filters: not supported: gRPC runs no listener filters, found 1",
		},
		{
			name: "grpc-go lds no address field",
			msg: editServer(func(l *listenerv3.Listener) {
				l.Address = nil
				l.FilterChains = []*listenerv3.FilterChain{chain("", nil)}
			}),
			wantErr: "address: field not present",
		},
		{
			// grpc-go NACKs a Listener none of whose chains can be matched
			// and that has no default chain; C-core only one without
			// chains. grpc-go is followed: it is the same mistake.
			name:    "grpc-go lds no filter chains and no default filter chain",
			msg:     server(nil, chain("", &listenerv3.FilterChainMatch{DestinationPort: wrapperspb.UInt32(666)})),
			wantErr: "default_filter_chain: must be set: no filter chain can be matched",
		},
		{
			// Also grpc-go fc DroppedFilterChains: each of those chains
			// has no filters, which C-core rejects and grpc-go, dropping
			// the chain first, does not look at.
			name:    "grpc-go lds missing http connection manager network filter",
			msg:     server(nil, &listenerv3.FilterChain{Name: "filter-chain-1"}),
			wantErr: "filter_chains[0].filters: must have exactly one filter, an HttpConnectionManager (gRPC implements no other network filter), found 0",
		},
		{
			name: "grpc-go lds duplicate network filter names",
			msg: server(nil, func() *listenerv3.FilterChain {
				c := chain("filter-chain-1", nil)
				c.Filters = append(c.Filters, c.Filters[0])
				return c
			}()),
			wantErr: "filter_chains[0].filters: must have exactly one filter|" +
				`filter_chains[0].filters[1].name: duplicate filter name "envoy.filters.network.http_connection_manager"`,
		},
		{
			name: "grpc-go lds unsupported oneof in typed config of network filter",
			msg: server(nil, &listenerv3.FilterChain{Name: "filter-chain-1", Filters: []*listenerv3.Filter{
				{Name: "name", ConfigType: &listenerv3.Filter_ConfigDiscovery{}},
			}}),
			wantErr: "filter_chains[0].filters[0].typed_config: field not present",
		},
		{
			name: "grpc-go lds unsupported network filter",
			msg: server(nil, &listenerv3.FilterChain{Name: "filter-chain-1", Filters: []*listenerv3.Filter{
				{Name: "name", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(&hcmv3.LocalReplyConfig{})}},
			}}),
			wantErr: `filter_chains[0].filters[0].typed_config: unsupported network filter type "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.LocalReplyConfig"`,
		},
		{
			name: "grpc-go lds badly marshaled network filter",
			msg: server(nil, &listenerv3.FilterChain{Name: "filter-chain-1", Filters: []*listenerv3.Filter{
				{Name: "name", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: rawAny("type.googleapis.com/" + hcmMessageName)}},
			}}),
			wantErr: "filter_chains[0].filters[0].typed_config: cannot parse HttpConnectionManager",
		},
		{
			name: "HttpConnectionManager in a TypedStruct",
			msg: server(nil, &listenerv3.FilterChain{Filters: []*listenerv3.Filter{
				{ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(&xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/" + hcmMessageName})}},
			}}),
			wantErr: "filter_chains[0].filters[0].typed_config: an HttpConnectionManager in a TypedStruct cannot be read",
		},
		{
			// grpc-go fc GoodHTTPFilters/two hcms: grpc-go accepts a chain
			// with two HttpConnectionManagers and uses the first; C-core
			// and gRFC A36 ("exactly one") reject it, and are followed.
			name: "grpc-go fc two hcms",
			msg: server(nil, func() *listenerv3.FilterChain {
				c := chain("", nil)
				c.Filters = append(c.Filters, &listenerv3.Filter{Name: "hcm2", ConfigType: c.Filters[0].ConfigType})
				return c
			}()),
			wantErr: "filter_chains[0].filters: must have exactly one filter, an HttpConnectionManager (gRPC implements no other network filter), found 2",
		},
		{
			// grpc-go fc GoodRouteUpdate/two_route_config_names.
			name: "grpc-go fc two route config names",
			msg: server(withHCM(chain("default", nil), serverHCM(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = adsRDS("route-2") })),
				withHCM(chain("a", &listenerv3.FilterChainMatch{SourceType: listenerv3.FilterChainMatch_SAME_IP_OR_LOOPBACK}),
					serverHCM(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = adsRDS("route-1") })),
				withHCM(chain("b", &listenerv3.FilterChainMatch{SourceType: listenerv3.FilterChainMatch_EXTERNAL}),
					serverHCM(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = adsRDS("route-1") })),
				chain("inline", &listenerv3.FilterChainMatch{SourcePorts: []uint32{80}}),
			),
			wantDeps: []registry.Ref{rdsRef("route-1"), rdsRef("route-2")},
		},
		{
			name: "grpc-go fc BadRouteUpdate/unsupported-route-specifier",
			msg: server(withHCM(chain("", nil), serverHCM(func(h *hcmv3.HttpConnectionManager) {
				h.RouteSpecifier = &hcmv3.HttpConnectionManager_ScopedRoutes{ScopedRoutes: &hcmv3.ScopedRoutes{}}
			}))),
			wantErr: hcmAt + ".scoped_routes: not supported",
		},
		{
			name: "inline route configuration checked as RDS checks one",
			msg: defaultHCM(func(h *hcmv3.HttpConnectionManager) {
				h.GetRouteConfig().VirtualHosts[0].Domains = nil
			}),
			wantErr: hcmAt + ".route_config.virtual_hosts[0].domains: must be non-empty",
		},
		{
			name: "named port is port 0",
			msg: editServer(func(l *listenerv3.Listener) {
				l.Address.GetSocketAddress().PortSpecifier = &corev3.SocketAddress_NamedPort{NamedPort: "https"}
			}),
			check: func(t *testing.T, s *lds.ServerListener) { checkAddr(t, s, "127.0.0.1:0") },
		},
		{
			name:  "IPv6 address",
			msg:   editServer(func(l *listenerv3.Listener) { l.Address = socketAddress("::", 8080) }),
			check: func(t *testing.T, s *lds.ServerListener) { checkAddr(t, s, "[::]:8080") },
		},
	}
}

const hcmMessageName = "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

func checkAddr(t *testing.T, s *lds.ServerListener, want string) {
	t.Helper()
	if s.Addr() != want {
		t.Errorf("Addr() = %q, want %q", s.Addr(), want)
	}
}
