package rds

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/typedconfig"
)

// Message names compared with the part of an Any's type URL after the last
// '/'; what precedes it is an opaque host that servers may vary.
const (
	filterConfigMessage = "envoy.config.route.v3.FilterConfig"
	// rlsPluginMessage is the only cluster specifier plugin gRPC
	// implements: route lookup (RLS) as a cluster specifier.
	rlsPluginMessage = "grpc.lookup.v1.RouteLookupClusterSpecifier"
	// channelIDKey is the only filter_state hash key gRPC supports
	// (gRFC A42).
	channelIDKey = "io.grpc.channel_id"
)

func decode(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	m := new(routev3.RouteConfiguration)
	if err := proto.Unmarshal(raw, m); err != nil {
		return registry.DecodeResult{}, fmt.Errorf("cannot parse RouteConfiguration: %w", err)
	}
	rc, err := convert(m, opts.KeepRaw(raw))
	if err != nil {
		return registry.DecodeResult{Name: m.GetName()}, err
	}
	return registry.DecodeResult{Name: rc.Name, Resource: rc}, nil
}

// FromProto converts m, for instance a route_config carried inline in a
// Listener, to its decoded form. Like Type.Decoder it does not apply
// gRPC's rules: run Type.Validator for that. It fails only when m cannot
// be serialized or an embedded Any (a filter config wrapper) cannot be
// parsed. The result does not refer to m.
func FromProto(m *routev3.RouteConfiguration) (*RouteConfiguration, error) {
	// Deterministic, so that equal messages give Equal resources.
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("cannot serialize RouteConfiguration: %w", err)
	}
	return convert(m, raw)
}

// convert records what the message says; validate judges it. The only
// errors here are embedded messages that do not parse, since nothing can
// be recorded about them.
func convert(m *routev3.RouteConfiguration, raw []byte) (*RouteConfiguration, error) {
	rc := &RouteConfiguration{Name: m.GetName(), raw: raw}

	// Routes naming an optional plugin gRPC does not implement are
	// ignored, so the plugins are needed before the routes.
	var skipPlugins map[string]bool
	if n := len(m.GetClusterSpecifierPlugins()); n > 0 {
		rc.ClusterSpecifierPlugins = make([]ClusterSpecifierPlugin, 0, n)
	}
	for i, p := range m.GetClusterSpecifierPlugins() {
		ext := p.GetExtension()
		typeURL, err := typedconfig.TypeURL(ext.GetTypedConfig())
		if err != nil {
			return nil, registry.FieldWithin(fmt.Sprintf("cluster_specifier_plugins[%d].extension.typed_config", i), err)
		}
		plugin := ClusterSpecifierPlugin{Name: ext.GetName(), ConfigTypeURL: typeURL, Optional: p.GetIsOptional()}
		if plugin.Optional && !pluginSupported(typeURL) {
			if skipPlugins == nil {
				skipPlugins = make(map[string]bool)
			}
			skipPlugins[plugin.Name] = true
		}
		rc.ClusterSpecifierPlugins = append(rc.ClusterSpecifierPlugins, plugin)
	}

	rc.VirtualHosts = make([]VirtualHost, 0, len(m.GetVirtualHosts()))
	for i, vh := range m.GetVirtualHosts() {
		v, err := convertVirtualHost(vh, skipPlugins)
		if err != nil {
			return nil, registry.FieldWithin(fmt.Sprintf("virtual_hosts[%d]", i), err)
		}
		rc.VirtualHosts = append(rc.VirtualHosts, v)
	}
	return rc, nil
}

func convertVirtualHost(vh *routev3.VirtualHost, skipPlugins map[string]bool) (VirtualHost, error) {
	v := VirtualHost{
		Name:        vh.GetName(),
		Domains:     slices.Clone(vh.GetDomains()),
		RetryPolicy: convertRetryPolicy(vh.GetRetryPolicy()),
	}
	var err error
	if v.FilterOverrides, err = convertFilterOverrides(vh.GetTypedPerFilterConfig()); err != nil {
		return v, registry.FieldWithin("typed_per_filter_config", err)
	}
	v.Routes = make([]Route, 0, len(vh.GetRoutes()))
	for j, r := range vh.GetRoutes() {
		route, keep, err := convertRoute(r, skipPlugins)
		if err != nil {
			return v, registry.FieldWithin(fmt.Sprintf("routes[%d]", j), err)
		}
		if keep {
			route.index = j
			v.Routes = append(v.Routes, route)
		}
	}
	return v, nil
}

