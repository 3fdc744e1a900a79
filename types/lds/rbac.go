package lds

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// RBAC is the config of an RBAC HTTP filter of a server (gRFC A41).
type RBAC struct {
	// Rules is nil when the filter enforces nothing: rules is absent, or
	// its action is LOG, which gRPC ignores as if the filter were not
	// there (gRFC A41).
	Rules *RBACRules

	problems problems
}

// RBACAction is what a matching policy does.
type RBACAction int

const (
	// RBACAllow lets through the RPCs a policy matches and denies the
	// rest.
	RBACAllow RBACAction = iota
	// RBACDeny denies the RPCs a policy matches.
	RBACDeny
)

// String returns the proto's name for a.
func (a RBACAction) String() string {
	if a == RBACDeny {
		return "DENY"
	}
	return "ALLOW"
}

// RBACRules are RBAC.rules: an RPC matches when some policy matches it.
type RBACRules struct {
	Action RBACAction
	// Policies are sorted by name.
	Policies []RBACPolicy
}

// RBACPolicy matches an RPC when one of its permissions and one of its
// principals match it.
type RBACPolicy struct {
	Name        string
	Permissions []RBACRule
	Principals  []RBACRule
}

// RBACRuleKind says what an [RBACRule] tests.
type RBACRuleKind int

// The kinds of permissions (what is done) and principals (who does it).
const (
	RuleAny RBACRuleKind = iota
	// RuleAnd and RuleOr combine Rules; RuleNot negates its one rule.
	RuleAnd
	RuleOr
	RuleNot
	// RuleHeader matches a request header (Header).
	RuleHeader
	// RuleURLPath matches the RPC's ":path", "/service/method" (String).
	RuleURLPath
	// RuleDestinationIP matches the server's local address (CIDR).
	RuleDestinationIP
	// RuleDestinationPort matches the server's local port (Port).
	RuleDestinationPort
	// RuleMetadata matches Envoy's dynamic metadata, which gRPC does not
	// have: it never matches, unless inverted (Invert), then always.
	RuleMetadata
	// RuleRequestedServerName matches the SNI, which gRPC takes as ""
	// (String).
	RuleRequestedServerName
	// RuleAuthenticated matches a peer that authenticated with TLS, and
	// when String is set, whose certificate names a matching principal.
	RuleAuthenticated
	// RuleRemoteIP matches the peer's address (CIDR): source_ip,
	// direct_remote_ip and remote_ip all mean that in gRPC (gRFC A41).
	RuleRemoteIP
)

var ruleKindNames = [...]string{"any", "and", "or", "not", "header", "url_path", "destination_ip",
	"destination_port", "metadata", "requested_server_name", "authenticated", "remote_ip"}

// String returns the kind's name.
func (k RBACRuleKind) String() string {
	if k < 0 || int(k) >= len(ruleKindNames) {
		return fmt.Sprintf("RBACRuleKind(%d)", int(k))
	}
	return ruleKindNames[k]
}

// RBACRule is one permission or principal of a policy; Kind says which of
// the other fields it uses.
type RBACRule struct {
	Kind   RBACRuleKind
	Rules  []RBACRule
	Header rds.HeaderMatcher
	String *cds.StringMatcher
	CIDR   netip.Prefix
	Port   uint32
	Invert bool
}

// convertRBACFilter reads an RBAC filter's config. The rules gRPC applies
// to it (gRFC A41, as grpc-go parses the config and C-core builds the
// policy) are recorded as problems; it fails only for bytes that do not
// parse.
func convertRBACFilter(a *anypb.Any) (*RBAC, error) {
	out := &RBAC{}
	if registry.TypeName(a.GetTypeUrl()) != rbacMessage {
		// A TypedStruct: its JSON is not the message gRPC needs.
		out.problems.add("", "an RBAC config in a TypedStruct cannot be read: gRPC needs the RBAC message")
		return out, nil
	}
	m := new(rbacv3.RBAC)
	if err := proto.Unmarshal(a.GetValue(), m); err != nil {
		return nil, &registry.FieldError{Rule: "cannot parse RBAC: " + err.Error()}
	}
	rules := m.GetRules()
	// gRFC A41: a LOG policy is ignored as if the filter were absent, so
	// its contents are not judged (C-core; grpc-go still checks them).
	if rules == nil || rules.GetAction() == rbacconfigv3.RBAC_LOG {
		return out, nil
	}
	out.Rules = &RBACRules{}
	switch rules.GetAction() {
	case rbacconfigv3.RBAC_ALLOW:
		out.Rules.Action = RBACAllow
	case rbacconfigv3.RBAC_DENY:
		out.Rules.Action = RBACDeny
	default:
		out.problems.addf("rules.action", "unsupported action %d", int32(rules.GetAction()))
	}
	names := make([]string, 0, len(rules.GetPolicies()))
	for name := range rules.GetPolicies() {
		names = append(names, name)
	}
	slices.Sort(names)
	out.Rules.Policies = make([]RBACPolicy, 0, len(names))
	for _, name := range names {
		pol := rules.GetPolicies()[name]
		at := "rules.policies[" + name + "]"
		rp := RBACPolicy{Name: name}
		for j, perm := range pol.GetPermissions() {
			rp.Permissions = append(rp.Permissions, convertPermission(perm, fmt.Sprintf("%s.permissions[%d]", at, j), &out.problems))
		}
		for j, prin := range pol.GetPrincipals() {
			rp.Principals = append(rp.Principals, convertPrincipal(prin, fmt.Sprintf("%s.principals[%d]", at, j), &out.problems))
		}
		// gRFC A41: gRPC does not evaluate CEL.
		if pol.GetCondition() != nil {
			out.problems.add(at+".condition", "not supported")
		}
		if pol.GetCheckedCondition() != nil {
			out.problems.add(at+".checked_condition", "not supported")
		}
		out.Rules.Policies = append(out.Rules.Policies, rp)
	}
	return out, nil
}

