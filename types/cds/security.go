package cds

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/xdsengine/xdsengine/registry"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/types/internal/certprovider"
)

const upstreamTLSContextTypeName = "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"

// UpstreamTLS is the TLS configuration of a Cluster's transport socket
// (gRFC A29). Certificates come from certificate provider instances the
// client's bootstrap defines; the decoder checks that they exist when
// registry.DecodeOptions.CertificateProviders says which do.
type UpstreamTLS struct {
	// RootCerts names the provider of the CA certificates, unless
	// UseSystemRootCerts is set.
	RootCerts CertProviderInstance
	// UseSystemRootCerts is validation_context.system_root_certs (gRFC A82).
	UseSystemRootCerts bool
	// IdentityCerts names the provider of the client certificate, or is
	// nil when the client presents none.
	IdentityCerts *CertProviderInstance
	// SubjectAltNameMatchers are match_subject_alt_names; the server's
	// certificate must match one of them, or any when empty.
	SubjectAltNameMatchers []StringMatcher
}

// CertProviderInstance refers to a certificate provider instance of the
// bootstrap.
type CertProviderInstance struct {
	InstanceName    string
	CertificateName string
}

// MatchKind says how a StringMatcher compares.
type MatchKind int

// String match kinds.
const (
	MatchExact MatchKind = iota + 1
	MatchPrefix
	MatchSuffix
	MatchContains
	// MatchSafeRegex matches the whole string against an RE2 regular
	// expression.
	MatchSafeRegex
)

// StringMatcher is a validated envoy.type.matcher.v3.StringMatcher.
type StringMatcher struct {
	Kind    MatchKind
	Pattern string
	// IgnoreCase is never set with MatchSafeRegex.
	IgnoreCase bool
}

// upstreamTLS applies gRFC A29 as C-core's UpstreamTlsContextParse and
// CommonTlsContextParse do, plus grpc-go's refusal of
// transport_socket_matches, which would otherwise be silently ignored.
// Certificate provider instances must be in the bootstrap, when opts
// says which are.
func upstreamTLS(pb *clusterpb.Cluster, opts registry.DecodeOptions, errs *registry.FieldErrors) *UpstreamTLS {
	if len(pb.GetTransportSocketMatches()) > 0 {
		errs.Add("transport_socket_matches", "not supported")
	}
	ts := pb.GetTransportSocket()
	if ts == nil {
		return nil
	}
	const at = "transport_socket.typed_config"
	tc := ts.GetTypedConfig()
	if tc == nil {
		errs.Add(at, "field not present")
		return nil
	}
	if registry.TypeName(tc.GetTypeUrl()) != upstreamTLSContextTypeName {
		errs.Addf(at+".type_url", "unsupported transport socket type %q; must be %s", tc.GetTypeUrl(), upstreamTLSContextTypeName)
		return nil
	}
	var utc tlspb.UpstreamTlsContext
	if err := proto.Unmarshal(tc.GetValue(), &utc); err != nil {
		errs.Addf(at, "cannot unmarshal %s: %v", upstreamTLSContextTypeName, err)
		return nil
	}
	out := &UpstreamTLS{}
	common := utc.GetCommonTlsContext()
	const cat = at + ".common_tls_context"
	if common == nil {
		errs.Add(cat, "no CA certs configured")
		return out
	}
	haveCA := false
	// rootField is the path of the CA provider's instance name.
	var rootField string
	switch {
	case common.GetCombinedValidationContext() != nil:
		combined := common.GetCombinedValidationContext()
		const at = cat + ".combined_validation_context"
		if def := combined.GetDefaultValidationContext(); def != nil {
			haveCA = validationContext(def, at+".default_validation_context", out, errs)
			rootField = at + ".default_validation_context.ca_certificate_provider_instance.instance_name"
		}
		// The deprecated way to name the CA provider, still honoured when
		// the default validation context names none.
		if !haveCA || out.UseSystemRootCerts {
			//lint:ignore SA1019 C-core still honours this deprecated way to name the CA provider.
			if pi := combined.GetValidationContextCertificateProviderInstance(); pi != nil {
				out.RootCerts = CertProviderInstance{InstanceName: pi.GetInstanceName(), CertificateName: pi.GetCertificateName()}
				out.UseSystemRootCerts = false
				haveCA = true
				rootField = at + ".validation_context_certificate_provider_instance.instance_name"
			}
		}
	case common.GetValidationContext() != nil:
		haveCA = validationContext(common.GetValidationContext(), cat+".validation_context", out, errs)
		rootField = cat + ".validation_context.ca_certificate_provider_instance.instance_name"
	case common.GetValidationContextSdsSecretConfig() != nil:
		errs.Add(cat+".validation_context_sds_secret_config", "not supported")
	}
	if !haveCA {
		errs.Add(cat, "no CA certs configured")
	} else if !out.UseSystemRootCerts {
		certprovider.Check(opts, rootField, out.RootCerts.InstanceName, errs)
	}

	//lint:ignore SA1019 C-core still honours this deprecated way to name the identity provider.
	legacyIdentity := common.GetTlsCertificateCertificateProviderInstance()
	switch {
	case common.GetTlsCertificateProviderInstance() != nil:
		pi := common.GetTlsCertificateProviderInstance()
		out.IdentityCerts = &CertProviderInstance{InstanceName: pi.GetInstanceName(), CertificateName: pi.GetCertificateName()}
		certprovider.Check(opts, cat+".tls_certificate_provider_instance.instance_name", pi.GetInstanceName(), errs)
	case legacyIdentity != nil:
		out.IdentityCerts = &CertProviderInstance{InstanceName: legacyIdentity.GetInstanceName(), CertificateName: legacyIdentity.GetCertificateName()}
		certprovider.Check(opts, cat+".tls_certificate_certificate_provider_instance.instance_name", legacyIdentity.GetInstanceName(), errs)
	default:
		if len(common.GetTlsCertificates()) > 0 {
			errs.Add(cat+".tls_certificates", "not supported")
		}
		if len(common.GetTlsCertificateSdsSecretConfigs()) > 0 {
			errs.Add(cat+".tls_certificate_sds_secret_configs", "not supported")
		}
	}
	if common.GetTlsParams() != nil {
		errs.Add(cat+".tls_params", "not supported")
	}
	if common.GetCustomHandshaker() != nil {
		errs.Add(cat+".custom_handshaker", "not supported")
	}
	return out
}