// convertRoute reports keep == false for a route gRPC ignores (gRFC A28):
// one that matches query parameters, which gRPC never sees, or whose
// cluster specifier gRPC does not support.
func convertRoute(r *routev3.Route, skipPlugins map[string]bool) (route Route, keep bool, err error) {
	match := r.GetMatch()
	if len(match.GetQueryParameters()) > 0 {
		return Route{}, false, nil
	}
	route = Route{Name: r.GetName(), Match: convertMatch(match)}

	switch a := r.GetAction().(type) {
	case *routev3.Route_Route:
		var ok bool
		route.Action, ok, err = convertRouteAction(a.Route, skipPlugins)
		if err != nil {
			return Route{}, false, registry.FieldWithin("route", err)
		}
		if !ok {
			return Route{}, false, nil
		}
	case *routev3.Route_NonForwardingAction:
		route.Action.Kind = ActionNonForwarding
	default:
		route.Action.Kind = ActionUnsupported
	}

	if route.FilterOverrides, err = convertFilterOverrides(r.GetTypedPerFilterConfig()); err != nil {
		return Route{}, false, registry.FieldWithin("typed_per_filter_config", err)
	}
	return route, true, nil
}

func convertMatch(m *routev3.RouteMatch) RouteMatch {
	var out RouteMatch
	switch p := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		out.Path = PathMatcher{Kind: PathMatchPrefix, Pattern: p.Prefix}
	case *routev3.RouteMatch_Path:
		out.Path = PathMatcher{Kind: PathMatchExact, Pattern: p.Path}
	case *routev3.RouteMatch_SafeRegex:
		out.Path = PathMatcher{Kind: PathMatchRegex, Pattern: p.SafeRegex.GetRegex()}
	}
	if cs := m.GetCaseSensitive(); cs != nil && !cs.GetValue() && out.Path.Kind != PathMatchRegex {
		out.Path.IgnoreCase = true
	}
	if n := len(m.GetHeaders()); n > 0 {
		out.Headers = make([]HeaderMatcher, n)
		for i, h := range m.GetHeaders() {
			out.Headers[i] = convertHeaderMatcher(h)
		}
	}
	// Without a default value there is no fraction to apply: gRPC has no
	// runtime to look runtime_key up in.
	if d := m.GetRuntimeFraction().GetDefaultValue(); d != nil {
		perMillion := fractionPerMillion(d)
		out.FractionPerMillion = &perMillion
	}
	return out
}

// fractionPerMillion scales a fraction to a million, saturating instead of
// overflowing: any numerator at or above its denominator means "always".
// An unknown denominator is taken as a million, as grpc-go does.
func fractionPerMillion(f *typev3.FractionalPercent) uint32 {
	n := uint64(f.GetNumerator())
	switch f.GetDenominator() {
	case typev3.FractionalPercent_HUNDRED:
		n *= 10000
	case typev3.FractionalPercent_TEN_THOUSAND:
		n *= 100
	}
	return uint32(min(n, 1_000_000))
}

// HeaderMatcherFromProto converts a header matcher, such as one of an
// RBAC policy, as routes' matchers are converted, without judging it:
// a matcher with no supported specifier has kind HeaderMatchNone.
func HeaderMatcherFromProto(h *routev3.HeaderMatcher) HeaderMatcher { return convertHeaderMatcher(h) }

