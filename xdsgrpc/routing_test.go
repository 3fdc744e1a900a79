package xdsgrpc_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/types/rds"
	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

func header(name string, m *routepb.HeaderMatcher) *routepb.HeaderMatcher {
	m.Name = name
	return m
}

func str(sm *matcherpb.StringMatcher) *routepb.HeaderMatcher {
	return &routepb.HeaderMatcher{HeaderMatchSpecifier: &routepb.HeaderMatcher_StringMatch{StringMatch: sm}}
}

func withHeaders(m *routepb.RouteMatch, hs ...*routepb.HeaderMatcher) *routepb.RouteMatch {
	m.Headers = hs
	return m
}

func inverted(m *routepb.HeaderMatcher) *routepb.HeaderMatcher {
	m.InvertMatch = true
	return m
}

func fraction(m *routepb.RouteMatch, percent uint32) *routepb.RouteMatch {
	m.RuntimeFraction = &corepb.RuntimeFractionalPercent{DefaultValue: &typepb.FractionalPercent{Numerator: percent, Denominator: typepb.FractionalPercent_HUNDRED}}
	return m
}

// rpc is one RPC of a routing case and where it must go: a backend, or
// a status code.
type rpc struct {
	method string
	md     []string
	want   string
	code   codes.Code
}

