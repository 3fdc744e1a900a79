//lint:file-ignore SA1019 control planes still send deprecated matcher and provider fields, so tests build them

package lds_test

import (
	"net/netip"
	"testing"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// rbacAt is the RBAC filter's config path in rbacChain's default chain.
const rbacAt = hcmAt + ".http_filters[0].typed_config"

func prefixString(p string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: p}}
}

// rbacCases are gRFC A41's rules for a server's RBAC filter.
func rbacCases() []serverCase {
	withPolicy := func(p *rbacconfigv3.Policy) *listenerv3.Listener { return server(rbacChain(p)) }
	return []serverCase{
		{
			name: "RBAC policy decoded",
			msg: withPolicy(policy(
				[]*rbacconfigv3.Permission{
					{Rule: &rbacconfigv3.Permission_AndRules{AndRules: &rbacconfigv3.Permission_Set{Rules: []*rbacconfigv3.Permission{
						{Rule: &rbacconfigv3.Permission_UrlPath{UrlPath: &matcherv3.PathMatcher{Rule: &matcherv3.PathMatcher_Path{Path: prefixString("/echo.Echo/")}}}},
						{Rule: &rbacconfigv3.Permission_NotRule{NotRule: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationPort{DestinationPort: 8080}}}},
					}}}},
					{Rule: &rbacconfigv3.Permission_DestinationIp{DestinationIp: cidr("10.1.2.3", 8)}},
				},
				headerPrincipal(exactHeader("Host", "echo.example")),
				&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_RemoteIp{RemoteIp: cidr("192.168.0.0", 16)}},
				&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Authenticated_{Authenticated: &rbacconfigv3.Principal_Authenticated{
					PrincipalName: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "spiffe://cluster.local/ns/default/sa/client"}},
				}}},
			)),
			check: func(t *testing.T, s *lds.ServerListener) {
				r := s.DefaultFilterChain.HTTP.HTTPFilters[0].RBAC
				if r == nil || r.Rules == nil || r.Rules.Action != lds.RBACAllow || len(r.Rules.Policies) != 1 {
					t.Fatalf("RBAC = %+v, want one ALLOW policy", r)
				}
				p := r.Rules.Policies[0]
				and := p.Permissions[0]
				if p.Name != "p" || and.Kind != lds.RuleAnd || len(and.Rules) != 2 ||
					and.Rules[0].Kind != lds.RuleURLPath || *and.Rules[0].String != (cds.StringMatcher{Kind: cds.MatchPrefix, Pattern: "/echo.Echo/"}) ||
					and.Rules[1].Kind != lds.RuleNot || and.Rules[1].Rules[0].Port != 8080 {
					t.Errorf("permissions[0] = %+v, want url_path prefix and not destination_port", and)
				}
				if got := p.Permissions[1]; got.Kind != lds.RuleDestinationIP || got.CIDR != netip.MustParsePrefix("10.0.0.0/8") {
					t.Errorf("permissions[1] = %+v, want destination_ip 10.0.0.0/8", got)
				}
				// gRFC A41: Host is :authority.
				if got := p.Principals[0]; got.Kind != lds.RuleHeader || got.Header.Name != ":authority" || got.Header.Kind != rds.HeaderMatchExact {
					t.Errorf("principals[0] = %+v, want header :authority", got)
				}
				if got := p.Principals[1]; got.Kind != lds.RuleRemoteIP || got.CIDR != netip.MustParsePrefix("192.168.0.0/16") {
					t.Errorf("principals[1] = %+v, want remote_ip", got)
				}
				if got := p.Principals[2]; got.Kind != lds.RuleAuthenticated || got.String.Pattern != "spiffe://cluster.local/ns/default/sa/client" {
					t.Errorf("principals[2] = %+v, want the client's SPIFFE ID", got)
				}
			},
		},
		{
			name: "RBAC without rules enforces nothing",
			msg: server(withHCM(chain("", nil), serverHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{filter("rbac", &rbacv3.RBAC{}), routerFilter()}
			}))),
			check: func(t *testing.T, s *lds.ServerListener) {
				if r := s.DefaultFilterChain.HTTP.HTTPFilters[0].RBAC; r == nil || r.Rules != nil {
					t.Errorf("RBAC = %+v, want one without rules", r)
				}
			},
		},
		{
			// grpc-go lds rbac-with-invalid-regex.
			name: "grpc-go lds rbac-with-invalid-regex",
			msg: withPolicy(policy([]*rbacconfigv3.Permission{anyPermission()},
				headerPrincipal(&routev3.HeaderMatcher{Name: ":method", HeaderMatchSpecifier: &routev3.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &matcherv3.RegexMatcher{Regex: "["}}}))),
			wantErr: rbacAt + ".rules.policies[p].principals[0].header: invalid RE2 expression",
		},
		{
			name: "grpc-go lds rbac-with-invalid-destination-ip-matcher",
			msg: withPolicy(policy([]*rbacconfigv3.Permission{{Rule: &rbacconfigv3.Permission_DestinationIp{DestinationIp: cidr("not a correct address", 10)}}},
				anyPrincipal())),
			wantErr: rbacAt + `.rules.policies[p].permissions[0].destination_ip: invalid CIDR range "not a correct address/10"`,
		},
		{
			name: "RBAC CIDR longer than the address",
			msg: withPolicy(policy([]*rbacconfigv3.Permission{anyPermission()},
				&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_DirectRemoteIp{DirectRemoteIp: cidr("10.0.0.1", 33)}})),
			wantErr: rbacAt + `.rules.policies[p].principals[0].direct_remote_ip: invalid CIDR range "10.0.0.1/33"`,
		},
		{
			// C-core xds_http_filters_test (RBAC, condition) and grpc-go
			// httpfilter/rbac: CEL is not supported (gRFC A41).
			name:    "RBAC condition",
			msg:     withPolicy(withCEL(policy([]*rbacconfigv3.Permission{anyPermission()}, anyPrincipal()), "condition")),
			wantErr: rbacAt + ".rules.policies[p].condition: not supported",
		},
		{
			name:    "RBAC checked condition",
			msg:     withPolicy(withCEL(policy([]*rbacconfigv3.Permission{anyPermission()}, anyPrincipal()), "checked_condition")),
			wantErr: rbacAt + ".rules.policies[p].checked_condition: not supported",
		},
		{
			name: "RBAC header :scheme",
			msg: withPolicy(policy([]*rbacconfigv3.Permission{{Rule: &rbacconfigv3.Permission_Header{Header: exactHeader(":scheme", "https")}}},
				anyPrincipal())),
			wantErr: rbacAt + ".rules.policies[p].permissions[0].header.name: ':scheme' not allowed in header",
		},
		{
			// grpc-go lowercases the name before the check; C-core does
			// not. grpc-go is followed, so case cannot evade the rule.
			name:    "RBAC header grpc- prefix in any case",
			msg:     withPolicy(policy([]*rbacconfigv3.Permission{anyPermission()}, headerPrincipal(exactHeader("Grpc-Timeout", "1S")))),
			wantErr: rbacAt + ".rules.policies[p].principals[0].header.name: 'grpc-' prefixes not allowed in header",
		},
		{
			name:    "RBAC header without matcher",
			msg:     withPolicy(policy([]*rbacconfigv3.Permission{anyPermission()}, headerPrincipal(&routev3.HeaderMatcher{Name: "x"}))),
			wantErr: rbacAt + ".rules.policies[p].principals[0].header: invalid route header matcher specified",
		},
		{
			name:    "RBAC permission without rule",
			msg:     withPolicy(policy([]*rbacconfigv3.Permission{{}}, anyPrincipal())),
			wantErr: rbacAt + ".rules.policies[p].permissions[0]: no rule set",
		},
		{
			name: "RBAC empty not_id",
			msg: withPolicy(policy([]*rbacconfigv3.Permission{anyPermission()},
				&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_NotId{NotId: &rbacconfigv3.Principal{}}})),
			wantErr: rbacAt + ".rules.policies[p].principals[0].not_id: no identifier set",
		},
		{
			name:    "RBAC url_path without path",
			msg:     withPolicy(policy([]*rbacconfigv3.Permission{{Rule: &rbacconfigv3.Permission_UrlPath{UrlPath: &matcherv3.PathMatcher{}}}}, anyPrincipal())),
			wantErr: rbacAt + ".rules.policies[p].permissions[0].url_path.path: field not present",
		},
		{
			name: "RBAC empty prefix in a string matcher",
			msg: withPolicy(policy([]*rbacconfigv3.Permission{anyPermission()},
				&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Authenticated_{Authenticated: &rbacconfigv3.Principal_Authenticated{PrincipalName: prefixString("")}}})),
			wantErr: rbacAt + ".rules.policies[p].principals[0].authenticated.principal_name: empty prefix, suffix or contains is not allowed",
		},
		{
			name: "RBAC unsupported permission",
			msg: withPolicy(policy([]*rbacconfigv3.Permission{{Rule: &rbacconfigv3.Permission_DestinationPortRange{}}},
				anyPrincipal())),
			wantErr: rbacAt + ".rules.policies[p].permissions[0]: unsupported permission DestinationPortRange",
		},
		{
			// gRFC A41: LOG is ignored as if the filter were absent, so
			// C-core does not look inside; grpc-go still rejects the
			// condition. C-core is followed.
			name: "RBAC LOG ignored entirely",
			msg: server(withHCM(chain("", nil), serverHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{rbacFilter("rbac", &rbacconfigv3.RBAC{
					Action:   rbacconfigv3.RBAC_LOG,
					Policies: map[string]*rbacconfigv3.Policy{"p": withCEL(&rbacconfigv3.Policy{}, "condition")},
				}), routerFilter()}
			}))),
			check: func(t *testing.T, s *lds.ServerListener) {
				if r := s.DefaultFilterChain.HTTP.HTTPFilters[0].RBAC; r == nil || r.Rules != nil {
					t.Errorf("RBAC = %+v, want one without rules", r)
				}
			},
		},
		{
			// grpc-go lds v3_with_optional_err_filter: a filter gRPC
			// implements is judged even when optional.
			name: "optional RBAC with a bad config",
			msg: server(withHCM(chain("", nil), serverHCM(func(h *hcmv3.HttpConnectionManager) {
				f := rbacFilter("rbac", &rbacconfigv3.RBAC{Policies: map[string]*rbacconfigv3.Policy{"p": policy([]*rbacconfigv3.Permission{{}})}})
				f.IsOptional = true
				h.HttpFilters = []*hcmv3.HttpFilter{f, routerFilter()}
			}))),
			wantErr: rbacAt + ".rules.policies[p].permissions[0]: no rule set",
		},
		{
			name: "RBAC in a TypedStruct",
			msg: server(withHCM(chain("", nil), serverHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{filter("rbac", &xdstypev3.TypedStruct{TypeUrl: rbacTypeURL}), routerFilter()}
			}))),
			wantErr: rbacAt + ": an RBAC config in a TypedStruct cannot be read",
		},
		{
			name: "malformed RBAC",
			msg: server(withHCM(chain("", nil), serverHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{{Name: "rbac", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: rawAny(rbacTypeURL)}}, routerFilter()}
			}))),
			wantErr: rbacAt + ": cannot parse RBAC",
		},
		{
			// A client skips RBAC config it does not run, unparsed.
			name: "malformed optional RBAC on a client is skipped",
			msg: rdsListener(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{{Name: "rbac", IsOptional: true, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: rawAny(rbacTypeURL)}}, routerFilter()}
			}),
			wantDeps: nil,
		},
	}
}