func convertHeaderMatcher(h *routev3.HeaderMatcher) HeaderMatcher {
	out := HeaderMatcher{Name: strings.ToLower(h.GetName()), Invert: h.GetInvertMatch()}
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *routev3.HeaderMatcher_ExactMatch:
		//lint:ignore SA1019 servers still send the deprecated matchers and gRPC honours them
		out.Kind, out.Value = HeaderMatchExact, s.ExactMatch
	case *routev3.HeaderMatcher_PrefixMatch:
		//lint:ignore SA1019 servers still send the deprecated matchers and gRPC honours them
		out.Kind, out.Value = HeaderMatchPrefix, s.PrefixMatch
	case *routev3.HeaderMatcher_SuffixMatch:
		//lint:ignore SA1019 servers still send the deprecated matchers and gRPC honours them
		out.Kind, out.Value = HeaderMatchSuffix, s.SuffixMatch
	case *routev3.HeaderMatcher_ContainsMatch:
		//lint:ignore SA1019 servers still send the deprecated matchers and gRPC honours them
		out.Kind, out.Value = HeaderMatchContains, s.ContainsMatch
	case *routev3.HeaderMatcher_SafeRegexMatch:
		//lint:ignore SA1019 servers still send the deprecated matchers and gRPC honours them
		out.Kind, out.Value = HeaderMatchRegex, s.SafeRegexMatch.GetRegex()
	case *routev3.HeaderMatcher_RangeMatch:
		out.Kind = HeaderMatchRange
		out.RangeStart, out.RangeEnd = s.RangeMatch.GetStart(), s.RangeMatch.GetEnd()
	case *routev3.HeaderMatcher_PresentMatch:
		out.Kind, out.Present = HeaderMatchPresent, s.PresentMatch
	case *routev3.HeaderMatcher_StringMatch:
		sm := s.StringMatch
		switch p := sm.GetMatchPattern().(type) {
		case *matcherv3.StringMatcher_Exact:
			out.Kind, out.Value = HeaderMatchExact, p.Exact
		case *matcherv3.StringMatcher_Prefix:
			out.Kind, out.Value = HeaderMatchPrefix, p.Prefix
		case *matcherv3.StringMatcher_Suffix:
			out.Kind, out.Value = HeaderMatchSuffix, p.Suffix
		case *matcherv3.StringMatcher_Contains:
			out.Kind, out.Value = HeaderMatchContains, p.Contains
		case *matcherv3.StringMatcher_SafeRegex:
			out.Kind, out.Value = HeaderMatchRegex, p.SafeRegex.GetRegex()
		}
		out.IgnoreCase = sm.GetIgnoreCase() && out.Kind != HeaderMatchRegex
	}
	return out
}

// convertRouteAction reports ok == false for a cluster specifier gRPC
// ignores the route for: cluster_header, an inline plugin, one added to
// the oneof after this code was built, or an optional plugin gRPC does not
// implement.
func convertRouteAction(a *routev3.RouteAction, skipPlugins map[string]bool) (action RouteAction, ok bool, err error) {
	switch c := a.GetClusterSpecifier().(type) {
	case *routev3.RouteAction_Cluster:
		action.Kind, action.Cluster = ActionCluster, c.Cluster
	case *routev3.RouteAction_WeightedClusters:
		action.Kind = ActionWeightedClusters
		clusters := c.WeightedClusters.GetClusters()
		action.WeightedClusters = make([]WeightedCluster, len(clusters))
		for i, wc := range clusters {
			overrides, err := convertFilterOverrides(wc.GetTypedPerFilterConfig())
			if err != nil {
				return action, false, registry.FieldWithin(fmt.Sprintf("weighted_clusters.clusters[%d].typed_per_filter_config", i), err)
			}
			// A missing weight counts as zero, as in grpc-go.
			action.WeightedClusters[i] = WeightedCluster{Name: wc.GetName(), Weight: wc.GetWeight().GetValue(), FilterOverrides: overrides}
		}
	case *routev3.RouteAction_ClusterSpecifierPlugin:
		if skipPlugins[c.ClusterSpecifierPlugin] {
			return action, false, nil
		}
		action.Kind, action.ClusterSpecifierPlugin = ActionClusterSpecifierPlugin, c.ClusterSpecifierPlugin
	default:
		return action, false, nil
	}

	// gRFC A31: the header cap takes precedence over the plain limit.
	msd := a.GetMaxStreamDuration()
	if d := cmpOr(msd.GetGrpcTimeoutHeaderMax(), msd.GetMaxStreamDuration()); d != nil {
		v := d.AsDuration()
		action.MaxStreamDuration = &v
	}
	action.HashPolicies = convertHashPolicies(a.GetHashPolicy())
	action.RetryPolicy = convertRetryPolicy(a.GetRetryPolicy())
	return action, true, nil
}

func cmpOr(a, b *durationpb.Duration) *durationpb.Duration {
	if a != nil {
		return a
	}
	return b
}