// validationContext reads a CertificateValidationContext into out and
// reports whether it names CA certificates.
func validationContext(vc *tlspb.CertificateValidationContext, at string, out *UpstreamTLS, errs *registry.FieldErrors) bool {
	//lint:ignore SA1019 match_subject_alt_names is the field gRPC reads; the typed replacement is not supported by gRPC.
	for i, m := range vc.GetMatchSubjectAltNames() {
		if sm, ok := StringMatcherFromProto(m, at+".match_subject_alt_names["+strconv.Itoa(i)+"]", errs.Add); ok {
			out.SubjectAltNameMatchers = append(out.SubjectAltNameMatchers, sm)
		}
	}
	if len(vc.GetVerifyCertificateSpki()) > 0 {
		errs.Add(at+".verify_certificate_spki", "not supported")
	}
	if len(vc.GetVerifyCertificateHash()) > 0 {
		errs.Add(at+".verify_certificate_hash", "not supported")
	}
	if vc.GetRequireSignedCertificateTimestamp().GetValue() {
		errs.Add(at+".require_signed_certificate_timestamp", "not supported")
	}
	if vc.GetCrl() != nil {
		errs.Add(at+".crl", "not supported")
	}
	if vc.GetCustomValidatorConfig() != nil {
		errs.Add(at+".custom_validator_config", "not supported")
	}
	if pi := vc.GetCaCertificateProviderInstance(); pi != nil {
		out.RootCerts = CertProviderInstance{InstanceName: pi.GetInstanceName(), CertificateName: pi.GetCertificateName()}
		return true
	}
	if vc.GetSystemRootCerts() != nil {
		out.UseSystemRootCerts = true
		return true
	}
	return false
}

// StringMatcherFromProto converts m with the rules of grpc-go's
// StringMatcherFromProto and C-core's StringMatcher::Create: exactly one
// supported pattern, prefix, suffix and contains non-empty, a regex that
// compiles and no ignore_case with it. It hands each rule m breaks to
// report, the field's path under at, and returns whether m is valid.
// report is a callback so that the Cluster's SAN matchers
// ([registry.FieldErrors.Add]) and package lds's RBAC matchers share one
// set of rules and messages.
func StringMatcherFromProto(m *matcherpb.StringMatcher, at string, report func(field, rule string)) (StringMatcher, bool) {
	sm := StringMatcher{IgnoreCase: m.GetIgnoreCase()}
	switch p := m.GetMatchPattern().(type) {
	case *matcherpb.StringMatcher_Exact:
		sm.Kind, sm.Pattern = MatchExact, p.Exact
	case *matcherpb.StringMatcher_Prefix:
		sm.Kind, sm.Pattern = MatchPrefix, p.Prefix
	case *matcherpb.StringMatcher_Suffix:
		sm.Kind, sm.Pattern = MatchSuffix, p.Suffix
	case *matcherpb.StringMatcher_Contains:
		sm.Kind, sm.Pattern = MatchContains, p.Contains
	case *matcherpb.StringMatcher_SafeRegex:
		sm.Kind, sm.Pattern = MatchSafeRegex, p.SafeRegex.GetRegex()
		ok := true
		// Go's regexp is RE2, the dialect safe_regex specifies.
		if _, err := regexp.Compile(sm.Pattern); err != nil {
			report(at+".safe_regex.regex", fmt.Sprintf("invalid regular expression: %v", err))
			ok = false
		}
		if sm.IgnoreCase {
			report(at+".ignore_case", "not supported with safe_regex")
			ok = false
		}
		return sm, ok // an empty regex matches only the empty string, as exact "" does
	default:
		report(at, "invalid StringMatcher: must set exact, prefix, suffix, contains or safe_regex")
		return sm, false
	}
	if sm.Pattern == "" && sm.Kind != MatchExact {
		report(at, "empty prefix, suffix or contains is not allowed")
		return sm, false
	}
	return sm, true
}
