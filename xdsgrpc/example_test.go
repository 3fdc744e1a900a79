package xdsgrpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

// exampleWorld is what the examples run against: an embedded management
// server serving Listener "service" → cluster "backend" → two backends,
// "one" and "two", gRPC servers on loopback.
type exampleWorld struct {
	srv      *xdstest.Server
	backends []*grpc.Server
	addrs    []string
}

func newExampleWorld(mutate ...func(*clusterpb.Cluster)) *exampleWorld {
	srv, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	w := &exampleWorld{srv: srv}
	for _, name := range []string{"one", "two"} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		s := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			if err := stream.RecvMsg(&emptypb.Empty{}); err != nil {
				return err
			}
			md, _ := metadata.FromIncomingContext(stream.Context())
			stream.SetHeader(metadata.Pairs("backend", name, "tenant", fmt.Sprint(md.Get("tenant"))))
			return stream.SendMsg(&emptypb.Empty{})
		}))
		go s.Serve(lis)
		w.backends = append(w.backends, s)
		w.addrs = append(w.addrs, lis.Addr().String())
	}
	c := xdstest.Cluster("backend", "backend-endpoints")
	for _, m := range mutate {
		m(c)
	}
	srv.Set(
		xdstest.R("service", xdstest.Listener("service", "routes")),
		xdstest.R("routes", xdstest.RouteConfig("routes", "backend")),
		xdstest.R("backend", c),
		xdstest.R("backend-endpoints", xdstest.ClusterLoadAssignment("backend-endpoints", xdstest.Locality{Zone: "z", Endpoints: w.addrs})),
	)
	return w
}

func (w *exampleWorld) close() {
	for _, s := range w.backends {
		s.Stop()
	}
	w.srv.Close()
}

// engine is an engine on the world's server with the given registry.
func (w *exampleWorld) engine(reg *registry.Registry) *engine.Engine {
	bs, err := bootstrap.Parse(w.srv.Bootstrap(xdstest.BootstrapOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: reg})
	if err != nil {
		log.Fatal(err)
	}
	return e
}

// backendOf makes one RPC and returns the "backend" and "tenant" headers
// of the answer.
func backendOf(cc *grpc.ClientConn) (string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var hdr metadata.MD
	if err := cc.Invoke(ctx, "/example.Service/Call", &emptypb.Empty{}, &emptypb.Empty{}, grpc.Header(&hdr), grpc.WaitForReady(true)); err != nil {
		log.Fatal(err)
	}
	return hdr.Get("backend")[0], hdr.Get("tenant")[0]
}

