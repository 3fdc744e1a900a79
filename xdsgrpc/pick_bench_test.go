package xdsgrpc

import (
	"context"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/metadata"

	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// leafPicker stands for grpc-go's round_robin picker, so that what is
// measured is this package's own share of a pick.
type leafPicker struct{ n atomic.Uint64 }

func (p *leafPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	p.n.Add(1)
	return balancer.PickResult{}, nil
}

// BenchmarkPick is this package's share of one pick: the route (first
// match), the cluster (weighted), drops and circuit breaking; grpc-go's
// leaf picker is stubbed out.
func BenchmarkPick(b *testing.B) {
	gold := rds.HeaderMatcher{Name: "x-subset", Kind: rds.HeaderMatchExact, Value: "gold"}
	cases := []struct {
		name   string
		routes []rds.Route
		md     []string
	}{
		{"prefix", []rds.Route{
			{Match: rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchPrefix, Pattern: "/other."}}, Action: rds.RouteAction{Kind: rds.ActionCluster, Cluster: "a"}},
			{Match: rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchPrefix, Pattern: "/"}}, Action: rds.RouteAction{Kind: rds.ActionCluster, Cluster: "b"}},
		}, nil},
		{"header", []rds.Route{
			{Match: rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchPrefix}, Headers: []rds.HeaderMatcher{gold}}, Action: rds.RouteAction{Kind: rds.ActionCluster, Cluster: "a"}},
			{Match: rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchPrefix}}, Action: rds.RouteAction{Kind: rds.ActionCluster, Cluster: "b"}},
		}, []string{"x-subset", "gold"}},
		{"weighted", []rds.Route{
			{Match: rds.RouteMatch{Path: rds.PathMatcher{Kind: rds.PathMatchPrefix}}, Action: rds.RouteAction{Kind: rds.ActionWeightedClusters,
				WeightedClusters: []rds.WeightedCluster{{Name: "a", Weight: 80}, {Name: "b", Weight: 20}}}},
		}, nil},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cfg := &channelConfig{env: &env{}}
			index := map[string]int{}
			for i := range c.routes {
				r, err := compileRoute(&c.routes[i], i, func(name string) int {
					if _, ok := index[name]; !ok {
						index[name] = len(cfg.clusters)
						cfg.clusters = append(cfg.clusters, &clusterConfig{name: name, cluster: &cds.Cluster{Name: name, MaxRequests: 1024}})
					}
					return index[name]
				})
				if err != nil {
					b.Fatal(err)
				}
				cfg.routes = append(cfg.routes, r)
			}
			p := &picker{cfg: cfg}
			for _, cl := range cfg.clusters {
				counter := new(atomic.Int64)
				p.clusters = append(p.clusters, &implPicker{child: &leafPicker{}, cfg: cl, counter: counter, max: 1024,
					release: func(balancer.DoneInfo) { counter.Add(-1) }})
			}
			ctx := context.Background()
			if c.md != nil {
				ctx = metadata.AppendToOutgoingContext(ctx, c.md...)
			}
			info := balancer.PickInfo{FullMethodName: "/test.Service/Call", Ctx: ctx}
			b.ReportAllocs()
			for b.Loop() {
				res, err := p.Pick(info)
				if err != nil {
					b.Fatal(err)
				}
				res.Done(balancer.DoneInfo{})
			}
		})
	}
}
