package rds

import (
	"fmt"
	"math"
	"regexp/syntax"

	"github.com/xdsengine/xdsengine/registry"
)

// Message names of the per-route filter configs gRPC clients accept in
// typed_per_filter_config, with what is wrong with those they reject.
// Mirrors the filters grpc-go registers by default (gRFC A39, A33, A41,
// A83).
var overrideConfigs = map[string]string{
	"envoy.extensions.filters.http.fault.v3.HTTPFault":                "",
	"envoy.extensions.filters.http.rbac.v3.RBACPerRoute":              "",
	"envoy.extensions.filters.http.gcp_authn.v3.GcpAuthnFilterConfig": "",
	"envoy.extensions.filters.http.router.v3.Router":                  "the router filter takes no per-route config",
}

// validator validates RouteConfigurations with a type's Options.
type validator struct {
	httpFilter func(typeName string) bool // nil: gRPC's filters alone
}

func (v validator) validate(r registry.Resource, _ registry.DecodeOptions) error {
	rc, ok := r.(*RouteConfiguration)
	if !ok || rc == nil {
		return fmt.Errorf("rds: cannot validate %T, want *rds.RouteConfiguration", r)
	}
	var errs registry.FieldErrors
	plugins := validatePlugins(rc.ClusterSpecifierPlugins, &errs)
	for i := range rc.VirtualHosts {
		v.validateVirtualHost(&rc.VirtualHosts[i], i, plugins, &errs)
	}
	return errs.Err()
}

// The validators below take the path of the field they check as a
// function, called only to report an error: a route table of thousands of
// routes is mostly valid, and building every path up front would cost
// more than the checks.

// validatePlugins returns the names routes may refer to.
func validatePlugins(plugins []ClusterSpecifierPlugin, errs *registry.FieldErrors) map[string]bool {
	names := make(map[string]bool, len(plugins))
	for i, p := range plugins {
		at := func(rest string) string { return fmt.Sprintf("cluster_specifier_plugins[%d].extension.%s", i, rest) }
		if names[p.Name] {
			errs.Addf(at("name"), "duplicate name %q", p.Name)
		}
		names[p.Name] = true
		switch {
		case p.ConfigTypeURL == "":
			errs.Add(at("typed_config"), "field not present")
		case !pluginSupported(p.ConfigTypeURL) && !p.Optional:
			errs.Addf(at("typed_config"), "unsupported cluster specifier plugin type %q", p.ConfigTypeURL)
		}
	}
	return names
}

func (v validator) validateVirtualHost(vh *VirtualHost, i int, plugins map[string]bool, errs *registry.FieldErrors) {
	at := func(rest string) string { return fmt.Sprintf("virtual_hosts[%d].%s", i, rest) }
	if len(vh.Domains) == 0 {
		errs.Add(at("domains"), "must be non-empty")
	}
	for j, d := range vh.Domains {
		if domainMatchTypeOf(d) == domainMatchInvalid {
			errs.Addf(at(fmt.Sprintf("domains[%d]", j)), "invalid domain pattern %q: want an exact host, \"*\", or one \"*\" at the start or end", d)
		}
	}
	if vh.RetryPolicy != nil {
		validateRetryPolicy(vh.RetryPolicy, func() string { return at("retry_policy") }, errs)
	}
	if len(vh.FilterOverrides) > 0 {
		v.validateFilterOverrides(vh.FilterOverrides, func() string { return at("typed_per_filter_config") }, errs)
	}
	for j := range vh.Routes {
		r := &vh.Routes[j]
		v.validateRoute(r, func(rest string) string { return at(fmt.Sprintf("routes[%d].%s", r.index, rest)) }, plugins, errs)
	}
}

func (v validator) validateRoute(r *Route, at func(rest string) string, plugins map[string]bool, errs *registry.FieldErrors) {
	validateMatch(&r.Match, at, errs)
	v.validateAction(&r.Action, at, plugins, errs)
	if len(r.FilterOverrides) > 0 {
		v.validateFilterOverrides(r.FilterOverrides, func() string { return at("typed_per_filter_config") }, errs)
	}
}

func validateMatch(m *RouteMatch, at func(rest string) string, errs *registry.FieldErrors) {
	switch m.Path.Kind {
	case PathMatchNone:
		errs.Add(at("match"), "path specifier must be prefix, path or safe_regex")
	case PathMatchRegex:
		if err := checkRegex(m.Path.Pattern); err != nil {
			errs.Addf(at("match.safe_regex.regex"), "invalid RE2 expression: %v", err)
		}
	}
	for k := range m.Headers {
		h := &m.Headers[k]
		field := func(rest string) string { return at(fmt.Sprintf("match.headers[%d]%s", k, rest)) }
		switch h.Kind {
		case HeaderMatchNone:
			errs.Add(field(""), "no supported header match specifier set")
		case HeaderMatchPrefix, HeaderMatchSuffix, HeaderMatchContains:
			// grpc-go rejects these empty, as Envoy's proto validation
			// does: an empty pattern would match every value.
			if h.Value == "" {
				errs.Addf(field(""), "%s match must be non-empty", h.Kind)
			}
		case HeaderMatchRegex:
			if err := checkRegex(h.Value); err != nil {
				errs.Addf(field(""), "invalid RE2 expression: %v", err)
			}
		case HeaderMatchRange:
			if h.RangeStart > h.RangeEnd {
				errs.Addf(field(".range_match"), "end %d is smaller than start %d", h.RangeEnd, h.RangeStart)
			}
		}
	}
}

