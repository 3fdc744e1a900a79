//lint:file-ignore SA1019 control planes still send the deprecated provider fields, so tests build them

package lds_test

import (
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
)

// tlsAt is the DownstreamTlsContext's path in a default chain.
const tlsAt = "default_filter_chain.transport_socket.typed_config"

// tlsServer is a server whose default chain has transport socket ts.
func tlsServer(dtc *tlsv3.DownstreamTlsContext) *listenerv3.Listener {
	return server(withTLS(chain("", nil), dtc))
}

func checkTLS(want *lds.DownstreamTLS) func(t *testing.T, s *lds.ServerListener) {
	return func(t *testing.T, s *lds.ServerListener) {
		t.Helper()
		got := s.DefaultFilterChain.TLS
		if got == nil {
			t.Fatal("TLS = nil, want a DownstreamTLS")
		}
		if got.IdentityCerts != want.IdentityCerts || got.RequireClientCertificate != want.RequireClientCertificate ||
			(got.RootCerts == nil) != (want.RootCerts == nil) || got.RootCerts != nil && *got.RootCerts != *want.RootCerts {
			t.Errorf("TLS = %+v (root %v), want %+v (root %v)", got, got.RootCerts, want, want.RootCerts)
		}
	}
}

// tlsCases are gRFC A29's rules for a server's DownstreamTlsContext.
func tlsCases() []serverCase {
	noProviders := registry.DecodeOptions{}
	return []serverCase{
		{
			name:  "C-core DownstreamTlsContext",
			msg:   tlsServer(identityTLS("provider1")),
			check: checkTLS(&lds.DownstreamTLS{IdentityCerts: cds.CertProviderInstance{InstanceName: "provider1", CertificateName: "cert_name"}}),
		},
		{
			name: "C-core DownstreamTlsContextWithCaCertProviderInstance",
			msg: tlsServer(func() *tlsv3.DownstreamTlsContext {
				d := mtls("provider1", "provider1")
				d.RequireClientCertificate = nil
				return d
			}()),
			check: checkTLS(&lds.DownstreamTLS{
				IdentityCerts: cds.CertProviderInstance{InstanceName: "provider1", CertificateName: "cert_name"},
				RootCerts:     &cds.CertProviderInstance{InstanceName: "provider1", CertificateName: "ca_cert_name"},
			}),
		},
		{
			name: "C-core ClientCertificateRequired",
			msg:  tlsServer(mtls("provider1", "provider1")),
			check: checkTLS(&lds.DownstreamTLS{
				IdentityCerts:            cds.CertProviderInstance{InstanceName: "provider1", CertificateName: "cert_name"},
				RootCerts:                &cds.CertProviderInstance{InstanceName: "provider1", CertificateName: "ca_cert_name"},
				RequireClientCertificate: true,
			}),
		},
		{
			// Also grpc-go's listenerValidator (listener_resource_type.go).
			name:    "C-core UnknownCertificateProviderInstance",
			msg:     tlsServer(identityTLS("fake")),
			wantErr: tlsAt + `.common_tls_context.tls_certificate_provider_instance.instance_name: unrecognized certificate provider instance name "fake"`,
		},
		{
			name:    "unknown CA provider instance",
			msg:     tlsServer(mtls("provider1", "fake")),
			wantErr: tlsAt + `.common_tls_context.validation_context.ca_certificate_provider_instance.instance_name: unrecognized certificate provider instance name "fake"`,
		},
		{
			name: "unknown instance names unchecked without a bootstrap",
			msg:  tlsServer(mtls("fake", "fake")),
			opts: &noProviders,
		},
		{
			name:    "C-core UnknownTransportSocketType",
			msg:     server(withTLS(chain("", nil), &listenerv3.Listener{})),
			wantErr: "default_filter_chain.transport_socket.typed_config.type_url: unsupported transport socket type",
		},
		{
			name: "C-core UnparseableDownstreamTlsContext",
			msg: server(func() *listenerv3.FilterChain {
				c := chain("", nil)
				c.TransportSocket = tlsSocket(&tlsv3.DownstreamTlsContext{})
				c.TransportSocket.GetTypedConfig().Value = []byte{0x0a, 0xff}
				return c
			}()),
			wantErr: "default_filter_chain.transport_socket.typed_config: cannot parse DownstreamTlsContext",
		},
		{
			name:    "C-core MatchSubjectAltNames",
			msg:     tlsServer(matchSANs(mtls("provider1", "provider1"))),
			wantErr: tlsAt + ".common_tls_context.validation_context.match_subject_alt_names: not supported on servers",
		},
		{
			// Also grpc-go lds "missing CommonTlsContext" and fc
			// BadSecurityConfig/no_identity_certificate_provider.
			name:    "C-core NoTlsCertificateProvider",
			msg:     tlsServer(&tlsv3.DownstreamTlsContext{}),
			wantErr: tlsAt + ".common_tls_context: TLS configuration provided but no tls_certificate_provider_instance found",
		},
		{
			// Also grpc-go fc BadSecurityConfig/no root certificate
			// provider with require_client_cert.
			name: "C-core RequireClientCertWithoutCaCertProvider",
			msg: tlsServer(func() *tlsv3.DownstreamTlsContext {
				d := identityTLS("provider1")
				d.RequireClientCertificate = wrapperspb.Bool(true)
				return d
			}()),
			wantErr: tlsAt + ".require_client_certificate: client certificate required but no certificate provider instance specified for validation",
		},
		{
			// Also grpc-go fc BadSecurityConfig/require_sni and
			// unsupported-ocsp_staple_policy.
			name: "C-core UnsupportedFields",
			msg: tlsServer(func() *tlsv3.DownstreamTlsContext {
				d := identityTLS("provider1")
				d.RequireSni = wrapperspb.Bool(true)
				d.OcspStaplePolicy = tlsv3.DownstreamTlsContext_STRICT_STAPLING
				return d
			}()),
			wantErr: tlsAt + ".require_sni: field unsupported|" + tlsAt + ".ocsp_staple_policy: value must be LENIENT_STAPLING",
		},
		{
			// grpc-go lds "unexpected transport socket name": gRFC A29
			// and grpc-go; C-core does not look at the name.
			name: "grpc-go lds unexpected transport socket name",
			msg: server(func() *listenerv3.FilterChain {
				c := withTLS(chain("", nil), identityTLS("provider1"))
				c.TransportSocket.Name = "unsupported-transport-socket-name"
				return c
			}()),
			wantErr: `default_filter_chain.transport_socket.name: "unsupported-transport-socket-name" is not supported`,
		},
		{
			name:    "grpc-go lds unexpected transport socket typedConfig URL",
			msg:     server(withTLS(chain("", nil), &tlsv3.UpstreamTlsContext{})),
			wantErr: `transport_socket.typed_config.type_url: unsupported transport socket type "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"`,
		},
		{
			name: "grpc-go lds unsupported validation context in transport socket",
			msg: tlsServer(func() *tlsv3.DownstreamTlsContext {
				d := identityTLS("identityPluginInstance")
				d.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig{
					ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: "foo-sds-secret"},
				}
				return d
			}()),
			wantErr: tlsAt + ".common_tls_context.validation_context_sds_secret_config: not supported",
		},
		{
			name: "grpc-go lds happy case with no validation context using deprecated fields",
			msg: tlsServer(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
				TlsCertificateCertificateProviderInstance: legacyInstance("identityPluginInstance", "identityCertName"),
			}}),
			check: checkTLS(&lds.DownstreamTLS{IdentityCerts: cds.CertProviderInstance{InstanceName: "identityPluginInstance", CertificateName: "identityCertName"}}),
		},
		{
			name: "grpc-go lds happy case with validation context provider instance with deprecated fields",
			msg: tlsServer(&tlsv3.DownstreamTlsContext{
				RequireClientCertificate: wrapperspb.Bool(true),
				CommonTlsContext: &tlsv3.CommonTlsContext{
					TlsCertificateCertificateProviderInstance: legacyInstance("identityPluginInstance", "identityCertName"),
					ValidationContextType: &tlsv3.CommonTlsContext_ValidationContextCertificateProviderInstance{
						ValidationContextCertificateProviderInstance: legacyInstance("rootPluginInstance", "rootCertName"),
					},
				},
			}),
			check: checkTLS(&lds.DownstreamTLS{
				IdentityCerts:            cds.CertProviderInstance{InstanceName: "identityPluginInstance", CertificateName: "identityCertName"},
				RootCerts:                &cds.CertProviderInstance{InstanceName: "rootPluginInstance", CertificateName: "rootCertName"},
				RequireClientCertificate: true,
			}),
		},
		{
			name: "grpc-go lds happy case with validation context provider instance with new fields",
			msg: tlsServer(&tlsv3.DownstreamTlsContext{
				RequireClientCertificate: wrapperspb.Bool(true),
				CommonTlsContext: &tlsv3.CommonTlsContext{
					TlsCertificateProviderInstance: pluginInstance("defaultIdentityPluginInstance", "defaultIdentityCertName"),
					ValidationContextType: &tlsv3.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlsv3.CommonTlsContext_CombinedCertificateValidationContext{
						DefaultValidationContext: &tlsv3.CertificateValidationContext{
							CaCertificateProviderInstance: pluginInstance("defaultRootPluginInstance", "defaultRootCertName"),
							// Ignored when a CA provider is named.
							SystemRootCerts: &tlsv3.CertificateValidationContext_SystemRootCerts{},
						},
					}},
				},
			}),
			check: checkTLS(&lds.DownstreamTLS{
				IdentityCerts:            cds.CertProviderInstance{InstanceName: "defaultIdentityPluginInstance", CertificateName: "defaultIdentityCertName"},
				RootCerts:                &cds.CertProviderInstance{InstanceName: "defaultRootPluginInstance", CertificateName: "defaultRootCertName"},
				RequireClientCertificate: true,
			}),
		},
		{
			name: "grpc-go lds no identity and root certificate providers using new fields",
			msg: tlsServer(&tlsv3.DownstreamTlsContext{
				RequireClientCertificate: wrapperspb.Bool(true),
				CommonTlsContext: &tlsv3.CommonTlsContext{
					ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{}},
				},
			}),
			wantErr: tlsAt + ".common_tls_context: TLS configuration provided but no tls_certificate_provider_instance found|" +
				tlsAt + ".require_client_certificate: client certificate required",
		},
		{
			// gRFC A29 and grpc-go: a validation context is for client
			// certificates and needs a CA; C-core accepts one without.
			name: "validation context without a CA",
			msg: tlsServer(func() *tlsv3.DownstreamTlsContext {
				d := identityTLS("provider1")
				d.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{}}
				return d
			}()),
			wantErr: tlsAt + ".common_tls_context.validation_context: no ca_certificate_provider_instance",
		},
		{
			name: "grpc-go fc system root certificate field set on server",
			msg: tlsServer(func() *tlsv3.DownstreamTlsContext {
				d := identityTLS("provider1")
				d.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
					SystemRootCerts: &tlsv3.CertificateValidationContext_SystemRootCerts{},
				}}
				return d
			}()),
			wantErr: tlsAt + ".common_tls_context.validation_context.system_root_certs: not supported on servers",
		},
		{
			name: "unsupported certificate validation fields",
			msg: tlsServer(func() *tlsv3.DownstreamTlsContext {
				d := mtls("provider1", "provider1")
				vc := d.CommonTlsContext.GetValidationContext()
				vc.VerifyCertificateSpki = []string{"x"}
				vc.RequireSignedCertificateTimestamp = wrapperspb.Bool(true)
				d.CommonTlsContext.TlsParams = &tlsv3.TlsParameters{}
				return d
			}()),
			wantErr: tlsAt + ".common_tls_context.validation_context.verify_certificate_spki: not supported|" +
				tlsAt + ".common_tls_context.validation_context.require_signed_certificate_timestamp: not supported|" +
				tlsAt + ".common_tls_context.tls_params: not supported",
		},
		{
			name: "SDS identity",
			msg: tlsServer(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
				TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: "cert"}},
			}}),
			wantErr: tlsAt + ".common_tls_context.tls_certificate_sds_secret_configs: not supported",
		},
	}
}

func matchSANs(d *tlsv3.DownstreamTlsContext) *tlsv3.DownstreamTlsContext {
	//lint:ignore SA1019 match_subject_alt_names is the field gRPC reads
	d.CommonTlsContext.GetValidationContext().MatchSubjectAltNames = []*matcherv3.StringMatcher{{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "exact"}}}
	return d
}
