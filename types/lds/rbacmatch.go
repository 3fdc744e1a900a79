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

// stringMatcher converts a StringMatcher with the rules grpc-go's
// StringMatcherFromProto and C-core's StringMatcher::Create apply: one
// pattern, prefix, suffix and contains non-empty, a valid RE2 regex and no
// ignore_case with it.
func stringMatcher(m *matcherv3.StringMatcher, at string, p *problems) *cds.StringMatcher {
	sm := &cds.StringMatcher{IgnoreCase: m.GetIgnoreCase()}
	switch v := m.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		sm.Kind, sm.Pattern = cds.MatchExact, v.Exact
	case *matcherv3.StringMatcher_Prefix:
		sm.Kind, sm.Pattern = cds.MatchPrefix, v.Prefix
	case *matcherv3.StringMatcher_Suffix:
		sm.Kind, sm.Pattern = cds.MatchSuffix, v.Suffix
	case *matcherv3.StringMatcher_Contains:
		sm.Kind, sm.Pattern = cds.MatchContains, v.Contains
	case *matcherv3.StringMatcher_SafeRegex:
		sm.Kind, sm.Pattern = cds.MatchSafeRegex, v.SafeRegex.GetRegex()
		if err := checkRE2(sm.Pattern); err != nil {
			p.addf(at+".safe_regex.regex", "invalid RE2 expression: %v", err)
		}
		if sm.IgnoreCase {
			p.add(at+".ignore_case", "not supported with safe_regex")
		}
		return sm
	default:
		p.add(at, "invalid StringMatcher: must set exact, prefix, suffix, contains or safe_regex")
		return sm
	}
	if sm.Pattern == "" && sm.Kind != cds.MatchExact {
		p.add(at, "empty prefix, suffix or contains is not allowed")
	}
	return sm
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
