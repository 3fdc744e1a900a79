package xdsgrpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

// pinned is a custom LB policy: every RPC goes to the endpoint at the
// configured index, through grpc-go's pick_first.
type pinnedBuilder struct{}

type pinnedConfig struct {
	serviceconfig.LoadBalancingConfig
	Index int `json:"index"`
}

func (pinnedBuilder) Name() string { return "myorg.Pinned" }

func (pinnedBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	var c pinnedConfig
	if err := json.Unmarshal(js, &c); err != nil {
		return nil, err
	}
	if c.Index < 0 {
		return nil, fmt.Errorf("index %d < 0", c.Index)
	}
	return &c, nil
}

func (pinnedBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &pinned{Balancer: balancer.Get("pick_first").Build(cc, opts)}
}

type pinned struct{ balancer.Balancer }

func (p *pinned) UpdateClientConnState(s balancer.ClientConnState) error {
	i := s.BalancerConfig.(*pinnedConfig).Index
	eps := s.ResolverState.Endpoints
	if i >= len(eps) {
		return balancer.ErrBadResolverState
	}
	return p.Balancer.UpdateClientConnState(balancer.ClientConnState{ResolverState: resolver.State{Endpoints: eps[i : i+1]}})
}

func typedStruct(typeURL string, fields map[string]any) *anypb.Any {
	v, err := structpb.NewStruct(fields)
	if err != nil {
		panic(err)
	}
	return mustAny(&xdstypepb.TypedStruct{TypeUrl: typeURL, Value: v})
}

// TestCustomPolicy: a Cluster's load_balancing_policy naming a policy
// registered with the builder (a TypedStruct, gRFC A52) runs it, with its
// config.
func TestCustomPolicy(t *testing.T) {
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	policy := xdsgrpc.Policy{TypeURL: "type.googleapis.com/myorg.Pinned", Builder: pinnedBuilder{}}
	srv := xdstest.NewServer(t, xdstest.Options{})
	reg, err := xdsgrpc.Registry([]xdsgrpc.Policy{policy}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, srv, func(c *engine.Config) { c.Registry = reg })
	bld := newBuilder(t, xdsgrpc.Options{Source: e, Policies: []xdsgrpc.Policy{policy}})
	pin := func(i int) func(*clusterpb.Cluster) {
		return func(c *clusterpb.Cluster) {
			c.LoadBalancingPolicy = &clusterpb.LoadBalancingPolicy{Policies: []*clusterpb.LoadBalancingPolicy_Policy{{
				TypedExtensionConfig: &corepb.TypedExtensionConfig{Name: "pinned", TypedConfig: typedStruct("type.googleapis.com/myorg.Pinned", map[string]any{"index": i})},
			}}}
		}
	}
	set := func(i int) {
		srv.Set(basic(routeConfig(toCluster(prefix(""), "c1")), cluster("c1", pin(i)),
			endpoints("c1", xdstest.Locality{Zone: "z", Endpoints: addrs(a, b, c)}))...)
	}
	set(1)
	cc := dial(t, bld, "xdsengine:///svc")
	if got := spread(t, cc, 10, testMethod); got["b"] != 10 {
		t.Fatalf("10 RPCs went %v, want all to the pinned endpoint b", got)
	}
	set(2)
	waitForBackend(t, cc, "c")
}

// addHeader is a custom HTTP filter: its interceptor adds a header, whose
// value the Listener's config sets and a route's config overrides.
var addHeader = xdsgrpc.Filter{
	TypeURL: "type.googleapis.com/myorg.AddHeader",
	Build: func(config, override *anypb.Any) (xdsgrpc.Interceptor, error) {
		cfg := config
		if override != nil {
			cfg = override
		}
		var ts xdstypepb.TypedStruct
		if err := cfg.UnmarshalTo(&ts); err != nil {
			return xdsgrpc.Interceptor{}, err
		}
		value := ts.GetValue().GetFields()["value"].GetStringValue()
		return xdsgrpc.Interceptor{
			Unary: func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				return invoker(metadata.AppendToOutgoingContext(ctx, "x-added", value), method, req, reply, cc, opts...)
			},
		}, nil
	},
}

// listenerWithFilter is an API listener on RDS whose HTTP filters are an
// optional filter of type addHeader, then the router.
func listenerWithFilter(name, routeConfig, value string) *listenerpb.Listener {
	l := xdstest.Listener(name, routeConfig)
	var hcm hcmpb.HttpConnectionManager
	if err := l.ApiListener.ApiListener.UnmarshalTo(&hcm); err != nil {
		panic(err)
	}
	hcm.HttpFilters = []*hcmpb.HttpFilter{
		{Name: "add", IsOptional: true, ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: typedStruct(addHeader.TypeURL, map[string]any{"value": value})}},
		{Name: "router", ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerpb.Router{})}},
	}
	l.ApiListener.ApiListener = mustAny(&hcm)
	return l
}