func (v validator) validateAction(a *RouteAction, at func(rest string) string, plugins map[string]bool, errs *registry.FieldErrors) {
	switch a.Kind {
	case ActionCluster:
		if a.Cluster == "" {
			errs.Add(at("route.cluster"), "must be non-empty")
		}
	case ActionWeightedClusters:
		v.validateWeightedClusters(a.WeightedClusters, at, errs)
	case ActionClusterSpecifierPlugin:
		switch {
		case a.ClusterSpecifierPlugin == "":
			errs.Add(at("route.cluster_specifier_plugin"), "must be non-empty")
		case !plugins[a.ClusterSpecifierPlugin]:
			errs.Addf(at("route.cluster_specifier_plugin"), "unknown cluster specifier plugin %q", a.ClusterSpecifierPlugin)
		}
	default:
		// Not forwarding: nothing else was recorded.
		return
	}
	if a.MaxStreamDuration != nil && *a.MaxStreamDuration < 0 {
		errs.Add(at("route.max_stream_duration"), "must be non-negative")
	}
	for k := range a.HashPolicies {
		hp := &a.HashPolicies[k]
		validateHashPolicy(hp, func(rest string) string { return at(fmt.Sprintf("route.hash_policy[%d].%s", hp.index, rest)) }, errs)
	}
	if a.RetryPolicy != nil {
		validateRetryPolicy(a.RetryPolicy, func() string { return at("route.retry_policy") }, errs)
	}
}

// validateWeightedClusters follows gRFC A28 as implemented: the deprecated
// total_weight is ignored, zero weights drop a cluster, and the sum must
// be positive and fit in 32 bits.
func (v validator) validateWeightedClusters(clusters []WeightedCluster, at func(rest string) string, errs *registry.FieldErrors) {
	var total uint64
	for k := range clusters {
		wc := &clusters[k]
		if wc.Name == "" {
			errs.Add(at(fmt.Sprintf("route.weighted_clusters.clusters[%d].name", k)), "must be non-empty")
		}
		total += uint64(wc.Weight)
		if len(wc.FilterOverrides) > 0 {
			v.validateFilterOverrides(wc.FilterOverrides, func() string {
				return at(fmt.Sprintf("route.weighted_clusters.clusters[%d].typed_per_filter_config", k))
			}, errs)
		}
	}
	switch {
	case total == 0:
		errs.Add(at("route.weighted_clusters"), "total weight is 0")
	case total > math.MaxUint32:
		errs.Addf(at("route.weighted_clusters"), "total weight %d exceeds %d", total, uint32(math.MaxUint32))
	}
}

func validateHashPolicy(hp *HashPolicy, at func(rest string) string, errs *registry.FieldErrors) {
	if hp.Kind != HashPolicyHeader {
		return
	}
	if hp.HeaderName == "" {
		errs.Add(at("header.header_name"), "must be non-empty")
	}
	if hp.RegexRewrite == nil {
		return
	}
	if hp.RegexRewrite.Pattern == "" {
		errs.Add(at("header.regex_rewrite.pattern.regex"), "must be non-empty")
	} else if err := checkRegex(hp.RegexRewrite.Pattern); err != nil {
		errs.Addf(at("header.regex_rewrite.pattern.regex"), "invalid RE2 expression: %v", err)
	}
}

// validateRetryPolicy applies gRFC A44 as grpc-go implements it.
func validateRetryPolicy(p *RetryPolicy, at func() string, errs *registry.FieldErrors) {
	if p.NumRetries == 0 {
		errs.Add(at()+".num_retries", "must be at least 1")
	}
	if p.BaseInterval <= 0 {
		errs.Add(at()+".retry_back_off.base_interval", "must be positive")
	}
	if p.MaxInterval <= 0 {
		errs.Add(at()+".retry_back_off.max_interval", "must be positive")
	}
}

func (v validator) validateFilterOverrides(overrides []FilterOverride, at func() string, errs *registry.FieldErrors) {
	for _, o := range overrides {
		if o.Name == "" {
			errs.Add(at()+bracket(o.Name), "filter name must be non-empty")
		}
		problem, known := overrideConfigs[registry.TypeName(o.ConfigTypeURL)]
		switch {
		case problem != "":
			errs.Add(at()+bracket(o.Name), problem)
		case known || o.Optional:
		case v.httpFilter != nil && o.ConfigTypeURL != "" && v.httpFilter(registry.TypeName(o.ConfigTypeURL)):
		case o.ConfigTypeURL == "":
			errs.Add(at()+bracket(o.Name), "config not present")
		default:
			errs.Addf(at()+bracket(o.Name), "unsupported filter config type %q", o.ConfigTypeURL)
		}
	}
}

// checkRegex reports whether pattern is valid RE2 syntax. Parsing with the
// flags regexp.Compile uses finds the same errors without the cost of
// compiling, which dominates validating a route table full of regexes.
func checkRegex(pattern string) error {
	_, err := syntax.Parse(pattern, syntax.Perl)
	return err
}
