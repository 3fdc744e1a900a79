package lds

import (
	"fmt"
	"net/netip"
	"regexp/syntax"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// rbacHeader converts an RBAC header matcher and applies gRFC A41: no
// ":scheme" and no "grpc-" header, names compared in lower case as
// grpc-go does (C-core compares them as sent). A "host" matcher means
// ":authority", which gRPC keeps it as.
func rbacHeader(h *routev3.HeaderMatcher, at string, p *problems) rds.HeaderMatcher {
	m := rds.HeaderMatcherFromProto(h)
	switch {
	case m.Name == ":scheme":
		p.add(at+".name", "':scheme' not allowed in header")
	case strings.HasPrefix(m.Name, "grpc-"):
		p.add(at+".name", "'grpc-' prefixes not allowed in header")
	case m.Name == "host":
		m.Name = ":authority"
	}
	switch m.Kind {
	case rds.HeaderMatchNone:
		p.add(at, "invalid route header matcher specified")
	case rds.HeaderMatchRegex:
		if err := checkRE2(m.Value); err != nil {
			p.addf(at, "invalid RE2 expression: %v", err)
		}
	case rds.HeaderMatchPrefix, rds.HeaderMatchSuffix, rds.HeaderMatchContains:
		if m.Value == "" {
			p.addf(at, "%s match must be non-empty", m.Kind)
		}
	case rds.HeaderMatchRange:
		if m.RangeStart > m.RangeEnd {
			p.addf(at+".range_match", "end %d is smaller than start %d", m.RangeEnd, m.RangeStart)
		}
	}
	return m
}

func pathMatcher(m *matcherv3.StringMatcher, at string, p *problems) *cds.StringMatcher {
	if m == nil {
		p.add(at, "field not present")
		return nil
	}
	return stringMatcher(m, at, p)
}

// stringMatcher converts an RBAC StringMatcher with the rules of a
// Cluster's SAN matchers. An invalid one is kept as converted: its
// problems reject the Listener.
func stringMatcher(m *matcherv3.StringMatcher, at string, p *problems) *cds.StringMatcher {
	sm, _ := cds.StringMatcherFromProto(m, at, p.add)
	return &sm
}

// rbacCIDR parses an RBAC prefix range as grpc-go does: an address
// followed by a length that fits it.
func rbacCIDR(r *corev3.CidrRange, at string, p *problems) netip.Prefix {
	text := fmt.Sprintf("%s/%d", r.GetAddressPrefix(), r.GetPrefixLen().GetValue())
	prefix, err := netip.ParsePrefix(text)
	if err != nil {
		p.addf(at, "invalid CIDR range %q", text)
		return netip.Prefix{}
	}
	return prefix.Masked()
}

// checkRE2 reports whether pattern is valid RE2, Go's regexp syntax.
func checkRE2(pattern string) error {
	_, err := syntax.Parse(pattern, syntax.Perl)
	return err
}
