package rds

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/rawresource"
)

// TypeURL is the type URL of envoy.config.route.v3.RouteConfiguration.
const TypeURL = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"

// Options adjusts how RouteConfiguration resources are validated.
type Options struct {
	// HTTPFilter reports whether the client runs HTTP filters whose
	// config has the message name typeName (an
	// envoy.config.route.v3.FilterConfig unwrapped): a per-route
	// override (typed_per_filter_config) of such a filter is then valid
	// without is_optional. It must be safe for concurrent use. Nil means
	// gRPC's filters alone.
	HTTPFilter func(typeName string) bool
}

// NewType returns a descriptor for RouteConfiguration resources
// validated with opts. Use it instead of [Type] when the client runs HTTP
// filters of its own.
func NewType(opts Options) registry.ResourceType {
	v := validator{httpFilter: opts.HTTPFilter}
	return registry.ResourceType{
		TypeURL:                    TypeURL,
		Name:                       "RouteConfiguration",
		AllResourcesRequiredInSotW: false,
		Decoder:                    registry.DecoderFunc(decode),
		NameField:                  1, // RouteConfiguration.name
		Validator:                  registry.ValidatorFunc(v.validate),
		Dependencies:               registry.DependencyFunc(dependencies),
	}
}

// Type describes RouteConfiguration resources to a registry, with gRPC's
// HTTP filters alone. A SotW response need not repeat every subscribed
// RouteConfiguration, so one missing from a response is not deleted.
var Type = NewType(Options{})

// RouteConfiguration is a decoded RouteConfiguration. The engine hands the
// same value to every watcher, so it and everything it points to must not
// be modified.
type RouteConfiguration struct {
	Name         string
	VirtualHosts []VirtualHost
	// ClusterSpecifierPlugins lists the plugins routes may name in
	// RouteAction.ClusterSpecifierPlugin.
	ClusterSpecifierPlugins []ClusterSpecifierPlugin

	raw []byte
}

// Proto returns the resource as sent by the server, unmarshaled afresh on
// every call, so the caller may modify it. Printing it with protojson is
// the intended use.
func (rc *RouteConfiguration) Proto() proto.Message {
	return rawresource.Proto[routev3.RouteConfiguration](rc.raw)
}

// Equal reports whether other is a RouteConfiguration with the same
// serialized form. It implements registry.Equaler.
func (rc *RouteConfiguration) Equal(other registry.Resource) bool {
	return rawresource.Equal(rc, other, func(a, b *RouteConfiguration) bool { return bytes.Equal(a.raw, b.raw) })
}

// VirtualHost is one entry of RouteConfiguration.virtual_hosts.
type VirtualHost struct {
	Name string
	// Domains are the host patterns this virtual host serves: an exact
	// host, "*.suffix", "prefix.*" or "*". See FindVirtualHost.
	Domains []string
	// Routes are in match order: the first route that matches an RPC is
	// used. Routes gRPC ignores (those with query_parameters matchers or
	// an unsupported cluster specifier) are left out.
	Routes []Route
	// RetryPolicy applies to routes without their own; nil means none.
	RetryPolicy *RetryPolicy
	// FilterOverrides are the per-filter configs of typed_per_filter_config,
	// sorted by filter name.
	FilterOverrides []FilterOverride
}

// Route is one route of a virtual host.
type Route struct {
	Name            string
	Match           RouteMatch
	Action          RouteAction
	FilterOverrides []FilterOverride

	// index is the route's position in the virtual host's proto, which
	// differs from its position in Routes once ignored routes are left
	// out. Validation errors name it.
	index int
}

// RouteMatch says which RPCs a route applies to: all of Path, Headers and
// FractionPerMillion must match.
type RouteMatch struct {
	Path    PathMatcher
	Headers []HeaderMatcher
	// FractionPerMillion, when set, is the share of matching RPCs the
	// route takes (runtime_fraction.default_value scaled to a million and
	// capped at a million).
	FractionPerMillion *uint32
}

