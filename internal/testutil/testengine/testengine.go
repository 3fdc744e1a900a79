package testengine

import (
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/testtype"
	"github.com/xdsengine/xdsengine/transport"
)

// FastDial keeps gRPC's own reconnection backoff short, so that a
// restarted management server is found in milliseconds.
var FastDial = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.2, MaxDelay: 100 * time.Millisecond},
	MinConnectTimeout: time.Second,
})

// RealClock returns an engine for the test types on the server at addr,
// on the real clock with short retry delays and every switch on; mutate,
// if set, adjusts the Config first. The engine closes when the test ends.
func RealClock(t testing.TB, addr, nodeID string, mutate func(*engine.Config)) *engine.Engine {
	t.Helper()
	sw := features.Switches{}
	cfg := engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: nodeID}},
		Registry:  testtype.Registry(),
		Transport: transport.GRPC(FastDial),
		Backoff:   func(int) time.Duration { return 20 * time.Millisecond },
		Switches:  &sw,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