// istioCases are the server Listeners istiod's grpcgen (pilot/pkg/networking/grpcgen/lds.go,
// buildInboundListeners) sends a proxyless gRPC server.
func istioCases() []serverCase {
	const name = "xds.istio.io/grpc/lds/inbound/0.0.0.0:50051"
	rbac := func(action rbacconfigv3.RBAC_Action) *rbacconfigv3.RBAC {
		return &rbacconfigv3.RBAC{Action: action, Policies: map[string]*rbacconfigv3.Policy{
			"default-allow-echo-0": policy(
				[]*rbacconfigv3.Permission{{Rule: &rbacconfigv3.Permission_AndRules{AndRules: &rbacconfigv3.Permission_Set{Rules: []*rbacconfigv3.Permission{
					{Rule: &rbacconfigv3.Permission_OrRules{OrRules: &rbacconfigv3.Permission_Set{Rules: []*rbacconfigv3.Permission{
						{Rule: &rbacconfigv3.Permission_UrlPath{UrlPath: &matcherv3.PathMatcher{Rule: &matcherv3.PathMatcher_Path{Path: prefixString("/proto.EchoTestService/")}}}},
					}}}},
				}}}}},
				&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_AndIds{AndIds: &rbacconfigv3.Principal_Set{Ids: []*rbacconfigv3.Principal{
					{Identifier: &rbacconfigv3.Principal_OrIds{OrIds: &rbacconfigv3.Principal_Set{Ids: []*rbacconfigv3.Principal{
						{Identifier: &rbacconfigv3.Principal_Authenticated_{Authenticated: &rbacconfigv3.Principal_Authenticated{
							PrincipalName: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "spiffe://cluster.local/ns/echo/sa/client"}},
						}}},
					}}}},
				}}}},
			),
		}}
	}
	inbound := func(suffix string, tls bool, newFields bool) *listenerv3.FilterChain {
		c := &listenerv3.FilterChain{Name: "inbound-" + suffix}
		c.Filters = []*listenerv3.Filter{{Name: "inbound-hcm" + suffix, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(serverHCM(func(h *hcmv3.HttpConnectionManager) {
			h.HttpFilters = []*hcmv3.HttpFilter{
				rbacFilter("envoy.filters.http.rbac.DENY", rbac(rbacconfigv3.RBAC_DENY)),
				rbacFilter("envoy.filters.http.rbac", rbac(rbacconfigv3.RBAC_ALLOW)),
				{Name: "envoy.filters.http.router", ConfigType: routerFilter().ConfigType},
			}
		}))}}}
		if tls {
			c = withTLS(c, istioTLS(newFields))
		}
		return c
	}
	listener := func(c *listenerv3.FilterChain) *listenerv3.Listener {
		return &listenerv3.Listener{Name: name, Address: socketAddress("0.0.0.0", 50051), FilterChains: []*listenerv3.FilterChain{c}}
	}
	return []serverCase{
		{
			name: "istiod inbound mTLS",
			msg:  listener(inbound("mtls", true, false)),
			check: func(t *testing.T, s *lds.ServerListener) {
				c := s.FilterChains[0]
				if c.TLS == nil || c.TLS.IdentityCerts.InstanceName != "default" || c.TLS.RootCerts == nil ||
					*c.TLS.RootCerts != (cds.CertProviderInstance{InstanceName: "default", CertificateName: "ROOTCA"}) || !c.TLS.RequireClientCertificate {
					t.Errorf("TLS = %+v, want mTLS from the default provider", c.TLS)
				}
				fs := c.HTTP.HTTPFilters
				if len(fs) != 3 || fs[0].RBAC.Rules.Action != lds.RBACDeny || fs[1].RBAC.Rules.Action != lds.RBACAllow || fs[2].RBAC != nil {
					t.Errorf("HTTPFilters = %+v, want RBAC DENY, RBAC ALLOW, router", fs)
				}
				if err := c.HTTP.RouteConfig.CheckServerUse(); err != nil {
					t.Errorf("inline routes CheckServerUse() = %v, want nil", err)
				}
				local, remote := netip.MustParseAddrPort("10.0.0.7:50051"), netip.MustParseAddrPort("10.0.0.9:41234")
				if got := s.FilterChainFor(local, remote); got != &s.FilterChains[0] {
					t.Errorf("FilterChainFor = %+v, want the one chain", got)
				}
			},
		},
		{
			name: "istiod inbound mTLS with current and deprecated fields",
			msg:  listener(inbound("mtls", true, true)),
		},
		{
			name: "istiod inbound plaintext",
			msg:  listener(inbound("plaintext", false, false)),
		},
		{
			name:    "istiod inbound mTLS without the default provider",
			msg:     listener(inbound("mtls", true, false)),
			opts:    &registry.DecodeOptions{CertificateProviders: providers("other")},
			wantErr: `filter_chains[0].transport_socket.typed_config.common_tls_context.tls_certificate_certificate_provider_instance.instance_name: unrecognized certificate provider instance name "default"`,
		},
	}
}