// convertHashPolicies keeps the policies gRPC supports (gRFC A42): header,
// and filter_state with the channel ID key. Others are ignored, not
// rejected, so that servers can send policies meant for Envoy.
func convertHashPolicies(policies []*routev3.RouteAction_HashPolicy) []HashPolicy {
	var out []HashPolicy
	for i, p := range policies {
		hp := HashPolicy{Terminal: p.GetTerminal(), index: i}
		switch s := p.GetPolicySpecifier().(type) {
		case *routev3.RouteAction_HashPolicy_Header_:
			hp.Kind, hp.HeaderName = HashPolicyHeader, s.Header.GetHeaderName()
			if rr := s.Header.GetRegexRewrite(); rr != nil {
				hp.RegexRewrite = &RegexRewrite{Pattern: rr.GetPattern().GetRegex(), Substitution: rr.GetSubstitution()}
			}
		case *routev3.RouteAction_HashPolicy_FilterState_:
			if s.FilterState.GetKey() != channelIDKey {
				continue
			}
			hp.Kind = HashPolicyChannelID
		default:
			continue
		}
		out = append(out, hp)
	}
	return out
}

// retryOnCodes maps the retry_on conditions gRPC implements (gRFC A44);
// the HTTP-level ones Envoy also accepts are ignored.
var retryOnCodes = map[string]codes.Code{
	"cancelled":          codes.Canceled,
	"deadline-exceeded":  codes.DeadlineExceeded,
	"internal":           codes.Internal,
	"resource-exhausted": codes.ResourceExhausted,
	"unavailable":        codes.Unavailable,
}

// Defaults of gRFC A44.
const (
	defaultNumRetries   = 1
	defaultBaseInterval = 25 * time.Millisecond
	maxIntervalFactor   = 10
)

func convertRetryPolicy(p *routev3.RetryPolicy) *RetryPolicy {
	if p == nil {
		return nil
	}
	out := &RetryPolicy{NumRetries: defaultNumRetries, BaseInterval: defaultBaseInterval}
	for cond := range strings.SplitSeq(p.GetRetryOn(), ",") {
		if c, ok := retryOnCodes[strings.ToLower(strings.TrimSpace(cond))]; ok && !slices.Contains(out.RetryOn, c) {
			out.RetryOn = append(out.RetryOn, c)
		}
	}
	if n := p.GetNumRetries(); n != nil {
		out.NumRetries = n.GetValue()
	}
	// A retry_back_off without base_interval leaves it zero, which
	// validation rejects.
	if b := p.GetRetryBackOff(); b != nil {
		out.BaseInterval = b.GetBaseInterval().AsDuration()
	}
	out.MaxInterval = maxIntervalFactor * out.BaseInterval
	if m := p.GetRetryBackOff().GetMaxInterval(); m != nil {
		out.MaxInterval = m.AsDuration()
	}
	return out
}

// convertFilterOverrides returns the entries sorted by filter name, since
// map order would make the decoded form differ between decodings.
func convertFilterOverrides(cfgs map[string]*anypb.Any) ([]FilterOverride, error) {
	if len(cfgs) == 0 {
		return nil, nil
	}
	out := make([]FilterOverride, 0, len(cfgs))
	for name, cfg := range cfgs {
		o := FilterOverride{Name: name}
		if registry.TypeName(cfg.GetTypeUrl()) == filterConfigMessage {
			fc := new(routev3.FilterConfig)
			if err := proto.Unmarshal(cfg.GetValue(), fc); err != nil {
				return nil, &registry.FieldError{Field: bracket(name), Rule: "cannot parse FilterConfig: " + err.Error()}
			}
			cfg, o.Optional = fc.GetConfig(), fc.GetIsOptional()
		}
		var err error
		if o.ConfigTypeURL, err = typedconfig.TypeURL(cfg); err != nil {
			return nil, registry.FieldWithin(bracket(name), err)
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b FilterOverride) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func pluginSupported(typeURL string) bool { return registry.TypeName(typeURL) == rlsPluginMessage }

// bracket formats a map key for a field path, quoting it only when it
// could be misread: filter names are usually dotted, and quoting every one
// would make paths noisy.
func bracket(key string) string {
	if key != "" && !strings.ContainsAny(key, "[]\" \t\r\n") {
		return "[" + key + "]"
	}
	return "[" + strconv.Quote(key) + "]"
}