// PathMatchKind says how PathMatcher.Pattern is compared with the RPC's
// ":path", "/service/method".
type PathMatchKind int

const (
	// PathMatchNone means no supported path specifier was set. It only
	// appears in resources that fail validation.
	PathMatchNone PathMatchKind = iota
	// PathMatchPrefix matches paths starting with Pattern.
	PathMatchPrefix
	// PathMatchExact matches the path Pattern.
	PathMatchExact
	// PathMatchRegex matches paths that Pattern, an RE2 expression,
	// matches in full.
	PathMatchRegex
)

var pathMatchKindNames = [...]string{"none", "prefix", "path", "safe_regex"}

// String returns the kind's name.
func (k PathMatchKind) String() string { return kindName(pathMatchKindNames[:], int(k)) }

// PathMatcher is RouteMatch.path_specifier with case_sensitive.
type PathMatcher struct {
	Kind    PathMatchKind
	Pattern string
	// IgnoreCase is set when case_sensitive is false. It does not apply
	// to PathMatchRegex.
	IgnoreCase bool
}

// HeaderMatchKind says how a HeaderMatcher compares a header's value.
type HeaderMatchKind int

const (
	// HeaderMatchNone means no supported matcher was set. It only appears
	// in resources that fail validation.
	HeaderMatchNone HeaderMatchKind = iota
	// HeaderMatchExact matches the value Value.
	HeaderMatchExact
	// HeaderMatchPrefix matches values starting with Value.
	HeaderMatchPrefix
	// HeaderMatchSuffix matches values ending with Value.
	HeaderMatchSuffix
	// HeaderMatchContains matches values containing Value.
	HeaderMatchContains
	// HeaderMatchRegex matches values that Value, an RE2 expression,
	// matches in full.
	HeaderMatchRegex
	// HeaderMatchRange matches integer values in [RangeStart, RangeEnd).
	HeaderMatchRange
	// HeaderMatchPresent matches when the header's presence equals
	// Present.
	HeaderMatchPresent
)

var headerMatchKindNames = [...]string{"none", "exact", "prefix", "suffix", "contains", "safe_regex", "range", "present"}

// String returns the kind's name.
func (k HeaderMatchKind) String() string { return kindName(headerMatchKindNames[:], int(k)) }

// HeaderMatcher is one entry of RouteMatch.headers. The deprecated
// *_match fields and string_match decode to the same kinds.
type HeaderMatcher struct {
	// Name is lowercased: gRPC metadata keys are lowercase, so gRPC
	// compares lowercased names.
	Name       string
	Kind       HeaderMatchKind
	Value      string
	IgnoreCase bool // string_match.ignore_case; not for HeaderMatchRegex
	RangeStart int64
	RangeEnd   int64
	Present    bool
	Invert     bool
}

// ActionKind says what a route does with the RPCs it matches.
type ActionKind int

const (
	// ActionUnsupported is a redirect, direct_response, filter_action or
	// missing action. gRPC fails RPCs that match such a route.
	ActionUnsupported ActionKind = iota
	// ActionCluster sends RPCs to RouteAction.Cluster.
	ActionCluster
	// ActionWeightedClusters splits RPCs over RouteAction.WeightedClusters.
	ActionWeightedClusters
	// ActionClusterSpecifierPlugin lets the plugin named
	// RouteAction.ClusterSpecifierPlugin pick a cluster per RPC.
	ActionClusterSpecifierPlugin
	// ActionNonForwarding is non_forwarding_action, meaningful to servers
	// only. gRPC clients fail RPCs that match it.
	ActionNonForwarding
)

var actionKindNames = [...]string{"unsupported", "cluster", "weighted_clusters", "cluster_specifier_plugin", "non_forwarding_action"}

// String returns the kind's name.
func (k ActionKind) String() string { return kindName(actionKindNames[:], int(k)) }

