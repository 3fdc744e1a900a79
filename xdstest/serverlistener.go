package xdstest

import (
	"net"
	"net/netip"
	"strconv"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// FilterChain describes one filter chain of a [ServerListener]: its match
// criteria (all empty: every connection), its routes, its TLS and its
// RBAC policy.
type FilterChain struct {
	Name string
	// DestinationPrefixes and SourcePrefixes are CIDR ranges such as
	// "10.0.0.0/8"; a bare address is a /32 or /128.
	DestinationPrefixes []string
	SourceType          listenerpb.FilterChainMatch_ConnectionSourceType
	SourcePrefixes      []string
	SourcePorts         []uint32
	// RouteConfig names a RouteConfiguration fetched over ADS; empty
	// carries [ServerRouteConfig] inline instead.
	RouteConfig string
	// TLS is the chain's DownstreamTlsContext; nil is plaintext.
	TLS *TLS
	// RBAC, if set, is the rules of an RBAC HTTP filter put before the
	// router (gRFC A41).
	RBAC *rbacconfigpb.RBAC
}

// TLS names the certificate provider instances of a chain's
// DownstreamTlsContext (gRFC A29); the client's bootstrap must define
// them ([BootstrapOptions.CertificateProviders]).
type TLS struct {
	// Identity provides the server's certificate.
	Identity string
	// Root provides the CA that validates client certificates; empty
	// means the server asks for none.
	Root string
	// RequireClientCertificate rejects connections without a valid client
	// certificate (mutual TLS); it needs Root.
	RequireClientCertificate bool
}

// ServerListener is the Listener of an xDS-enabled gRPC server (gRFC A36)
// listening on addr ("host:port"), with the given filter chains and an
// optional default chain, in the shape istiod sends: each chain's one
// network filter an HttpConnectionManager whose HTTP filters end with the
// router. It panics on an addr or prefix that does not parse, as a test's
// own mistake.
func ServerListener(name, addr string, chains []FilterChain, defaultChain *FilterChain) *listenerpb.Listener {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		panic("xdstest: ServerListener: " + err.Error())
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		panic("xdstest: ServerListener: port " + portText + ": " + err.Error())
	}
	l := &listenerpb.Listener{
		Name: name,
		Address: &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
			Address: host, PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: uint32(port)},
		}}},
	}
	for _, c := range chains {
		l.FilterChains = append(l.FilterChains, c.build())
	}
	if defaultChain != nil {
		l.DefaultFilterChain = defaultChain.build()
	}
	return l
}

// ServerRouteConfig is a route configuration for a server: one virtual
// host for every domain whose one route, for every RPC, is
// non_forwarding_action, as gRFC A36 expects on servers.
func ServerRouteConfig(name string) *routepb.RouteConfiguration {
	return &routepb.RouteConfiguration{Name: name, VirtualHosts: []*routepb.VirtualHost{{
		Name:    "inbound",
		Domains: []string{"*"},
		Routes: []*routepb.Route{{
			Match:  &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routepb.Route_NonForwardingAction{NonForwardingAction: &routepb.NonForwardingAction{}},
		}},
	}}}
}

func (c FilterChain) build() *listenerpb.FilterChain {
	hcm := &hcmpb.HttpConnectionManager{}
	if c.RouteConfig != "" {
		hcm.RouteSpecifier = &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{ConfigSource: ads, RouteConfigName: c.RouteConfig}}
	} else {
		hcm.RouteSpecifier = &hcmpb.HttpConnectionManager_RouteConfig{RouteConfig: ServerRouteConfig("inbound")}
	}
	if c.RBAC != nil {
		hcm.HttpFilters = append(hcm.HttpFilters, &hcmpb.HttpFilter{
			Name:       "envoy.filters.http.rbac",
			ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: mustAny(&rbacpb.RBAC{Rules: c.RBAC})},
		})
	}
	hcm.HttpFilters = append(hcm.HttpFilters, &hcmpb.HttpFilter{
		Name:       "envoy.filters.http.router",
		ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerpb.Router{})},
	})
	fc := &listenerpb.FilterChain{
		Name: c.Name,
		Filters: []*listenerpb.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerpb.Filter_TypedConfig{TypedConfig: mustAny(hcm)},
		}},
	}
	if len(c.DestinationPrefixes)+len(c.SourcePrefixes)+len(c.SourcePorts) > 0 || c.SourceType != listenerpb.FilterChainMatch_ANY {
		fc.FilterChainMatch = &listenerpb.FilterChainMatch{
			PrefixRanges:       cidrs(c.DestinationPrefixes),
			SourceType:         c.SourceType,
			SourcePrefixRanges: cidrs(c.SourcePrefixes),
			SourcePorts:        c.SourcePorts,
		}
	}
	if c.TLS != nil {
		fc.TransportSocket = &corepb.TransportSocket{
			Name:       "envoy.transport_sockets.tls",
			ConfigType: &corepb.TransportSocket_TypedConfig{TypedConfig: mustAny(c.TLS.build())},
		}
	}
	return fc
}

func (t *TLS) build() *tlspb.DownstreamTlsContext {
	common := &tlspb.CommonTlsContext{
		TlsCertificateProviderInstance: &tlspb.CertificateProviderPluginInstance{InstanceName: t.Identity, CertificateName: "default"},
	}
	if t.Root != "" {
		common.ValidationContextType = &tlspb.CommonTlsContext_ValidationContext{ValidationContext: &tlspb.CertificateValidationContext{
			CaCertificateProviderInstance: &tlspb.CertificateProviderPluginInstance{InstanceName: t.Root, CertificateName: "ROOTCA"},
		}}
	}
	dtc := &tlspb.DownstreamTlsContext{CommonTlsContext: common}
	if t.RequireClientCertificate {
		dtc.RequireClientCertificate = wrapperspb.Bool(true)
	}
	return dtc
}

func cidrs(prefixes []string) []*corepb.CidrRange {
	var out []*corepb.CidrRange
	for _, s := range prefixes {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				panic("xdstest: " + err.Error())
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, &corepb.CidrRange{AddressPrefix: p.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(p.Bits()))})
	}
	return out
}
