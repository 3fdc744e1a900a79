//lint:file-ignore SA1019 control planes still send the deprecated header matchers, so tests build them

package lds_test

import (
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/lds"
)

const rbacTypeURL = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"

// serverCase is one server Listener, valid (wantErr empty) or not. want,
// when set, is compared with the decoded Server part.
type serverCase struct {
	name string
	msg  *listenerv3.Listener
	// opts default to serverOpts: a bootstrap with the certificate
	// provider instances the cases name.
	opts *registry.DecodeOptions
	// check, for a valid case, looks at the decoded server Listener.
	check    func(t *testing.T, s *lds.ServerListener)
	wantDeps []registry.Ref
	// wantErr lists "|"-separated substrings of the error.
	wantErr string
}

// providers is a bootstrap's certificate_providers, for DecodeOptions.
func providers(names ...string) func(string) bool {
	return func(name string) bool { return slices.Contains(names, name) }
}

// serverOpts name the instances of C-core's test bootstrap (provider1),
// istiod's (default) and grpc-go's tests.
var serverOpts = registry.DecodeOptions{CertificateProviders: providers(
	"provider1", "default", "identityPluginInstance", "rootPluginInstance",
	"defaultIdentityPluginInstance", "defaultRootPluginInstance")}

func (c serverCase) decodeOptions() registry.DecodeOptions {
	if c.opts != nil {
		return *c.opts
	}
	return serverOpts
}

// nonForwardingRoutes is the route configuration a server uses: every RPC
// on non_forwarding_action.
func nonForwardingRoutes(name string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{{
		Name:    "inbound",
		Domains: []string{"*"},
		Routes: []*routev3.Route{{
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}},
		}},
	}}}
}

func selfRDS(name string) *hcmv3.HttpConnectionManager_Rds {
	return &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
		RouteConfigName: name,
		ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Self{Self: &corev3.SelfConfigSource{}}},
	}}
}

// serverHCM is a valid server HttpConnectionManager, inline routes and
// the router, changed by edit.
func serverHCM(edit func(*hcmv3.HttpConnectionManager)) *hcmv3.HttpConnectionManager {
	h := &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: nonForwardingRoutes("inbound")},
		HttpFilters:    []*hcmv3.HttpFilter{routerFilter()},
	}
	if edit != nil {
		edit(h)
	}
	return h
}

// hcmFilters is a chain's network filters: one HttpConnectionManager.
func hcmFilters(h *hcmv3.HttpConnectionManager) []*listenerv3.Filter {
	return []*listenerv3.Filter{{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(h)}}}
}

// chain is a valid filter chain with inline routes and match m.
func chain(name string, m *listenerv3.FilterChainMatch) *listenerv3.FilterChain {
	return &listenerv3.FilterChain{Name: name, FilterChainMatch: m, Filters: hcmFilters(serverHCM(nil))}
}

func withHCM(c *listenerv3.FilterChain, h *hcmv3.HttpConnectionManager) *listenerv3.FilterChain {
	c.Filters = hcmFilters(h)
	return c
}

func withTLS(c *listenerv3.FilterChain, dtc proto.Message) *listenerv3.FilterChain {
	c.TransportSocket = tlsSocket(dtc)
	return c
}

func tlsSocket(m proto.Message) *corev3.TransportSocket {
	return &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(m)}}
}

func socketAddress(host string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

// server is a server Listener on 127.0.0.1:443 with the given default
// chain and chains.
func server(defaultChain *listenerv3.FilterChain, chains ...*listenerv3.FilterChain) *listenerv3.Listener {
	return &listenerv3.Listener{Name: "foo", Address: socketAddress("127.0.0.1", 443), DefaultFilterChain: defaultChain, FilterChains: chains}
}

// editServer returns a valid server Listener (a default chain only),
// changed by edit.
func editServer(edit func(*listenerv3.Listener)) *listenerv3.Listener {
	l := server(chain("", nil))
	edit(l)
	return l
}

func cidr(addr string, n uint32) *corev3.CidrRange {
	return &corev3.CidrRange{AddressPrefix: addr, PrefixLen: wrapperspb.UInt32(n)}
}

func pluginInstance(name, cert string) *tlsv3.CertificateProviderPluginInstance {
	return &tlsv3.CertificateProviderPluginInstance{InstanceName: name, CertificateName: cert}
}

func legacyInstance(name, cert string) *tlsv3.CommonTlsContext_CertificateProviderInstance {
	return &tlsv3.CommonTlsContext_CertificateProviderInstance{InstanceName: name, CertificateName: cert}
}

// identityTLS is a DownstreamTlsContext naming only the server's
// certificate provider.
func identityTLS(instance string) *tlsv3.DownstreamTlsContext {
	return &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificateProviderInstance: pluginInstance(instance, "cert_name")}}
}

// mtls is a DownstreamTlsContext for mutual TLS.
func mtls(identity, root string) *tlsv3.DownstreamTlsContext {
	d := identityTLS(identity)
	d.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
		CaCertificateProviderInstance: pluginInstance(root, "ca_cert_name"),
	}}
	d.RequireClientCertificate = wrapperspb.Bool(true)
	return d
}

// rbacFilter is an HTTP filter holding RBAC rules.
func rbacFilter(name string, rules *rbacconfigv3.RBAC) *hcmv3.HttpFilter {
	return filter(name, &rbacv3.RBAC{Rules: rules})
}

// rbacChain is a default chain whose RBAC filter has one policy.
func rbacChain(policy *rbacconfigv3.Policy) *listenerv3.FilterChain {
	return withHCM(chain("", nil), serverHCM(func(h *hcmv3.HttpConnectionManager) {
		h.HttpFilters = []*hcmv3.HttpFilter{rbacFilter("rbac", &rbacconfigv3.RBAC{
			Action:   rbacconfigv3.RBAC_ALLOW,
			Policies: map[string]*rbacconfigv3.Policy{"p": policy},
		}), routerFilter()}
	}))
}

func anyPermission() *rbacconfigv3.Permission {
	return &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_Any{Any: true}}
}

func anyPrincipal() *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Any{Any: true}}
}

func headerPrincipal(h *routev3.HeaderMatcher) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Header{Header: h}}
}

func exactHeader(name, value string) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: value}}
}

func policy(perms []*rbacconfigv3.Permission, principals ...*rbacconfigv3.Principal) *rbacconfigv3.Policy {
	return &rbacconfigv3.Policy{Permissions: perms, Principals: principals}
}

// rawAny is an Any holding bytes that do not parse as typeURL.
func rawAny(typeURL string) *anypb.Any {
	return &anypb.Any{TypeUrl: typeURL, Value: []byte{0x0a, 0xff}}
}