// TestRouting: the first route whose path, headers and runtime fraction
// all match takes the RPC (gRFC A28), on a real channel to real backends.
// Each case has a Listener of its own on one management server.
func TestRouting(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	exact := func(v string) *routepb.HeaderMatcher {
		return str(&matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Exact{Exact: v}})
	}
	const other = "/other.Service/Call"
	cases := []struct {
		name   string
		routes []*routepb.Route
		rpcs   []rpc
	}{
		{"prefix", []*routepb.Route{toCluster(prefix("/test."), "ca"), toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, want: "a"}, {method: other, want: "b"}}},
		{"exact path, case-insensitive",
			[]*routepb.Route{toCluster(&routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Path{Path: "/TEST.service/call"}, CaseSensitive: wrapperspb.Bool(false)}, "ca"), toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, want: "a"}, {method: "/test.Service/Call2", want: "b"}}},
		{"exact path, case-sensitive",
			[]*routepb.Route{toCluster(&routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Path{Path: "/TEST.service/call"}}, "ca"), toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, want: "b"}}},
		{"prefix, case-insensitive",
			[]*routepb.Route{toCluster(&routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/TEST."}, CaseSensitive: wrapperspb.Bool(false)}, "ca"), toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, want: "a"}, {method: other, want: "b"}}},
		{"regex path, whole path",
			[]*routepb.Route{toCluster(&routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_SafeRegex{SafeRegex: &matcherpb.RegexMatcher{Regex: `/test\.[A-Z]\w+/C.ll`}}}, "ca"),
				toCluster(&routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_SafeRegex{SafeRegex: &matcherpb.RegexMatcher{Regex: `/other`}}}, "ca"),
				toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, want: "a"}, {method: other, want: "b"}}},
		{"first match wins",
			[]*routepb.Route{toCluster(prefix("/test."), "cb"), toCluster(&routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Path{Path: testMethod}}, "ca")},
			[]rpc{{method: testMethod, want: "b"}}},
		{"header exact",
			[]*routepb.Route{toCluster(withHeaders(prefix(""), header("x-user", exact("alice"))), "ca"), toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, md: []string{"x-user", "alice"}, want: "a"}, {method: testMethod, md: []string{"x-user", "bob"}, want: "b"}, {method: testMethod, want: "b"}}},
		{"header exact ignoring case, several values joined",
			[]*routepb.Route{toCluster(withHeaders(prefix(""), header("x-user", str(&matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Exact{Exact: "ALICE,BOB"}, IgnoreCase: true}))), "ca"), toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, md: []string{"x-user", "alice", "x-user", "bob"}, want: "a"}, {method: testMethod, md: []string{"x-user", "alice"}, want: "b"}}},
		{"header prefix, suffix, contains",
			[]*routepb.Route{toCluster(withHeaders(prefix(""),
				header("x-p", str(&matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Prefix{Prefix: "ab"}})),
				header("x-s", str(&matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Suffix{Suffix: "yz"}})),
				header("x-c", str(&matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Contains{Contains: "mid"}, IgnoreCase: true})),
			), "ca"), toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, md: []string{"x-p", "abc", "x-s", "xyz", "x-c", "aMIDb"}, want: "a"},
				{method: testMethod, md: []string{"x-p", "xabc", "x-s", "xyz", "x-c", "mid"}, want: "b"},
				{method: testMethod, md: []string{"x-p", "abc", "x-s", "xyz"}, want: "b"}}},
		{"header regex",
			[]*routepb.Route{toCluster(withHeaders(prefix(""), header("x-id", str(&matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_SafeRegex{SafeRegex: &matcherpb.RegexMatcher{Regex: `[0-9]+`}}}))), "ca"), toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, md: []string{"x-id", "123"}, want: "a"}, {method: testMethod, md: []string{"x-id", "12a"}, want: "b"}}},
		{"header present, and inverted",
			[]*routepb.Route{toCluster(withHeaders(prefix(""), header("x-a", &routepb.HeaderMatcher{HeaderMatchSpecifier: &routepb.HeaderMatcher_PresentMatch{PresentMatch: true}})), "ca"),
				toCluster(withHeaders(prefix(""), inverted(header("x-b", &routepb.HeaderMatcher{HeaderMatchSpecifier: &routepb.HeaderMatcher_PresentMatch{PresentMatch: true}}))), "cb")},
			[]rpc{{method: testMethod, md: []string{"x-a", ""}, want: "a"}, {method: testMethod, want: "b"}, {method: testMethod, md: []string{"x-b", "1"}, code: codes.Unavailable}}},
		{"header range, and inverted exact",
			[]*routepb.Route{toCluster(withHeaders(prefix(""), header("x-n", &routepb.HeaderMatcher{HeaderMatchSpecifier: &routepb.HeaderMatcher_RangeMatch{RangeMatch: &typepb.Int64Range{Start: 10, End: 20}}})), "ca"),
				toCluster(withHeaders(prefix(""), inverted(header("x-n", exact("5")))), "cb")},
			[]rpc{{method: testMethod, md: []string{"x-n", "10"}, want: "a"}, {method: testMethod, md: []string{"x-n", "20"}, want: "b"},
				{method: testMethod, md: []string{"x-n", "5"}, code: codes.Unavailable},
				// An absent header fails an inverted matcher, as in grpc-go.
				{method: testMethod, code: codes.Unavailable}}},
		{"content-type is application/grpc, binary headers are absent",
			[]*routepb.Route{toCluster(withHeaders(prefix(""), header("content-type", exact("application/grpc"))), "ca"), toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, want: "a"}}},
		{"binary header never matches",
			[]*routepb.Route{toCluster(withHeaders(prefix(""), header("x-data-bin", &routepb.HeaderMatcher{HeaderMatchSpecifier: &routepb.HeaderMatcher_PresentMatch{PresentMatch: true}})), "ca"), toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, md: []string{"x-data-bin", "\x00\x01"}, want: "b"}}},
		{"runtime fraction 0 and 100",
			[]*routepb.Route{toCluster(fraction(prefix(""), 0), "ca"), toCluster(fraction(prefix(""), 100), "cb")},
			[]rpc{{method: testMethod, want: "b"}, {method: testMethod, want: "b"}, {method: testMethod, want: "b"}}},
		{"non-forwarding action fails with UNAVAILABLE",
			[]*routepb.Route{{Match: prefix("/test."), Action: &routepb.Route_NonForwardingAction{NonForwardingAction: &routepb.NonForwardingAction{}}}, toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, code: codes.Unavailable}, {method: other, want: "b"}}},
		{"redirect fails with UNAVAILABLE",
			[]*routepb.Route{{Match: prefix(""), Action: &routepb.Route_Redirect{Redirect: &routepb.RedirectAction{HostRedirect: "x"}}}},
			[]rpc{{method: testMethod, code: codes.Unavailable}}},
		{"no route matches",
			[]*routepb.Route{toCluster(prefix("/nothing."), "ca")},
			[]rpc{{method: testMethod, code: codes.Unavailable}}},
		{"a route gRPC ignores (cluster_header) is skipped",
			[]*routepb.Route{{Match: prefix(""), Action: &routepb.Route_Route{Route: &routepb.RouteAction{ClusterSpecifier: &routepb.RouteAction_ClusterHeader{ClusterHeader: "x-cluster"}}}}, toCluster(prefix(""), "cb")},
			[]rpc{{method: testMethod, want: "b"}}},
		{"weighted clusters, one with weight 0",
			[]*routepb.Route{weighted(prefix(""), "ca", 0, "cb", 5)},
			[]rpc{{method: testMethod, want: "b"}, {method: testMethod, want: "b"}}},
	}
	ev := newEnv(t, xdsgrpc.Options{})
	resources := []xdstest.Resource{
		cluster("ca"), endpoints("ca", xdstest.Locality{Zone: "z", Endpoints: addrs(a)}),
		cluster("cb"), endpoints("cb", xdstest.Locality{Zone: "z", Endpoints: addrs(b)}),
	}
	for i, c := range cases {
		lis, rc := fmt.Sprintf("svc-%d", i), fmt.Sprintf("route-%d", i)
		routes := routeConfig(c.routes...)
		routes.Name = rc
		resources = append(resources, xdstest.R(lis, xdstest.Listener(lis, rc)), xdstest.R(rc, routes))
	}
	ev.srv.Set(resources...)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc := dial(t, ev.b, fmt.Sprintf("xdsengine:///svc-%d", i))
			for _, r := range c.rpcs {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				got, err := call(ctx, cc, r.method, r.md...)
				cancel()
				switch {
				case r.code != codes.OK && status.Code(err) != r.code:
					t.Errorf("RPC %s %v: got %q, %v; want code %v", r.method, r.md, got, err, r.code)
				case r.code == codes.OK && (err != nil || got != r.want):
					t.Errorf("RPC %s %v: got %q, %v; want backend %q", r.method, r.md, got, err, r.want)
				}
			}
		})
	}
}