// istioTLS is grpcgen's buildCommonTLSContext(nil) with
// RequireClientCertificate: the deprecated provider fields, and with
// newFields the current ones too, as newer istiod sends both.
func istioTLS(newFields bool) *tlsv3.DownstreamTlsContext {
	combined := &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
		ValidationContextCertificateProviderInstance: legacyInstance("default", "ROOTCA"),
		DefaultValidationContext:                     &tlsv3.CertificateValidationContext{},
	}
	common := &tlsv3.CommonTlsContext{
		TlsCertificateCertificateProviderInstance: legacyInstance("default", "default"),
		ValidationContextType:                     &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: combined},
	}
	if newFields {
		common.TlsCertificateProviderInstance = pluginInstance("default", "default")
		combined.DefaultValidationContext.CaCertificateProviderInstance = pluginInstance("default", "ROOTCA")
	}
	return &tlsv3.DownstreamTlsContext{CommonTlsContext: common, RequireClientCertificate: wrapperspb.Bool(true)}
}

// withCEL sets p's CEL field (condition or checked_condition) to an empty
// expression, whose message type this module does not import.
func withCEL(p *rbacconfigv3.Policy, field string) *rbacconfigv3.Policy {
	m := p.ProtoReflect()
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(field))
	m.Set(fd, m.NewField(fd))
	return p
}
