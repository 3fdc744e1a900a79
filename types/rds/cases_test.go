//lint:file-ignore SA1019 the tests cover the deprecated header matchers servers still send

package rds_test

import (
	"fmt"
	"math"
	"time"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/rds"
)

const (
	cdsTypeURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	rlsTypeURL = "type.googleapis.com/grpc.lookup.v1.RouteLookupClusterSpecifier"
	luaTypeURL = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"
)

// testCase is one resource, valid (want set) or not (wantErr set). The
// same table drives the decode tests, the conformance kit and the fuzz
// seed corpus.
type testCase struct {
	name string
	msg  *routev3.RouteConfiguration
	raw  []byte // used instead of msg when set
	// wantName is the name Decode must report; defaults to msg's name.
	wantName string
	want     *rds.RouteConfiguration
	wantDeps []registry.Ref
	// wantErr lists "|"-separated substrings of the error.
	wantErr string
}

func (c testCase) resourceName() string {
	if c.wantName != "" || c.raw != nil {
		return c.wantName
	}
	return c.msg.GetName()
}

func routeConfig(name string, vhs ...*routev3.VirtualHost) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{Name: name, VirtualHosts: vhs}
}

func vhost(domains []string, routes ...*routev3.Route) *routev3.VirtualHost {
	return &routev3.VirtualHost{Name: "vh", Domains: domains, Routes: routes}
}

func toCluster(match *routev3.RouteMatch, cluster string) *routev3.Route {
	return &routev3.Route{
		Match:  match,
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
	}
}

func withAction(match *routev3.RouteMatch, action *routev3.RouteAction) *routev3.Route {
	return &routev3.Route{Match: match, Action: &routev3.Route_Route{Route: action}}
}

func prefix(p string) *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: p}}
}

func withHeaders(m *routev3.RouteMatch, hs ...*routev3.HeaderMatcher) *routev3.RouteMatch {
	m.Headers = hs
	return m
}

func weighted(cs ...*routev3.WeightedCluster_ClusterWeight) *routev3.RouteAction {
	return &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{
		WeightedClusters: &routev3.WeightedCluster{Clusters: cs},
	}}
}

func clusterWeight(name string, w uint32) *routev3.WeightedCluster_ClusterWeight {
	return &routev3.WeightedCluster_ClusterWeight{Name: name, Weight: wrapperspb.UInt32(w)}
}