// TestWeightedClusters: an 80/20 split sends 80 % and 20 % of 1,000 RPCs
// to its clusters, within a few RPCs: the split is walked in a
// low-discrepancy sequence, not drawn at random.
func TestWeightedClusters(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	ev := newEnv(t, xdsgrpc.Options{})
	ev.srv.Set(basic(routeConfig(weighted(prefix(""), "ca", 80, "cb", 20)),
		cluster("ca"), endpoints("ca", xdstest.Locality{Zone: "z", Endpoints: addrs(a)}),
		cluster("cb"), endpoints("cb", xdstest.Locality{Zone: "z", Endpoints: addrs(b)}))...)
	cc := dial(t, ev.b, "xdsengine:///svc")
	got := spread(t, cc, 1000, testMethod)
	if math.Abs(float64(got["a"])-800) > 5 || got["a"]+got["b"] != 1000 {
		t.Fatalf("1,000 RPCs went %s, want 80 %% / 20 %% within 5 RPCs", shares(got))
	}
}

// TestInlineRoutes: a Listener that carries its route configuration
// inline routes by it, with no RDS watch.
func TestInlineRoutes(t *testing.T) {
	a := startBackend(t, "a")
	ev := newEnv(t, xdsgrpc.Options{})
	l := xdstest.Listener("svc", "unused")
	var hcm hcmpb.HttpConnectionManager
	if err := l.ApiListener.ApiListener.UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	hcm.RouteSpecifier = &hcmpb.HttpConnectionManager_RouteConfig{RouteConfig: routeConfig(toCluster(prefix(""), "ca"))}
	l.ApiListener.ApiListener = mustAny(&hcm)
	ev.srv.Set(xdstest.R("svc", l), cluster("ca"), endpoints("ca", xdstest.Locality{Zone: "z", Endpoints: addrs(a)}))
	if got := spread(t, dial(t, ev.b, "xdsengine:///svc"), 5, testMethod); got["a"] != 5 {
		t.Fatalf("5 RPCs went %v, want backend a", got)
	}
	for _, r := range ev.srv.Requests() {
		if r.GetTypeUrl() == rds.TypeURL && len(r.GetResourceNames()) > 0 {
			t.Fatalf("the channel asked for RouteConfigurations %v", r.GetResourceNames())
		}
	}
}
