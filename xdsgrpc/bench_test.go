package xdsgrpc_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/xds"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

// BenchmarkRPC is the cost of one unary RPC on loopback through each
// client, on the comparison's header-routed Listener (two routes, one
// header matcher, round robin over two backends), and through a channel
// to the same two backends without xDS (round robin, a manual resolver):
// what each client adds to an RPC is its cost minus the direct one's. cpu-ns/op is the process's CPU time per RPC,
// the backend's included.
func BenchmarkRPC(b *testing.B) {
	c := newComparison(b)
	// The same two backends, round robin, without xDS.
	r := manual.NewBuilderWithScheme("direct")
	r.InitialState(resolver.State{Endpoints: []resolver.Endpoint{
		{Addresses: []resolver.Address{{Addr: c.backends["g1"].addr}}},
		{Addresses: []resolver.Address{{Addr: c.backends["g2"].addr}}},
	}})
	direct, err := grpc.NewClient("direct:///", grpc.WithResolvers(r), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	for _, cl := range []struct {
		name string
		cc   *grpc.ClientConn
	}{{"direct", direct}, {"xdsgrpc", c.ours(b, "headers")}, {"grpc-go", c.grpcGo(b, "headers")}} {
		b.Run(cl.name, func(b *testing.B) {
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-subset", "gold")
			in, out := &emptypb.Empty{}, &emptypb.Empty{}
			if err := cl.cc.Invoke(ctx, testMethod, in, out, grpc.WaitForReady(true)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, ok := processCPU()
			for b.Loop() {
				if err := cl.cc.Invoke(ctx, testMethod, in, out); err != nil {
					b.Fatal(err)
				}
			}
			if cpu1, ok1 := processCPU(); ok && ok1 {
				b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// BenchmarkFirstRPC is a cold channel's time to its first RPC: a new xDS
// client (engine) connects to the management server, resolves Listener,
// RouteConfiguration, Cluster and endpoints, connects to a backend and
// completes an RPC.
func BenchmarkFirstRPC(b *testing.B) {
	c := newComparison(b)
	b.Run("xdsgrpc", func(b *testing.B) {
		for b.Loop() {
			e := newEngine(b, c.srv, nil)
			bld, err := xdsgrpc.NewBuilder(xdsgrpc.Options{Source: e})
			if err != nil {
				b.Fatal(err)
			}
			cc, err := bld.NewClient("xdsengine:///headers", grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			firstRPC(b, cc)
			cc.Close()
			bld.Close()
			e.Close()
		}
	})
	b.Run("grpc-go", func(b *testing.B) {
		bs := c.srv.Bootstrap(xdstest.BootstrapOptions{NodeID: "grpc-go"})
		for b.Loop() {
			r, err := xds.NewXDSResolverWithConfigForTesting(bs)
			if err != nil {
				b.Fatal(err)
			}
			cc, err := grpc.NewClient("xds:///headers", grpc.WithResolvers(r), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			firstRPC(b, cc)
			cc.Close()
		}
	})
}

func firstRPC(b *testing.B, cc *grpc.ClientConn) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cc.Invoke(ctx, testMethod, &emptypb.Empty{}, &emptypb.Empty{}, grpc.WaitForReady(true)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEDSChange is the time from an EDS change (priority 0's
// endpoint going UNHEALTHY, or coming back) to RPCs moving, for both
// clients watching the same server at once.
func BenchmarkEDSChange(b *testing.B) {
	c := newComparison(b)
	ours, theirs := c.ours(b, "prio"), c.grpcGo(b, "prio")
	var sum [2]time.Duration
	healthy := true
	for b.Loop() {
		healthy = !healthy
		want := "p0"
		if !healthy {
			want = "p1"
		}
		d := timeToMove(b, func() { c.prio(healthy) }, want, ours, theirs)
		sum[0] += d[0]
		sum[1] += d[1]
	}
	b.ReportMetric(float64(sum[0].Microseconds())/float64(b.N), "xdsgrpc-µs/change")
	b.ReportMetric(float64(sum[1].Microseconds())/float64(b.N), "grpc-go-µs/change")
}