func clusterAction(cluster string) *routev3.RouteAction {
	return &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

func cdsRefs(names ...string) []registry.Ref {
	refs := make([]registry.Ref, len(names))
	for i, n := range names {
		refs[i] = registry.Ref{TypeURL: cdsTypeURL, Name: n}
	}
	return refs
}

func ptr[T any](v T) *T { return &v }

func validCases() []testCase {
	return []testCase{
		{
			name: "minimal",
			msg:  routeConfig("minimal", vhost([]string{"*"}, toCluster(prefix(""), "c1"))),
			want: &rds.RouteConfiguration{
				Name: "minimal",
				VirtualHosts: []rds.VirtualHost{{
					Name:    "vh",
					Domains: []string{"*"},
					Routes: []rds.Route{{
						Match:  rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchPrefix}},
						Action: rds.RouteAction{Kind: rds.ActionCluster, Cluster: "c1"},
					}},
				}},
			},
			wantDeps: cdsRefs("c1"),
		},
		{
			// gRPC accepts a route table without virtual hosts; lookups
			// fail later, per channel.
			name:     "no virtual hosts",
			msg:      routeConfig("empty"),
			want:     &rds.RouteConfiguration{Name: "empty"},
			wantDeps: []registry.Ref{},
		},
		{
			name: "matchers",
			msg: routeConfig("matchers", vhost([]string{"svc.example.com", "svc.example.com:*"},
				toCluster(&routev3.RouteMatch{
					PathSpecifier: &routev3.RouteMatch_Path{Path: "/pkg.Svc/Method"},
					CaseSensitive: wrapperspb.Bool(false),
				}, "exact"),
				toCluster(&routev3.RouteMatch{
					PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/pkg.Svc/.*"}},
					// Ignored for regexes, as in gRPC.
					CaseSensitive: wrapperspb.Bool(false),
					RuntimeFraction: &corev3.RuntimeFractionalPercent{
						DefaultValue: &typev3.FractionalPercent{Numerator: 25, Denominator: typev3.FractionalPercent_HUNDRED},
					},
				}, "regex"),
				toCluster(withHeaders(prefix("/"),
					&routev3.HeaderMatcher{Name: "X-Exact", HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: "v"}},
					&routev3.HeaderMatcher{Name: "x-re", HeaderMatchSpecifier: &routev3.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &matcherv3.RegexMatcher{Regex: "a+"}}},
					&routev3.HeaderMatcher{Name: "x-range", HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: 1, End: 10}}},
					&routev3.HeaderMatcher{Name: "x-present", HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}, InvertMatch: true},
					&routev3.HeaderMatcher{Name: "x-prefix", HeaderMatchSpecifier: &routev3.HeaderMatcher_PrefixMatch{PrefixMatch: "p"}},
					&routev3.HeaderMatcher{Name: "x-suffix", HeaderMatchSpecifier: &routev3.HeaderMatcher_SuffixMatch{SuffixMatch: "s"}},
					&routev3.HeaderMatcher{Name: "x-contains", HeaderMatchSpecifier: &routev3.HeaderMatcher_ContainsMatch{ContainsMatch: "c"}},
					&routev3.HeaderMatcher{Name: "x-string", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
						MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: "S"}, IgnoreCase: true,
					}}},
				), "headers"),
				toCluster(&routev3.RouteMatch{
					PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
					RuntimeFraction: &corev3.RuntimeFractionalPercent{
						DefaultValue: &typev3.FractionalPercent{Numerator: 200, Denominator: typev3.FractionalPercent_HUNDRED},
					},
				}, "saturated"),
			)),
			want: &rds.RouteConfiguration{
				Name: "matchers",
				VirtualHosts: []rds.VirtualHost{{
					Name:    "vh",
					Domains: []string{"svc.example.com", "svc.example.com:*"},
					Routes: []rds.Route{
						{
							Match:  rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchExact, Pattern: "/pkg.Svc/Method", IgnoreCase: true}},
							Action: rds.RouteAction{Kind: rds.ActionCluster, Cluster: "exact"},
						},
						{
							Match: rds.RouteMatch{
								Path:               rds.PathMatcher{Kind: rds.PathMatchRegex, Pattern: "/pkg.Svc/.*"},
								FractionPerMillion: ptr[uint32](250000),
							},
							Action: rds.RouteAction{Kind: rds.ActionCluster, Cluster: "regex"},
						},
						{
							Match: rds.RouteMatch{
								Path: rds.PathMatcher{Kind: rds.PathMatchPrefix, Pattern: "/"},
								Headers: []rds.HeaderMatcher{
									{Name: "x-exact", Kind: rds.HeaderMatchExact, Value: "v"},
									{Name: "x-re", Kind: rds.HeaderMatchRegex, Value: "a+"},
									{Name: "x-range", Kind: rds.HeaderMatchRange, RangeStart: 1, RangeEnd: 10},
									{Name: "x-present", Kind: rds.HeaderMatchPresent, Present: true, Invert: true},
									{Name: "x-prefix", Kind: rds.HeaderMatchPrefix, Value: "p"},
									{Name: "x-suffix", Kind: rds.HeaderMatchSuffix, Value: "s"},
									{Name: "x-contains", Kind: rds.HeaderMatchContains, Value: "c"},
									{Name: "x-string", Kind: rds.HeaderMatchSuffix, Value: "S", IgnoreCase: true},
								},
							},
							Action: rds.RouteAction{Kind: rds.ActionCluster, Cluster: "headers"},
						},
						{
							Match: rds.RouteMatch{
								Path:               rds.PathMatcher{Kind: rds.PathMatchPrefix, Pattern: "/"},
								FractionPerMillion: ptr[uint32](1_000_000),
							},
							Action: rds.RouteAction{Kind: rds.ActionCluster, Cluster: "saturated"},
						},
					},
				}},
			},
			wantDeps: cdsRefs("exact", "regex", "headers", "saturated"),
		},
		{
			name: "actions",
			msg: &routev3.RouteConfiguration{
				Name: "actions",
				ClusterSpecifierPlugins: []*routev3.ClusterSpecifierPlugin{
					{Extension: &corev3.TypedExtensionConfig{Name: "rls", TypedConfig: &anypb.Any{TypeUrl: rlsTypeURL}}},
					{Extension: &corev3.TypedExtensionConfig{Name: "lua", TypedConfig: &anypb.Any{TypeUrl: luaTypeURL}}, IsOptional: true},
				},
				VirtualHosts: []*routev3.VirtualHost{{
					Name:    "vh",
					Domains: []string{"*"},
					Routes: []*routev3.Route{
						// Ignored: gRPC never sees query parameters.
						toCluster(&routev3.RouteMatch{
							PathSpecifier:   &routev3.RouteMatch_Prefix{Prefix: "/"},
							QueryParameters: []*routev3.QueryParameterMatcher{{Name: "q"}},
						}, "ignored-query"),
						withAction(prefix("/w"), weighted(clusterWeight("a", 60), clusterWeight("b", 40), clusterWeight("zero", 0), clusterWeight("a", 1))),
						// Ignored: cluster_header is not supported.
						withAction(prefix("/h"), &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterHeader{ClusterHeader: "x-cluster"}}),
						withAction(prefix("/rls"), &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: "rls"}}),
						// Ignored: the plugin is optional and unsupported.
						withAction(prefix("/lua"), &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: "lua"}}),
						{Match: prefix("/nf"), Action: &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}}},
						{Match: prefix("/redirect"), Action: &routev3.Route_Redirect{Redirect: &routev3.RedirectAction{}}},
					},
				}},
			},
			want: &rds.RouteConfiguration{
				Name: "actions",
				ClusterSpecifierPlugins: []rds.ClusterSpecifierPlugin{
					{Name: "rls", ConfigTypeURL: rlsTypeURL},
					{Name: "lua", ConfigTypeURL: luaTypeURL, Optional: true},
				},
				VirtualHosts: []rds.VirtualHost{{
					Name:    "vh",
					Domains: []string{"*"},
					Routes: []rds.Route{
						{
							Match: rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchPrefix, Pattern: "/w"}},
							Action: rds.RouteAction{Kind: rds.ActionWeightedClusters, WeightedClusters: []rds.WeightedCluster{
								{Name: "a", Weight: 60}, {Name: "b", Weight: 40}, {Name: "zero"}, {Name: "a", Weight: 1},
							}},
						},
						{
							Match:  rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchPrefix, Pattern: "/rls"}},
							Action: rds.RouteAction{Kind: rds.ActionClusterSpecifierPlugin, ClusterSpecifierPlugin: "rls"},
						},
						{
							Match:  rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchPrefix, Pattern: "/nf"}},
							Action: rds.RouteAction{Kind: rds.ActionNonForwarding},
						},
						{
							Match:  rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchPrefix, Pattern: "/redirect"}},
							Action: rds.RouteAction{Kind: rds.ActionUnsupported},
						},
					},
				}},
			},
			// "zero" receives no RPCs and "a" is named twice.
			wantDeps: cdsRefs("a", "b"),
		},
		{
			name: "route action extras",
			msg: routeConfig("extras", &routev3.VirtualHost{
				Name:    "vh",
				Domains: []string{"*"},
				RetryPolicy: &routev3.RetryPolicy{
					RetryOn: "unavailable, 5xx,Cancelled,unavailable",
				},
				TypedPerFilterConfig: map[string]*anypb.Any{
					"fault": mustAny(&faultv3.HTTPFault{}),
					"lua":   mustAny(&routev3.FilterConfig{Config: &anypb.Any{TypeUrl: luaTypeURL}, IsOptional: true}),
					"typed": mustAny(&xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"}),
					"old":   mustAny(&udpatypev1.TypedStruct{TypeUrl: "example.com/envoy.extensions.filters.http.fault.v3.HTTPFault"}),
				},
				Routes: []*routev3.Route{withAction(prefix(""), &routev3.RouteAction{
					ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c"},
					MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{
						MaxStreamDuration:    durationpb.New(5 * time.Second),
						GrpcTimeoutHeaderMax: durationpb.New(2 * time.Second),
					},
					HashPolicy: []*routev3.RouteAction_HashPolicy{
						{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: &routev3.RouteAction_HashPolicy_Cookie{Name: "c"}}},
						{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{
							HeaderName: "x-user",
							RegexRewrite: &matcherv3.RegexMatchAndSubstitute{
								Pattern: &matcherv3.RegexMatcher{Regex: "^(.*)-.*$"}, Substitution: `\1`,
							},
						}}, Terminal: true},
						{PolicySpecifier: &routev3.RouteAction_HashPolicy_FilterState_{FilterState: &routev3.RouteAction_HashPolicy_FilterState{Key: "io.grpc.channel_id"}}},
						{PolicySpecifier: &routev3.RouteAction_HashPolicy_FilterState_{FilterState: &routev3.RouteAction_HashPolicy_FilterState{Key: "other"}}},
					},
					RetryPolicy: &routev3.RetryPolicy{
						RetryOn:    "deadline-exceeded,internal,resource-exhausted",
						NumRetries: wrapperspb.UInt32(3),
						RetryBackOff: &routev3.RetryPolicy_RetryBackOff{
							BaseInterval: durationpb.New(100 * time.Millisecond),
						},
					},
				})},
			}),
			want: &rds.RouteConfiguration{
				Name: "extras",
				VirtualHosts: []rds.VirtualHost{{
					Name:    "vh",
					Domains: []string{"*"},
					RetryPolicy: &rds.RetryPolicy{
						RetryOn:      []codes.Code{codes.Unavailable, codes.Canceled},
						NumRetries:   1,
						BaseInterval: 25 * time.Millisecond,
						MaxInterval:  250 * time.Millisecond,
					},
					FilterOverrides: []rds.FilterOverride{
						{Name: "fault", ConfigTypeURL: "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"},
						{Name: "lua", ConfigTypeURL: luaTypeURL, Optional: true},
						{Name: "old", ConfigTypeURL: "example.com/envoy.extensions.filters.http.fault.v3.HTTPFault"},
						{Name: "typed", ConfigTypeURL: "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"},
					},
					Routes: []rds.Route{{
						Match: rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchPrefix}},
						Action: rds.RouteAction{
							Kind:              rds.ActionCluster,
							Cluster:           "c",
							MaxStreamDuration: ptr(2 * time.Second),
							HashPolicies: []rds.HashPolicy{
								{
									Kind:         rds.HashPolicyHeader,
									HeaderName:   "x-user",
									RegexRewrite: &rds.RegexRewrite{Pattern: "^(.*)-.*$", Substitution: `\1`},
									Terminal:     true,
								},
								{Kind: rds.HashPolicyChannelID},
							},
							RetryPolicy: &rds.RetryPolicy{
								RetryOn:      []codes.Code{codes.DeadlineExceeded, codes.Internal, codes.ResourceExhausted},
								NumRetries:   3,
								BaseInterval: 100 * time.Millisecond,
								MaxInterval:  time.Second,
							},
						},
					}},
				}},
			},
			wantDeps: cdsRefs("c"),
		},
	}
}

