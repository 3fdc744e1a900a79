package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "grpcclient:", err)
		os.Exit(1)
	}
}

const method = "/greeter.Greeter/Hello"

// run tells the story on out.
func run(ctx context.Context, out io.Writer) error {
	// Four backends on loopback, each naming itself in its answers.
	addrs := map[string]string{}
	for _, name := range []string{"stable-1", "stable-2", "stable-backup", "canary"} {
		addr, stop, err := serveBackend(name)
		if err != nil {
			return err
		}
		defer stop()
		addrs[name] = addr
	}

	// The control plane: an embedded management server.
	srv, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		return err
	}
	defer srv.Close()
	srv.Set(configuration(addrs, corepb.HealthStatus_HEALTHY)...)

	// The client: an engine on the server, and a grpc-go channel that
	// resolves "xdsengine:///greeter.example" through it.
	bs, err := bootstrap.Parse(srv.Bootstrap(xdstest.BootstrapOptions{}))
	if err != nil {
		return err
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry()})
	if err != nil {
		return err
	}
	defer e.Close()
	b, err := xdsgrpc.NewBuilder(xdsgrpc.Options{Source: e})
	if err != nil {
		return err
	}
	defer b.Close()
	cc, err := b.NewClient("xdsengine:///greeter.example", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()

	if err := waitFor(ctx, cc, nil, "stable-1", "stable-2", "canary"); err != nil {
		return err
	}
	fmt.Fprintln(out, "weighted split, stable 90 / canary 10:")
	if err := report(ctx, out, cc, 100, nil); err != nil {
		return err
	}
	fmt.Fprintln(out, "with header x-canary: yes:")
	if err := report(ctx, out, cc, 100, []string{"x-canary", "yes"}); err != nil {
		return err
	}

	srv.Set(configuration(addrs, corepb.HealthStatus_UNHEALTHY)...)
	if err := waitFor(ctx, cc, []string{"x-canary", "no"}, "stable-backup"); err != nil {
		return err
	}
	fmt.Fprintln(out, "stable's priority 0 endpoints UNHEALTHY, priority 1 takes over:")
	if err := report(ctx, out, cc, 100, []string{"x-canary", "no"}); err != nil {
		return err
	}

	srv.Set(configuration(addrs, corepb.HealthStatus_HEALTHY)...)
	if err := waitFor(ctx, cc, []string{"x-canary", "no"}, "stable-1", "stable-2"); err != nil {
		return err
	}
	fmt.Fprintln(out, "priority 0 healthy again, traffic returns:")
	return report(ctx, out, cc, 100, []string{"x-canary", "no"})
}

// configuration is the control plane's state: Listener greeter.example
// routes RPCs with x-canary: yes to cluster canary, and splits the rest
// 90/10 between stable and canary; stable's priority 0 endpoints have
// health status h, and stable-backup is its priority 1.
func configuration(addrs map[string]string, h corepb.HealthStatus) []xdstest.Resource {
	pinned := &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"}, Headers: []*routepb.HeaderMatcher{{
		Name: "x-canary",
		HeaderMatchSpecifier: &routepb.HeaderMatcher_StringMatch{StringMatch: &matcherpb.StringMatcher{
			MatchPattern: &matcherpb.StringMatcher_Exact{Exact: "yes"}}},
	}}}
	split := &routepb.WeightedCluster{Clusters: []*routepb.WeightedCluster_ClusterWeight{
		{Name: "stable", Weight: wrapperspb.UInt32(90)},
		{Name: "canary", Weight: wrapperspb.UInt32(10)},
	}}
	routes := &routepb.RouteConfiguration{Name: "greeter-routes", VirtualHosts: []*routepb.VirtualHost{{
		Name: "greeter", Domains: []string{"greeter.example"},
		Routes: []*routepb.Route{
			{Match: pinned, Action: &routepb.Route_Route{Route: &routepb.RouteAction{ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: "canary"}}}},
			{Match: &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routepb.Route_Route{Route: &routepb.RouteAction{ClusterSpecifier: &routepb.RouteAction_WeightedClusters{WeightedClusters: split}}}},
		},
	}}}
	stable := xdstest.ClusterLoadAssignment("stable-endpoints",
		xdstest.Locality{Zone: "a", Priority: 0, Endpoints: []string{addrs["stable-1"], addrs["stable-2"]}},
		xdstest.Locality{Zone: "b", Priority: 1, Endpoints: []string{addrs["stable-backup"]}})
	for _, e := range stable.Endpoints[0].LbEndpoints {
		e.HealthStatus = h
	}
	return []xdstest.Resource{
		xdstest.R("greeter.example", xdstest.Listener("greeter.example", "greeter-routes")),
		xdstest.R("greeter-routes", routes),
		xdstest.R("stable", xdstest.Cluster("stable", "stable-endpoints")),
		xdstest.R("stable-endpoints", stable),
		xdstest.R("canary", xdstest.Cluster("canary", "canary-endpoints")),
		xdstest.R("canary-endpoints", xdstest.ClusterLoadAssignment("canary-endpoints", xdstest.Locality{Zone: "a", Endpoints: []string{addrs["canary"]}})),
	}
}

// hello makes one RPC and returns the backend that answered.
func hello(ctx context.Context, cc *grpc.ClientConn, md []string) (string, error) {
	if md != nil {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	var hdr metadata.MD
	if err := cc.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{}, grpc.Header(&hdr), grpc.WaitForReady(true)); err != nil {
		return "", err
	}
	return strings.Join(hdr.Get("backend"), ","), nil
}

// report makes n RPCs and prints how many each backend took, to the
// nearest 5: the split is exact over any 100 picks in a row to within an
// RPC, and so is round robin, but where a batch starts in either depends
// on the RPCs before it.
func report(ctx context.Context, out io.Writer, cc *grpc.ClientConn, n int, md []string) error {
	counts := map[string]int{}
	for range n {
		b, err := hello(ctx, cc, md)
		if err != nil {
			return err
		}
		counts[b]++
	}
	var names []string
	for name := range counts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(out, "  %-14s ~%d\n", name, (counts[name]+2)/5*5)
	}
	return nil
}

// waitFor makes RPCs until each of the backends has answered one: the
// channel follows a change within milliseconds, and round robin only
// uses endpoints once they are connected.
func waitFor(ctx context.Context, cc *grpc.ClientConn, md []string, backends ...string) error {
	seen := map[string]bool{}
	for {
		b, err := hello(ctx, cc, md)
		if err != nil {
			return err
		}
		seen[b] = true
		all := true
		for _, want := range backends {
			all = all && seen[want]
		}
		if all {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// serveBackend starts a gRPC server on loopback that answers every
// method, naming itself in the "backend" header.
func serveBackend(name string) (addr string, stop func(), err error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	s := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		if err := stream.RecvMsg(&emptypb.Empty{}); err != nil {
			return err
		}
		if err := stream.SetHeader(metadata.Pairs("backend", name)); err != nil {
			return err
		}
		return stream.SendMsg(&emptypb.Empty{})
	}))
	go s.Serve(lis)
	return lis.Addr().String(), s.Stop, nil
}
