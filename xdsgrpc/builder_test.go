package xdsgrpc_test

import (
	"errors"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/roundrobin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

// TestNewBuilderErrors: options that cannot work fail NewBuilder with a
// status code that says whose mistake it is.
func TestNewBuilderErrors(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	e := newEngine(t, srv, nil)
	pool, err := engine.NewPool(engine.Config{Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(srv.Addr())}}, Registry: mustRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rr := balancer.Get(roundrobin.Name)
	build := func(*anypb.Any, *anypb.Any) (xdsgrpc.Interceptor, error) { return xdsgrpc.Interceptor{}, nil }
	cases := []struct {
		name  string
		opts  xdsgrpc.Options
		env   string // GRPC_XDS_BOOTSTRAP_CONFIG
		code  codes.Code
		isErr error
	}{
		{name: "source and pool", opts: xdsgrpc.Options{Source: e, Pool: pool}, code: codes.InvalidArgument},
		{name: "policy without type", opts: xdsgrpc.Options{Source: e, Policies: []xdsgrpc.Policy{{Builder: rr}}}, code: codes.InvalidArgument},
		{name: "policy without builder", opts: xdsgrpc.Options{Source: e, Policies: []xdsgrpc.Policy{{TypeURL: "type.googleapis.com/a.B"}}}, code: codes.InvalidArgument},
		{name: "policy twice", opts: xdsgrpc.Options{Source: e, Policies: []xdsgrpc.Policy{{TypeURL: "x/a.B", Builder: rr}, {TypeURL: "y/a.B", Builder: rr}}}, code: codes.InvalidArgument},
		{name: "filter without Build", opts: xdsgrpc.Options{Source: e, Filters: []xdsgrpc.Filter{{TypeURL: "x/a.F"}}}, code: codes.InvalidArgument},
		{name: "filter twice", opts: xdsgrpc.Options{Source: e, Filters: []xdsgrpc.Filter{{TypeURL: "x/a.F", Build: build}, {TypeURL: "x/a.F", Build: build}}}, code: codes.InvalidArgument},
		{name: "no bootstrap in the environment", code: codes.FailedPrecondition, isErr: bootstrap.ErrNotSet},
		{name: "a bootstrap that does not parse", env: `{"xds_servers": []}`, code: codes.InvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(bootstrap.EnvFile, "")
			t.Setenv(bootstrap.EnvConfig, c.env)
			b, err := xdsgrpc.NewBuilder(c.opts)
			if err == nil {
				b.Close()
				t.Fatal("NewBuilder succeeded")
			}
			if status.Code(err) != c.code || c.isErr != nil && !errors.Is(err, c.isErr) {
				t.Fatalf("got %v (code %v), want code %v", err, status.Code(err), c.code)
			}
		})
	}
}

func mustRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	reg, err := xdsgrpc.Registry(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