func convertPermission(pm *rbacconfigv3.Permission, at string, p *problems) RBACRule {
	set := func(kind RBACRuleKind, field string, rules []*rbacconfigv3.Permission) RBACRule {
		r := RBACRule{Kind: kind, Rules: make([]RBACRule, len(rules))}
		for i, sub := range rules {
			r.Rules[i] = convertPermission(sub, fmt.Sprintf("%s.%s.rules[%d]", at, field, i), p)
		}
		return r
	}
	switch r := pm.GetRule().(type) {
	case *rbacconfigv3.Permission_AndRules:
		return set(RuleAnd, "and_rules", r.AndRules.GetRules())
	case *rbacconfigv3.Permission_OrRules:
		return set(RuleOr, "or_rules", r.OrRules.GetRules())
	case *rbacconfigv3.Permission_NotRule:
		return RBACRule{Kind: RuleNot, Rules: []RBACRule{convertPermission(r.NotRule, at+".not_rule", p)}}
	case *rbacconfigv3.Permission_Any:
		return RBACRule{Kind: RuleAny}
	case *rbacconfigv3.Permission_Header:
		return RBACRule{Kind: RuleHeader, Header: rbacHeader(r.Header, at+".header", p)}
	case *rbacconfigv3.Permission_UrlPath:
		return RBACRule{Kind: RuleURLPath, String: pathMatcher(r.UrlPath.GetPath(), at+".url_path.path", p)}
	case *rbacconfigv3.Permission_DestinationIp:
		return RBACRule{Kind: RuleDestinationIP, CIDR: rbacCIDR(r.DestinationIp, at+".destination_ip", p)}
	case *rbacconfigv3.Permission_DestinationPort:
		return RBACRule{Kind: RuleDestinationPort, Port: r.DestinationPort}
	case *rbacconfigv3.Permission_Metadata:
		//lint:ignore SA1019 gRFC A41 gives metadata a fixed meaning, so gRPC reads it
		return RBACRule{Kind: RuleMetadata, Invert: r.Metadata.GetInvert()}
	case *rbacconfigv3.Permission_RequestedServerName:
		return RBACRule{Kind: RuleRequestedServerName, String: stringMatcher(r.RequestedServerName, at+".requested_server_name", p)}
	case nil:
		p.add(at, "no rule set")
	default:
		p.addf(at, "unsupported permission %s", ruleName(r))
	}
	return RBACRule{}
}

func convertPrincipal(pr *rbacconfigv3.Principal, at string, p *problems) RBACRule {
	set := func(kind RBACRuleKind, field string, ids []*rbacconfigv3.Principal) RBACRule {
		r := RBACRule{Kind: kind, Rules: make([]RBACRule, len(ids))}
		for i, sub := range ids {
			r.Rules[i] = convertPrincipal(sub, fmt.Sprintf("%s.%s.ids[%d]", at, field, i), p)
		}
		return r
	}
	switch r := pr.GetIdentifier().(type) {
	case *rbacconfigv3.Principal_AndIds:
		return set(RuleAnd, "and_ids", r.AndIds.GetIds())
	case *rbacconfigv3.Principal_OrIds:
		return set(RuleOr, "or_ids", r.OrIds.GetIds())
	case *rbacconfigv3.Principal_NotId:
		return RBACRule{Kind: RuleNot, Rules: []RBACRule{convertPrincipal(r.NotId, at+".not_id", p)}}
	case *rbacconfigv3.Principal_Any:
		return RBACRule{Kind: RuleAny}
	case *rbacconfigv3.Principal_Authenticated_:
		out := RBACRule{Kind: RuleAuthenticated}
		if name := r.Authenticated.GetPrincipalName(); name != nil {
			out.String = stringMatcher(name, at+".authenticated.principal_name", p)
		}
		return out
	case *rbacconfigv3.Principal_SourceIp:
		//lint:ignore SA1019 gRPC reads the deprecated source_ip as the peer's address (gRFC A41)
		return RBACRule{Kind: RuleRemoteIP, CIDR: rbacCIDR(r.SourceIp, at+".source_ip", p)}
	case *rbacconfigv3.Principal_DirectRemoteIp:
		return RBACRule{Kind: RuleRemoteIP, CIDR: rbacCIDR(r.DirectRemoteIp, at+".direct_remote_ip", p)}
	case *rbacconfigv3.Principal_RemoteIp:
		return RBACRule{Kind: RuleRemoteIP, CIDR: rbacCIDR(r.RemoteIp, at+".remote_ip", p)}
	case *rbacconfigv3.Principal_Header:
		return RBACRule{Kind: RuleHeader, Header: rbacHeader(r.Header, at+".header", p)}
	case *rbacconfigv3.Principal_UrlPath:
		return RBACRule{Kind: RuleURLPath, String: pathMatcher(r.UrlPath.GetPath(), at+".url_path.path", p)}
	case *rbacconfigv3.Principal_Metadata:
		//lint:ignore SA1019 gRFC A41 gives metadata a fixed meaning, so gRPC reads it
		return RBACRule{Kind: RuleMetadata, Invert: r.Metadata.GetInvert()}
	case nil:
		p.add(at, "no identifier set")
	default:
		p.addf(at, "unsupported principal %s", ruleName(r))
	}
	return RBACRule{}
}

// ruleName turns a oneof wrapper's Go type (*rbacv3.Permission_UriTemplate)
// into the field's name for an error (UriTemplate).
func ruleName(v any) string {
	t := fmt.Sprintf("%T", v)
	return t[strings.LastIndexByte(t, '_')+1:]
}