// TestCustomFilter: an HTTP filter registered with the builder runs as a
// client interceptor on the RPCs of every route, with the Listener's
// config or the route's override; a channel without the builder's
// interceptors routes alike but runs no filter.
func TestCustomFilter(t *testing.T) {
	a := startBackend(t, "a")
	ev := newEnv(t, xdsgrpc.Options{Filters: []xdsgrpc.Filter{addHeader}})
	overridden := toCluster(prefix("/override."), "c1")
	// Optional, as the filter is: gRPC rejects configs of filters it
	// does not know unless they are.
	overridden.TypedPerFilterConfig = map[string]*anypb.Any{"add": mustAny(&routepb.FilterConfig{
		IsOptional: true, Config: typedStruct(addHeader.TypeURL, map[string]any{"value": "from-route"})})}
	routes := routeConfig(overridden, toCluster(prefix(""), "c1"))
	ev.srv.Set(
		xdstest.R("svc", listenerWithFilter("svc", "route", "from-listener")), xdstest.R("route", routes),
		cluster("c1"), endpoints("c1", xdstest.Locality{Zone: "z", Endpoints: addrs(a)}),
	)
	cc := dial(t, ev.b, "xdsengine:///svc")
	cases := []struct{ method, want string }{
		{testMethod, "from-listener"},
		{"/override.Service/Call", "from-route"},
	}
	for _, c := range cases {
		if got := spread(t, cc, 1, c.method); got["a"] != 1 {
			t.Fatalf("RPC %s went %v", c.method, got)
		}
		if got := a.lastSeen().Get("x-added"); len(got) != 1 || got[0] != c.want {
			t.Errorf("RPC %s reached the backend with x-added %q, want %q", c.method, got, c.want)
		}
	}
	plain, err := grpc.NewClient("xdsengine:///svc", grpc.WithResolvers(ev.b), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if got := spread(t, plain, 1, testMethod); got["a"] != 1 {
		t.Fatalf("RPC went %v", got)
	}
	if got := a.lastSeen().Get("x-added"); len(got) != 0 {
		t.Errorf("a channel without the builder's interceptors ran the filter: x-added %q", got)
	}
}

// structValue reads a string field of the TypedStruct in a.
func structValue(a *anypb.Any, field string) (string, error) {
	var ts xdstypepb.TypedStruct
	if err := a.UnmarshalTo(&ts); err != nil {
		return "", err
	}
	return ts.GetValue().GetFields()[field].GetStringValue(), nil
}

// TestCustomFilterNotOptional: with a registry that knows the filter
// (Registry with it), the engine accepts a Listener whose filter and a
// route's override of it are not optional; with the built-in types, the
// same Listener is NACKed, as gRPC's own client rejects it.
func TestCustomFilterNotOptional(t *testing.T) {
	for _, tc := range []struct {
		name     string
		filters  []xdsgrpc.Filter
		wantNACK bool
	}{
		{"registered", []xdsgrpc.Filter{addHeader}, false},
		{"unknown", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := startBackend(t, "a")
			srv := xdstest.NewServer(t, xdstest.Options{})
			e := newEngine(t, srv, func(c *engine.Config) {
				reg, err := xdsgrpc.Registry(nil, tc.filters)
				if err != nil {
					t.Fatal(err)
				}
				c.Registry = reg
			})
			b := newBuilder(t, xdsgrpc.Options{Source: e, Filters: []xdsgrpc.Filter{addHeader}})
			l := listenerWithFilter("svc", "route", "from-listener")
			var hcm hcmpb.HttpConnectionManager
			if err := l.ApiListener.ApiListener.UnmarshalTo(&hcm); err != nil {
				t.Fatal(err)
			}
			hcm.HttpFilters[0].IsOptional = false
			l.ApiListener.ApiListener = mustAny(&hcm)
			overridden := toCluster(prefix("/override."), "c1")
			overridden.TypedPerFilterConfig = map[string]*anypb.Any{"add": typedStruct(addHeader.TypeURL, map[string]any{"value": "from-route"})}
			srv.Set(
				xdstest.R("svc", l), xdstest.R("route", routeConfig(overridden, toCluster(prefix(""), "c1"))),
				cluster("c1"), endpoints("c1", xdstest.Locality{Zone: "z", Endpoints: addrs(a)}),
			)
			cc := dial(t, b, "xdsengine:///svc")
			if tc.wantNACK {
				cc.Connect() // the resolver starts with the channel
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := srv.WaitForRequest(ctx, xdstest.IsNACK(lds.TypeURL)); err != nil {
					t.Fatalf("the Listener with an unknown filter was not NACKed: %v", err)
				}
				return
			}
			for _, c := range []struct{ method, want string }{{testMethod, "from-listener"}, {"/override.Service/Call", "from-route"}} {
				if got := spread(t, cc, 1, c.method); got["a"] != 1 {
					t.Fatalf("RPC %s went %v", c.method, got)
				}
				if got := a.lastSeen().Get("x-added"); len(got) != 1 || got[0] != c.want {
					t.Errorf("RPC %s reached the backend with x-added %q, want %q", c.method, got, c.want)
				}
			}
		})
	}
}