func invalidCases() []testCase {
	oneRoute := func(r *routev3.Route) *routev3.RouteConfiguration {
		return routeConfig("bad", vhost([]string{"*"}, r))
	}
	routeAction := func(a *routev3.RouteAction) *routev3.RouteConfiguration {
		return oneRoute(withAction(prefix(""), a))
	}
	header := func(h *routev3.HeaderMatcher) *routev3.RouteConfiguration {
		return oneRoute(toCluster(withHeaders(prefix(""), h), "c"))
	}
	withOverride := func(name string, cfg *anypb.Any) *routev3.RouteConfiguration {
		r := toCluster(prefix(""), "c")
		r.TypedPerFilterConfig = map[string]*anypb.Any{name: cfg}
		return oneRoute(r)
	}
	hashPolicy := func(p *routev3.RouteAction_HashPolicy_Header) *routev3.RouteConfiguration {
		a := clusterAction("c")
		a.HashPolicy = []*routev3.RouteAction_HashPolicy{
			{PolicySpecifier: &routev3.RouteAction_HashPolicy_Cookie_{Cookie: &routev3.RouteAction_HashPolicy_Cookie{Name: "ignored"}}},
			{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: p}},
		}
		return routeAction(a)
	}
	retry := func(p *routev3.RetryPolicy) *routev3.RouteConfiguration {
		a := clusterAction("c")
		a.RetryPolicy = p
		return routeAction(a)
	}
	plugins := func(ps []*routev3.ClusterSpecifierPlugin, routeTo string) *routev3.RouteConfiguration {
		m := routeAction(&routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: routeTo}})
		m.ClusterSpecifierPlugins = ps
		return m
	}
	rlsPlugin := func(name string) *routev3.ClusterSpecifierPlugin {
		return &routev3.ClusterSpecifierPlugin{Extension: &corev3.TypedExtensionConfig{Name: name, TypedConfig: &anypb.Any{TypeUrl: rlsTypeURL}}}
	}
	manyBroken := routeConfig("many")
	for range 70 {
		manyBroken.VirtualHosts = append(manyBroken.VirtualHosts, vhost(nil))
	}

	return []testCase{
		{
			name:    "virtual host without domains",
			msg:     routeConfig("bad", vhost(nil, toCluster(prefix(""), "c"))),
			wantErr: "virtual_hosts[0].domains: must be non-empty",
		},
		{
			name:    "wildcard inside domain",
			msg:     routeConfig("bad", vhost([]string{"ok.example.com"}), vhost([]string{"*", "a.*.example.com"})),
			wantErr: `virtual_hosts[1].domains[1]: invalid domain pattern "a.*.example.com"`,
		},
		{
			name:    "empty domain",
			msg:     routeConfig("bad", vhost([]string{""})),
			wantErr: `virtual_hosts[0].domains[0]: invalid domain pattern ""`,
		},
		{
			name:    "route without match",
			msg:     oneRoute(toCluster(nil, "c")),
			wantErr: "virtual_hosts[0].routes[0].match: path specifier must be prefix, path or safe_regex",
		},
		{
			name: "unsupported path specifier",
			msg: oneRoute(toCluster(&routev3.RouteMatch{
				PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: "/a"},
			}, "c")),
			wantErr: "virtual_hosts[0].routes[0].match: path specifier must be prefix, path or safe_regex",
		},
		{
			name: "invalid path regex",
			msg: oneRoute(toCluster(&routev3.RouteMatch{
				PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "(unclosed"}},
			}, "c")),
			wantErr: "virtual_hosts[0].routes[0].match.safe_regex.regex: invalid RE2 expression",
		},
		{
			name:    "header matcher without specifier",
			msg:     header(&routev3.HeaderMatcher{Name: "x"}),
			wantErr: "virtual_hosts[0].routes[0].match.headers[0]: no supported header match specifier set",
		},
		{
			name: "string match without pattern",
			msg: header(&routev3.HeaderMatcher{Name: "x", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
				StringMatch: &matcherv3.StringMatcher{IgnoreCase: true},
			}}),
			wantErr: "virtual_hosts[0].routes[0].match.headers[0]: no supported header match specifier set",
		},
		{
			name:    "empty header prefix",
			msg:     header(&routev3.HeaderMatcher{Name: "x", HeaderMatchSpecifier: &routev3.HeaderMatcher_PrefixMatch{}}),
			wantErr: "virtual_hosts[0].routes[0].match.headers[0]: prefix match must be non-empty",
		},
		{
			name: "empty string_match contains",
			msg: header(&routev3.HeaderMatcher{Name: "x", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
				StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{}},
			}}),
			wantErr: "virtual_hosts[0].routes[0].match.headers[0]: contains match must be non-empty",
		},
		{
			name: "invalid header regex",
			msg: header(&routev3.HeaderMatcher{Name: "x", HeaderMatchSpecifier: &routev3.HeaderMatcher_SafeRegexMatch{
				SafeRegexMatch: &matcherv3.RegexMatcher{Regex: "a**"},
			}}),
			wantErr: "virtual_hosts[0].routes[0].match.headers[0]: invalid RE2 expression",
		},
		{
			name: "inverted header range",
			msg: header(&routev3.HeaderMatcher{Name: "x", HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{
				RangeMatch: &typev3.Int64Range{Start: 5, End: 1},
			}}),
			wantErr: "virtual_hosts[0].routes[0].match.headers[0].range_match: end 1 is smaller than start 5",
		},
		{
			name:    "empty cluster name",
			msg:     routeAction(clusterAction("")),
			wantErr: "virtual_hosts[0].routes[0].route.cluster: must be non-empty",
		},
		{
			name:    "weighted clusters total weight zero",
			msg:     routeAction(weighted(clusterWeight("a", 0), &routev3.WeightedCluster_ClusterWeight{Name: "b"})),
			wantErr: "virtual_hosts[0].routes[0].route.weighted_clusters: total weight is 0",
		},
		{
			name:    "weighted clusters without clusters",
			msg:     routeAction(weighted()),
			wantErr: "virtual_hosts[0].routes[0].route.weighted_clusters: total weight is 0",
		},
		{
			name:    "weighted clusters total weight overflows",
			msg:     routeAction(weighted(clusterWeight("a", math.MaxUint32), clusterWeight("b", 1))),
			wantErr: "virtual_hosts[0].routes[0].route.weighted_clusters: total weight 4294967296 exceeds 4294967295",
		},
		{
			name:    "weighted cluster without name",
			msg:     routeAction(weighted(clusterWeight("a", 1), clusterWeight("", 1))),
			wantErr: "virtual_hosts[0].routes[0].route.weighted_clusters.clusters[1].name: must be non-empty",
		},
		{
			name:    "unknown cluster specifier plugin",
			msg:     plugins([]*routev3.ClusterSpecifierPlugin{rlsPlugin("rls")}, "other"),
			wantErr: `virtual_hosts[0].routes[0].route.cluster_specifier_plugin: unknown cluster specifier plugin "other"`,
		},
		{
			name:    "empty cluster specifier plugin",
			msg:     plugins(nil, ""),
			wantErr: "virtual_hosts[0].routes[0].route.cluster_specifier_plugin: must be non-empty",
		},
		{
			name: "unsupported required plugin",
			msg: plugins([]*routev3.ClusterSpecifierPlugin{
				{Extension: &corev3.TypedExtensionConfig{Name: "lua", TypedConfig: &anypb.Any{TypeUrl: luaTypeURL}}},
			}, "lua"),
			wantErr: `cluster_specifier_plugins[0].extension.typed_config: unsupported cluster specifier plugin type "` + luaTypeURL + `"`,
		},
		{
			name:    "duplicate plugin names",
			msg:     plugins([]*routev3.ClusterSpecifierPlugin{rlsPlugin("rls"), rlsPlugin("rls")}, "rls"),
			wantErr: `cluster_specifier_plugins[1].extension.name: duplicate name "rls"`,
		},
		{
			name:    "plugin without config",
			msg:     plugins([]*routev3.ClusterSpecifierPlugin{{Extension: &corev3.TypedExtensionConfig{Name: "x"}, IsOptional: true}}, "x"),
			wantErr: "cluster_specifier_plugins[0].extension.typed_config: field not present",
		},
		{
			name: "negative max stream duration",
			msg: routeAction(&routev3.RouteAction{
				ClusterSpecifier:  &routev3.RouteAction_Cluster{Cluster: "c"},
				MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(-time.Second)},
			}),
			wantErr: "virtual_hosts[0].routes[0].route.max_stream_duration: must be non-negative",
		},
		{
			// The ignored cookie policy keeps its index in the path.
			name:    "hash policy without header name",
			msg:     hashPolicy(&routev3.RouteAction_HashPolicy_Header{}),
			wantErr: "virtual_hosts[0].routes[0].route.hash_policy[1].header.header_name: must be non-empty",
		},
		{
			name: "hash policy with invalid rewrite",
			msg: hashPolicy(&routev3.RouteAction_HashPolicy_Header{HeaderName: "h", RegexRewrite: &matcherv3.RegexMatchAndSubstitute{
				Pattern: &matcherv3.RegexMatcher{Regex: "[z-a]"},
			}}),
			wantErr: "virtual_hosts[0].routes[0].route.hash_policy[1].header.regex_rewrite.pattern.regex: invalid RE2 expression",
		},
		{
			name:    "zero retries",
			msg:     retry(&routev3.RetryPolicy{RetryOn: "unavailable", NumRetries: wrapperspb.UInt32(0)}),
			wantErr: "virtual_hosts[0].routes[0].route.retry_policy.num_retries: must be at least 1",
		},
		{
			name: "retry back-off without base interval",
			msg: routeConfig("bad", &routev3.VirtualHost{
				Domains:     []string{"*"},
				RetryPolicy: &routev3.RetryPolicy{RetryBackOff: &routev3.RetryPolicy_RetryBackOff{}},
			}),
			wantErr: "virtual_hosts[0].retry_policy.retry_back_off.base_interval: must be positive|" +
				"virtual_hosts[0].retry_policy.retry_back_off.max_interval: must be positive",
		},
		{
			name: "zero retry max interval",
			msg: retry(&routev3.RetryPolicy{RetryBackOff: &routev3.RetryPolicy_RetryBackOff{
				BaseInterval: durationpb.New(time.Second), MaxInterval: durationpb.New(0),
			}}),
			wantErr: "virtual_hosts[0].routes[0].route.retry_policy.retry_back_off.max_interval: must be positive",
		},
		{
			name:    "unsupported filter override",
			msg:     withOverride("envoy.lua", &anypb.Any{TypeUrl: luaTypeURL}),
			wantErr: `virtual_hosts[0].routes[0].typed_per_filter_config[envoy.lua]: unsupported filter config type "` + luaTypeURL + `"`,
		},
		{
			name:    "router filter override",
			msg:     withOverride("router", mustAny(&routerv3.Router{})),
			wantErr: "virtual_hosts[0].routes[0].typed_per_filter_config[router]: the router filter takes no per-route config",
		},
		{
			name:    "filter override without name",
			msg:     withOverride("", mustAny(&faultv3.HTTPFault{})),
			wantErr: `virtual_hosts[0].routes[0].typed_per_filter_config[""]: filter name must be non-empty`,
		},
		{
			name: "unsupported weighted cluster filter override",
			msg: routeAction(weighted(&routev3.WeightedCluster_ClusterWeight{
				Name: "a", Weight: wrapperspb.UInt32(1),
				TypedPerFilterConfig: map[string]*anypb.Any{"f": mustAny(&routev3.FilterConfig{Config: &anypb.Any{TypeUrl: luaTypeURL}})},
			})),
			wantErr: "virtual_hosts[0].routes[0].route.weighted_clusters.clusters[0].typed_per_filter_config[f]: unsupported filter config type",
		},
		{
			// The first route is ignored; the path still names the
			// second by its position in the message.
			name: "index after ignored route",
			msg: routeConfig("bad", vhost([]string{"*"},
				toCluster(&routev3.RouteMatch{
					PathSpecifier:   &routev3.RouteMatch_Prefix{Prefix: ""},
					QueryParameters: []*routev3.QueryParameterMatcher{{Name: "q"}},
				}, ""),
				toCluster(prefix(""), ""),
			)),
			wantErr: "virtual_hosts[0].routes[1].route.cluster: must be non-empty",
		},
		{
			name: "every problem listed",
			msg: routeConfig("bad",
				vhost(nil),
				vhost([]string{"*"}, toCluster(prefix(""), ""), withAction(prefix(""), weighted())),
			),
			wantErr: "virtual_hosts[0].domains: must be non-empty|" +
				"virtual_hosts[1].routes[0].route.cluster: must be non-empty|" +
				"virtual_hosts[1].routes[1].route.weighted_clusters: total weight is 0",
		},
		{
			name:    "errors capped",
			msg:     manyBroken,
			wantErr: "virtual_hosts[63].domains: must be non-empty|and 6 more errors",
		},
		{
			name:    "malformed FilterConfig",
			msg:     withOverride("f", &anypb.Any{TypeUrl: "type.googleapis.com/envoy.config.route.v3.FilterConfig", Value: []byte{0x0a, 0xff}}),
			wantErr: "virtual_hosts[0].routes[0].typed_per_filter_config[f]: cannot parse FilterConfig",
		},
		{
			name:    "malformed TypedStruct",
			msg:     withOverride("f", &anypb.Any{TypeUrl: "type.googleapis.com/xds.type.v3.TypedStruct", Value: []byte{0x0a, 0xff}}),
			wantErr: "virtual_hosts[0].routes[0].typed_per_filter_config[f]: cannot parse TypedStruct",
		},
		{
			name:    "not a RouteConfiguration",
			raw:     []byte{0x0a, 0x05, 'a'},
			wantErr: "cannot parse RouteConfiguration",
		},
	}
}

func allCases() []testCase { return append(validCases(), invalidCases()...) }

func marshal(c testCase) []byte {
	if c.raw != nil {
		return c.raw
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.msg)
	if err != nil {
		panic(fmt.Sprintf("case %q: %v", c.name, err))
	}
	return b
}