// RouteAction is a route's action. The fields after Kind are set only for
// the forwarding kinds.
type RouteAction struct {
	Kind                   ActionKind
	Cluster                string
	WeightedClusters       []WeightedCluster
	ClusterSpecifierPlugin string
	// MaxStreamDuration is max_stream_duration.grpc_timeout_header_max if
	// set, else max_stream_duration.max_stream_duration; nil when neither
	// is set, in which case the Listener's applies.
	MaxStreamDuration *time.Duration
	HashPolicies      []HashPolicy
	// RetryPolicy is nil when the route has none; the virtual host's then
	// applies.
	RetryPolicy *RetryPolicy
}

// WeightedCluster is one entry of weighted_clusters.clusters. Entries
// with weight zero (or none) are kept but receive no RPCs.
type WeightedCluster struct {
	Name            string
	Weight          uint32
	FilterOverrides []FilterOverride
}

// HashPolicyKind says what a ring-hash policy hashes.
type HashPolicyKind int

const (
	// HashPolicyHeader hashes the value of header HeaderName.
	HashPolicyHeader HashPolicyKind = iota
	// HashPolicyChannelID hashes the channel's identity
	// (filter_state key "io.grpc.channel_id").
	HashPolicyChannelID
)

var hashPolicyKindNames = [...]string{"header", "channel_id"}

// String returns the kind's name.
func (k HashPolicyKind) String() string { return kindName(hashPolicyKindNames[:], int(k)) }

// HashPolicy is one hash_policy entry gRPC supports (gRFC A42); entries of
// other kinds are left out.
type HashPolicy struct {
	Kind       HashPolicyKind
	HeaderName string
	// RegexRewrite, if set, rewrites the header value before hashing.
	RegexRewrite *RegexRewrite
	Terminal     bool

	// index is the policy's position in the proto, for validation errors.
	index int
}

// RegexRewrite replaces every match of Pattern (RE2) with Substitution.
type RegexRewrite struct {
	Pattern      string
	Substitution string
}

// RetryPolicy is a retry_policy (gRFC A44) with gRPC's defaults applied.
type RetryPolicy struct {
	// RetryOn lists the status codes named in retry_on that gRPC
	// supports, in the order given. Empty means no retries.
	RetryOn      []codes.Code
	NumRetries   uint32 // 1 when unset
	BaseInterval time.Duration
	MaxInterval  time.Duration
}

// FilterOverride is one typed_per_filter_config entry: configuration for
// the HTTP filter instance Name.
type FilterOverride struct {
	Name string
	// ConfigTypeURL is the type URL of the config, looked up inside a
	// FilterConfig or TypedStruct wrapper.
	ConfigTypeURL string
	// Optional is FilterConfig.is_optional: a client that does not know
	// the config type may ignore the entry.
	Optional bool
}

// ClusterSpecifierPlugin is one entry of
// RouteConfiguration.cluster_specifier_plugins.
type ClusterSpecifierPlugin struct {
	Name string
	// ConfigTypeURL is the type URL of extension.typed_config.
	ConfigTypeURL string
	Optional      bool
}

func kindName(names []string, k int) string {
	if k < 0 || k >= len(names) {
		return "unknown"
	}
	return names[k]
}

// String summarizes the route configuration on one line: each virtual
// host with its domains and the clusters its routes send to.
func (rc *RouteConfiguration) String() string {
	var b strings.Builder
	for i, vh := range rc.VirtualHosts {
		if i > 0 {
			b.WriteString("; ")
		}
		routes := "routes"
		if len(vh.Routes) == 1 {
			routes = "route"
		}
		fmt.Fprintf(&b, "%s %v: %d %s", vh.Name, vh.Domains, len(vh.Routes), routes)
		var clusters []string
		for _, r := range vh.Routes {
			if r.Action.Cluster != "" {
				clusters = append(clusters, r.Action.Cluster)
			}
			for _, wc := range r.Action.WeightedClusters {
				clusters = append(clusters, fmt.Sprintf("%s(%d)", wc.Name, wc.Weight))
			}
		}
		if len(clusters) > 0 {
			b.WriteString(" → " + strings.Join(clusters, ", "))
		}
	}
	return b.String()
}
