//lint:file-ignore SA1019 the deprecated header matchers are still common on the wire

package rds_test

import (
	"fmt"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/rds"
)

// benchRouteConfig is a mesh-sized route table: 100 virtual hosts of 10
// routes each, mixing exact paths, prefixes, one regex per host, header
// matchers, weighted splits, hash and retry policies.
func benchRouteConfig() *routev3.RouteConfiguration {
	rc := &routev3.RouteConfiguration{Name: "mesh-routes"}
	for v := range 100 {
		svc := fmt.Sprintf("svc%03d", v)
		vh := &routev3.VirtualHost{
			Name:        svc,
			Domains:     []string{svc + ".mesh.example.com", svc + ".mesh.example.com:*", svc},
			RetryPolicy: &routev3.RetryPolicy{RetryOn: "unavailable,cancelled", NumRetries: wrapperspb.UInt32(2)},
		}
		for r := range 10 {
			route := &routev3.Route{Name: fmt.Sprintf("%s-r%d", svc, r), Match: &routev3.RouteMatch{}}
			switch r {
			case 0:
				route.Match.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/" + svc + `\.v[0-9]+\.Api/Get.*`}}
			case 9:
				route.Match.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: ""}
			default:
				route.Match.PathSpecifier = &routev3.RouteMatch_Path{Path: fmt.Sprintf("/%s.Api/Method%d", svc, r)}
			}
			if r%3 == 1 {
				route.Match.Headers = []*routev3.HeaderMatcher{
					{Name: "x-canary", HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: "true"}},
					{Name: "x-tenant", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
						MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "team-"},
					}}},
				}
			}
			action := &routev3.RouteAction{
				MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: durationpb.New(30 * time.Second)},
			}
			if r%5 == 2 {
				action.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{
					Clusters: []*routev3.WeightedCluster_ClusterWeight{
						{Name: svc + "-stable", Weight: wrapperspb.UInt32(90)},
						{Name: svc + "-canary", Weight: wrapperspb.UInt32(10)},
					},
				}}
			} else {
				action.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: svc + "-stable"}
			}
			if r == 9 {
				action.HashPolicy = []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{
					Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: "x-session"},
				}}}
			}
			route.Action = &routev3.Route_Route{Route: action}
			vh.Routes = append(vh.Routes, route)
		}
		rc.VirtualHosts = append(rc.VirtualHosts, vh)
	}
	return rc
}

// BenchmarkDecode compares decoding and validating a route table with
// just unmarshaling it.
func BenchmarkDecode(b *testing.B) {
	raw, err := proto.Marshal(benchRouteConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if err := proto.Unmarshal(raw, new(routev3.RouteConfiguration)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Type.Decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := rds.Type.Decode(raw, registry.DecodeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
