//lint:file-ignore SA1019 control planes still send the deprecated provider fields, so tests build them

package cds_test

import (
	"strings"
	"testing"

	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
)

// TestCertificateProvidersInBootstrap checks gRFC A29's rule that a
// Cluster naming a certificate provider instance the bootstrap lacks is
// NACKed: C-core's CertificateProviderInstanceParse ("unrecognized
// certificate provider instance name", xds_cluster_resource_type_test's
// UnknownCertificateProviderInstance) and grpc-go's securityConfigValidator
// (cluster_resource_type.go). Without the bootstrap's names
// (DecodeOptions.CertificateProviders nil) nothing is checked.
func TestCertificateProvidersInBootstrap(t *testing.T) {
	inBootstrap := func(name string) bool { return name == "id" || name == "ca" }
	provider := func(name string) *tlspb.CertificateProviderPluginInstance {
		return &tlspb.CertificateProviderPluginInstance{InstanceName: name}
	}
	legacy := func(name string) *tlspb.CommonTlsContext_CertificateProviderInstance {
		return &tlspb.CommonTlsContext_CertificateProviderInstance{InstanceName: name}
	}
	validation := func(ca string) *tlspb.CommonTlsContext {
		return &tlspb.CommonTlsContext{ValidationContextType: &tlspb.CommonTlsContext_ValidationContext{
			ValidationContext: &tlspb.CertificateValidationContext{CaCertificateProviderInstance: provider(ca)},
		}}
	}
	const common = "transport_socket.typed_config.common_tls_context"
	for _, c := range []struct {
		name    string
		common  *tlspb.CommonTlsContext
		check   func(string) bool
		wantErr string
	}{
		{name: "known CA", common: validation("ca"), check: inBootstrap},
		{name: "known CA and identity", common: func() *tlspb.CommonTlsContext {
			c := validation("ca")
			c.TlsCertificateProviderInstance = provider("id")
			return c
		}(), check: inBootstrap},
		{name: "unknown CA not checked without a bootstrap", common: validation("other")},
		{name: "unknown CA", common: validation("other"), check: inBootstrap,
			wantErr: common + `.validation_context.ca_certificate_provider_instance.instance_name: unrecognized certificate provider instance name "other"`},
		{name: "unknown CA in an empty bootstrap", common: validation("ca"), check: func(string) bool { return false },
			wantErr: `unrecognized certificate provider instance name "ca"`},
		{name: "unknown identity", common: func() *tlspb.CommonTlsContext {
			c := validation("ca")
			c.TlsCertificateProviderInstance = provider("who")
			return c
		}(), check: inBootstrap,
			wantErr: common + `.tls_certificate_provider_instance.instance_name: unrecognized certificate provider instance name "who"`},
		{name: "unknown legacy identity and combined CA", common: &tlspb.CommonTlsContext{
			TlsCertificateCertificateProviderInstance: legacy("who"),
			ValidationContextType: &tlspb.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlspb.CommonTlsContext_CombinedCertificateValidationContext{
				DefaultValidationContext: &tlspb.CertificateValidationContext{CaCertificateProviderInstance: provider("nope")},
			}},
		}, check: inBootstrap,
			wantErr: common + `.combined_validation_context.default_validation_context.ca_certificate_provider_instance.instance_name: unrecognized certificate provider instance name "nope"|` +
				common + `.tls_certificate_certificate_provider_instance.instance_name: unrecognized certificate provider instance name "who"`},
		{name: "unknown legacy CA", common: &tlspb.CommonTlsContext{
			ValidationContextType: &tlspb.CommonTlsContext_CombinedValidationContext{CombinedValidationContext: &tlspb.CommonTlsContext_CombinedCertificateValidationContext{
				ValidationContextCertificateProviderInstance: legacy("nope"),
			}},
		}, check: inBootstrap,
			wantErr: common + `.combined_validation_context.validation_context_certificate_provider_instance.instance_name: unrecognized certificate provider instance name "nope"`},
		{name: "system roots need no provider", common: &tlspb.CommonTlsContext{ValidationContextType: &tlspb.CommonTlsContext_ValidationContext{
			ValidationContext: &tlspb.CertificateValidationContext{SystemRootCerts: &tlspb.CertificateValidationContext_SystemRootCerts{}},
		}}, check: func(string) bool { return false }},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := withTLS(edsCluster("backend"), c.common)
			raw := mustAny(m).GetValue()
			_, err := cds.Type.Decode(raw, registry.DecodeOptions{CertificateProviders: c.check})
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Decode = valid, want an error containing %q", c.wantErr)
			}
			for _, part := range strings.Split(c.wantErr, "|") {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("Decode error = %q, want it to contain %q", err, part)
				}
			}
		})
	}
}