// A program's channel routes by an engine it made itself.
func ExampleNewBuilder() {
	w := newExampleWorld()
	defer w.close()
	e := w.engine(builtin.Registry())
	defer e.Close()

	b, err := xdsgrpc.NewBuilder(xdsgrpc.Options{Source: e})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close() // before the engine: the builder reports load through it
	cc, err := b.NewClient("xdsengine:///service", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	// Round robin over the cluster's endpoints, once both are connected.
	seen := map[string]bool{}
	for len(seen) < 2 {
		backend, _ := backendOf(cc)
		seen[backend] = true
	}
	fmt.Println(seen)
	// Output: map[one:true two:true]
}

// With no source, the builder reads the bootstrap from the environment,
// as gRPC's own xDS client does, and gives each target an engine.
func ExampleNewBuilder_environment() {
	w := newExampleWorld()
	defer w.close()
	os.Setenv(bootstrap.EnvConfig, string(w.srv.Bootstrap(xdstest.BootstrapOptions{})))
	defer os.Unsetenv(bootstrap.EnvConfig)

	b, err := xdsgrpc.NewBuilder(xdsgrpc.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	cc, err := b.NewClient("xdsengine:///service", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	backend, _ := backendOf(cc)
	fmt.Println(backend == "one" || backend == "two")
	// Output: true
}

// A Builder is a grpc-go resolver.Builder: grpc.WithResolvers takes it.
func ExampleBuilder_Build() {
	w := newExampleWorld()
	defer w.close()
	e := w.engine(builtin.Registry())
	defer e.Close()
	b, err := xdsgrpc.NewBuilder(xdsgrpc.Options{Source: e})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	cc, err := grpc.NewClient("xdsengine:///service", grpc.WithResolvers(b), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	backend, _ := backendOf(cc)
	fmt.Println(b.Scheme(), backend == "one" || backend == "two")
	// Output: xdsengine true
}

// firstOnly is a load-balancing policy of a program's own: grpc-go's
// pick_first over the first endpoint only, or the last when configured.
type firstOnly struct{}

type firstOnlyConfig struct {
	serviceconfig.LoadBalancingConfig
	Last bool `json:"last"`
}

func (firstOnly) Name() string { return "example.FirstOnly" }

func (firstOnly) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	var c firstOnlyConfig
	return &c, json.Unmarshal(js, &c)
}

func (firstOnly) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return firstOnlyBalancer{balancer.Get("pick_first").Build(cc, opts)}
}

type firstOnlyBalancer struct{ balancer.Balancer }

func (b firstOnlyBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	eps := s.ResolverState.Endpoints
	if s.BalancerConfig.(*firstOnlyConfig).Last {
		eps = eps[len(eps)-1:]
	} else {
		eps = eps[:1]
	}
	s.ResolverState.Endpoints, s.BalancerConfig = eps, nil
	return b.Balancer.UpdateClientConnState(s)
}

// A Cluster selects a program's own policy with a TypedStruct in its
// load_balancing_policy (gRFC A52); the engine's registry must accept it
// (Registry), and the builder runs it (Options.Policies).
func ExamplePolicy() {
	policy := xdsgrpc.Policy{TypeURL: "type.googleapis.com/example.FirstOnly", Builder: firstOnly{}}
	w := newExampleWorld(func(c *clusterpb.Cluster) {
		c.LoadBalancingPolicy = &clusterpb.LoadBalancingPolicy{Policies: []*clusterpb.LoadBalancingPolicy_Policy{{
			TypedExtensionConfig: &corepb.TypedExtensionConfig{Name: "first-only", TypedConfig: typedStruct(policy.TypeURL, map[string]any{"last": true})},
		}}}
	})
	defer w.close()
	reg, err := xdsgrpc.Registry([]xdsgrpc.Policy{policy}, nil)
	if err != nil {
		log.Fatal(err)
	}
	e := w.engine(reg)
	defer e.Close()
	b, err := xdsgrpc.NewBuilder(xdsgrpc.Options{Source: e, Policies: []xdsgrpc.Policy{policy}})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	cc, err := b.NewClient("xdsengine:///service", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	for range 3 {
		backend, _ := backendOf(cc)
		fmt.Println(backend)
	}
	// Output:
	// two
	// two
	// two
}

// ClusterType is the Cluster type that accepts the program's policies,
// for a registry of its own making (with resource types of its own, say).
func ExampleClusterType() {
	policy := xdsgrpc.Policy{TypeURL: "type.googleapis.com/example.FirstOnly", Builder: firstOnly{}}
	types := builtin.Types()
	for i, t := range types {
		if t.TypeURL == cds.TypeURL {
			types[i] = xdsgrpc.ClusterType(policy)
		}
	}
	reg, err := registry.New(types...)
	if err != nil {
		log.Fatal(err)
	}
	t, _ := reg.Lookup(cds.TypeURL)
	fmt.Println(t.ShortName())
	// Output: Cluster
}

// An HTTP filter of the program's own runs as a client interceptor on
// channels made with NewClient. This one adds a "tenant" header, whose
// value the filter's config in the Listener sets; in a Listener, send it
// with is_optional, so that clients that do not know it skip it.
func ExampleFilter() {
	w := newExampleWorld()
	defer w.close()
	w.srv.Update("type.googleapis.com/envoy.config.listener.v3.Listener",
		xdstest.R("service", listenerWithFilter("service", "routes", "acme")))
	e := w.engine(builtin.Registry())
	defer e.Close()

	tenant := xdsgrpc.Filter{
		TypeURL: "type.googleapis.com/myorg.AddHeader",
		Build: func(config, override *anypb.Any) (xdsgrpc.Interceptor, error) {
			value, err := structValue(config, "value")
			if err != nil {
				return xdsgrpc.Interceptor{}, err
			}
			return xdsgrpc.Interceptor{Unary: func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				return invoker(metadata.AppendToOutgoingContext(ctx, "tenant", value), method, req, reply, cc, opts...)
			}}, nil
		},
	}
	b, err := xdsgrpc.NewBuilder(xdsgrpc.Options{Source: e, Filters: []xdsgrpc.Filter{tenant}})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	cc, err := b.NewClient("xdsengine:///service", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	_, seen := backendOf(cc)
	fmt.Println("the backend saw tenant", seen)
	// Output: the backend saw tenant [acme]
}

// newChannel makes a channel to service whose RPCs are routed by what src
// accepts (an engine, a Mux, ...; nil: the bootstrap in the environment),
// and the function that closes both.
func newChannel(src engine.Source, service string) (*grpc.ClientConn, func(), error) {
	b, err := xdsgrpc.NewBuilder(xdsgrpc.Options{Source: src})
	if err != nil {
		return nil, nil, err
	}
	cc, err := b.NewClient("xdsengine:///"+service, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	return cc, func() { cc.Close(); b.Close() }, nil
}

// The README's function: a channel routed by an engine.
func Example() {
	w := newExampleWorld()
	defer w.close()
	e := w.engine(builtin.Registry())
	defer e.Close()

	cc, closeChannel, err := newChannel(e, "service")
	if err != nil {
		log.Fatal(err)
	}
	defer closeChannel()
	backend, _ := backendOf(cc)
	fmt.Println(backend == "one" || backend == "two")
	// Output: true
}

// NewClient makes a channel that resolves with the builder; with a pool,
// each target gets an engine of its own (gRFC A71), shown by CSDS with
// the target as its client scope.
func ExampleBuilder_NewClient() {
	w := newExampleWorld()
	defer w.close()
	bs, err := bootstrap.Parse(w.srv.Bootstrap(xdstest.BootstrapOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	pool, err := engine.NewPool(engine.Config{Bootstrap: bs, Registry: builtin.Registry()})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	b, err := xdsgrpc.NewBuilder(xdsgrpc.Options{Pool: pool})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	cc, err := b.NewClient("xdsengine:///service", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	backendOf(cc)
	fmt.Println(pool.Targets())
	// Output: [xdsengine:///service]
}

// Registry is the built-in resource types with a Cluster type that
// accepts the program's policies, and Listener and RouteConfiguration
// types that accept its filters: what an engine whose resources use them
// needs.
func ExampleRegistry() {
	reg, err := xdsgrpc.Registry([]xdsgrpc.Policy{{TypeURL: "type.googleapis.com/example.FirstOnly", Builder: firstOnly{}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, url := range reg.TypeURLs() {
		t, _ := reg.Lookup(url)
		fmt.Println(t.ShortName())
	}
	// Output:
	// Cluster
	// ClusterLoadAssignment
	// LbEndpoint
	// LbEndpointCollection
	// Listener
	// RouteConfiguration
}
