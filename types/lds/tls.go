package lds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/internal/certprovider"
)

const (
	// tlsTransportSocket is the one transport socket gRPC implements.
	tlsTransportSocket   = "envoy.transport_sockets.tls"
	downstreamTLSMessage = "envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext"
)

// DownstreamTLS is the TLS configuration of a server's filter chain
// (gRFC A29): certificates come from certificate provider instances of
// the bootstrap.
type DownstreamTLS struct {
	// IdentityCerts names the provider of the server's certificate and
	// key.
	IdentityCerts cds.CertProviderInstance
	// RootCerts names the provider of the CA certificates that validate
	// client certificates, or is nil when the server asks for none (TLS
	// rather than mutual TLS).
	RootCerts *cds.CertProviderInstance
	// RequireClientCertificate is require_client_certificate: a
	// connection without a valid client certificate is rejected.
	RequireClientCertificate bool

	// identityField and rootField are the paths of the instance names in
	// the chain, for the check against the bootstrap.
	identityField, rootField string
}

// mode names the chain's transport security for String: plaintext, TLS or
// mTLS.
func (t *DownstreamTLS) mode() string {
	switch {
	case t == nil:
		return "plaintext"
	case t.RootCerts == nil:
		return "TLS"
	case t.RequireClientCertificate:
		return "mTLS"
	}
	return "TLS, client certificates requested"
}

// checkProviders reports instance names the bootstrap does not define.
func (t *DownstreamTLS) checkProviders(at string, opts registry.DecodeOptions, errs *registry.FieldErrors) {
	certprovider.Check(opts, at+"."+t.identityField, t.IdentityCerts.InstanceName, errs)
	if t.RootCerts != nil {
		certprovider.Check(opts, at+"."+t.rootField, t.RootCerts.InstanceName, errs)
	}
}

// convertTLS reads a filter chain's transport socket, recording broken
// rules in p with paths relative to the chain. It returns nil when the
// socket holds no DownstreamTlsContext, and fails only when that does not
// parse. The rules are gRFC A29's for servers, as grpc-go and C-core
// apply them.
func convertTLS(ts *corev3.TransportSocket, p *problems) (*DownstreamTLS, error) {
	const at = "transport_socket"
	if ts.GetName() != tlsTransportSocket {
		// gRFC A29 and grpc-go; C-core goes by the config's type alone.
		p.addf(at+".name", "%q is not supported: must be %q", ts.GetName(), tlsTransportSocket)
	}
	tc := ts.GetTypedConfig()
	if tc == nil {
		p.add(at+".typed_config", "field not present")
		return nil, nil
	}
	if registry.TypeName(tc.GetTypeUrl()) != downstreamTLSMessage {
		p.addf(at+".typed_config.type_url", "unsupported transport socket type %q: must be %s", tc.GetTypeUrl(), downstreamTLSMessage)
		return nil, nil
	}
	var dtc tlsv3.DownstreamTlsContext
	if err := proto.Unmarshal(tc.GetValue(), &dtc); err != nil {
		return nil, &registry.FieldError{Field: "typed_config", Rule: "cannot parse DownstreamTlsContext: " + err.Error()}
	}
	const dat = at + ".typed_config"
	out := &DownstreamTLS{RequireClientCertificate: dtc.GetRequireClientCertificate().GetValue()}
	convertCommonTLS(dtc.GetCommonTlsContext(), dat+".common_tls_context", out, p)
	if out.RequireClientCertificate && out.RootCerts == nil {
		p.add(dat+".require_client_certificate", "client certificate required but no certificate provider instance specified for validation")
	}
	if dtc.GetRequireSni().GetValue() {
		p.add(dat+".require_sni", "field unsupported")
	}
	if dtc.GetOcspStaplePolicy() != tlsv3.DownstreamTlsContext_LENIENT_STAPLING {
		p.add(dat+".ocsp_staple_policy", "value must be LENIENT_STAPLING")
	}
	return out, nil
}

// convertCommonTLS reads the server's certificates: the identity from
// tls_certificate_provider_instance (or its deprecated predecessor), the
// CA, when client certificates are validated, from a validation context.
func convertCommonTLS(common *tlsv3.CommonTlsContext, at string, out *DownstreamTLS, p *problems) {
	//lint:ignore SA1019 control planes (istiod) still send the deprecated field and gRPC honours it
	legacyIdentity := common.GetTlsCertificateCertificateProviderInstance()
	switch pi := common.GetTlsCertificateProviderInstance(); {
	case pi != nil:
		out.IdentityCerts = cds.CertProviderInstance{InstanceName: pi.GetInstanceName(), CertificateName: pi.GetCertificateName()}
		out.identityField = at + ".tls_certificate_provider_instance.instance_name"
	case legacyIdentity != nil:
		out.IdentityCerts = cds.CertProviderInstance{InstanceName: legacyIdentity.GetInstanceName(), CertificateName: legacyIdentity.GetCertificateName()}
		out.identityField = at + ".tls_certificate_certificate_provider_instance.instance_name"
	default:
		if len(common.GetTlsCertificates()) > 0 {
			p.add(at+".tls_certificates", "not supported: use tls_certificate_provider_instance")
		}
		if len(common.GetTlsCertificateSdsSecretConfigs()) > 0 {
			p.add(at+".tls_certificate_sds_secret_configs", "not supported: use tls_certificate_provider_instance")
		}
	}
	if out.IdentityCerts.InstanceName == "" {
		p.add(at, "TLS configuration provided but no tls_certificate_provider_instance found")
	}

	var root *tlsv3.CertificateProviderPluginInstance
	var legacyRoot *tlsv3.CommonTlsContext_CertificateProviderInstance
	vcAt, haveVC := "", true
	switch v := common.GetValidationContextType().(type) {
	case *tlsv3.CommonTlsContext_ValidationContext:
		vcAt = at + ".validation_context"
		root = validationContext(v.ValidationContext, vcAt, p)
	case *tlsv3.CommonTlsContext_CombinedValidationContext:
		vcAt = at + ".combined_validation_context"
		if def := v.CombinedValidationContext.GetDefaultValidationContext(); def != nil {
			root = validationContext(def, vcAt+".default_validation_context", p)
		}
		//lint:ignore SA1019 control planes (istiod) still send the deprecated field and gRPC honours it
		legacyRoot = v.CombinedValidationContext.GetValidationContextCertificateProviderInstance()
		if root == nil && legacyRoot != nil {
			out.rootField = vcAt + ".validation_context_certificate_provider_instance.instance_name"
		}
	case *tlsv3.CommonTlsContext_ValidationContextCertificateProviderInstance:
		// Deprecated; grpc-go honours it, C-core ignores it.
		vcAt = at + ".validation_context_certificate_provider_instance"
		//lint:ignore SA1019 grpc-go still honours the deprecated way to name the CA provider
		legacyRoot = v.ValidationContextCertificateProviderInstance
		out.rootField = vcAt + ".instance_name"
	case *tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig:
		p.add(at+".validation_context_sds_secret_config", "not supported: gRPC does not implement SDS")
		haveVC = false
	default:
		haveVC = false
	}
	switch {
	case root != nil:
		out.RootCerts = &cds.CertProviderInstance{InstanceName: root.GetInstanceName(), CertificateName: root.GetCertificateName()}
		out.rootField = vcAt + ".ca_certificate_provider_instance.instance_name"
		if vcAt == at+".combined_validation_context" {
			out.rootField = vcAt + ".default_validation_context.ca_certificate_provider_instance.instance_name"
		}
	case legacyRoot != nil:
		out.RootCerts = &cds.CertProviderInstance{InstanceName: legacyRoot.GetInstanceName(), CertificateName: legacyRoot.GetCertificateName()}
	case haveVC:
		// gRFC A29 and grpc-go: a validation context is there to check
		// client certificates, which takes a CA.
		p.add(vcAt, "no ca_certificate_provider_instance: validating client certificates needs a CA certificate provider")
	}
	if out.RootCerts != nil && out.RootCerts.InstanceName == "" {
		out.RootCerts = nil
	}

	if common.GetTlsParams() != nil {
		p.add(at+".tls_params", "not supported")
	}
	if common.GetCustomHandshaker() != nil {
		p.add(at+".custom_handshaker", "not supported")
	}
}

// validationContext records the unsupported fields of a server's
// CertificateValidationContext and returns its CA provider, if any.
func validationContext(vc *tlsv3.CertificateValidationContext, at string, p *problems) *tlsv3.CertificateProviderPluginInstance {
	//lint:ignore SA1019 match_subject_alt_names is the field gRPC reads
	if len(vc.GetMatchSubjectAltNames()) > 0 {
		p.add(at+".match_subject_alt_names", "not supported on servers")
	}
	if len(vc.GetVerifyCertificateSpki()) > 0 {
		p.add(at+".verify_certificate_spki", "not supported")
	}
	if len(vc.GetVerifyCertificateHash()) > 0 {
		p.add(at+".verify_certificate_hash", "not supported")
	}
	if vc.GetRequireSignedCertificateTimestamp().GetValue() {
		p.add(at+".require_signed_certificate_timestamp", "not supported")
	}
	if vc.GetCrl() != nil {
		p.add(at+".crl", "not supported")
	}
	if vc.GetCustomValidatorConfig() != nil {
		p.add(at+".custom_validator_config", "not supported")
	}
	if ca := vc.GetCaCertificateProviderInstance(); ca != nil {
		return ca
	}
	if vc.GetSystemRootCerts() != nil {
		// gRFC A82: system roots are for clients.
		p.add(at+".system_root_certs", "not supported on servers")
	}
	return nil
}
