package engine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/xdstest"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// fastDial keeps gRPC's own reconnection backoff short.
var fastDial = xdstest.FastReconnect

// realClockEngine is an engine on the real clock with short retry delays.
func realClockEngine(t *testing.T, addr string, mutate func(*engine.Config)) *engine.Engine {
	t.Helper()
	cfg := engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: nodeID}},
		Registry:  testtype.Registry(),
		Transport: transport.GRPC(xdstest.FastReconnect),
		Backoff:   func(int) time.Duration { return 20 * time.Millisecond },
		Switches:  &features.Switches{},
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

func field(t *testing.T, ev watchrec.Event, key string) any {
	t.Helper()
	if ev.Err != nil {
		t.Fatalf("got %v, want a resource", ev)
	}
	return ev.Resource.(*testtype.Resource).Fields[key]
}

// TestEndToEndGoControlPlane drives the engine against go-control-plane's
// server: watch, update, NACK, outage with cached data, restart.
// It runs once per protocol variant: go-control-plane's server speaks
// both, from one snapshot cache.
func TestEndToEndGoControlPlane(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) { testEndToEndGoControlPlane(t, p) })
	}
}

func testEndToEndGoControlPlane(t *testing.T, p protocol) {
	srv := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	srv.Set(xdstest.R("a", testtype.Message("a", "v", "1")).As(thing), xdstest.R("l", testtype.Message("l")).As(required))
	e := realClockEngine(t, srv.Addr(), withFeatures(p.features...))

	w := watchrec.New()
	e.Watch(thing, "a", w)
	wl := watchrec.New()
	e.Watch(required, "l", wl)
	if v := field(t, w.NextChanged(t), "v"); v != "1" {
		t.Fatalf("v = %v, want 1", v)
	}
	wl.NextChanged(t)

	srv.Set(xdstest.R("a", testtype.Message("a", "v", "2")).As(thing), xdstest.R("l", testtype.Message("l")).As(required))
	if v := field(t, w.NextChanged(t), "v"); v != "2" {
		t.Fatalf("after update v = %v, want 2", v)
	}

	// An invalid update is NACKed and the last good version stays.
	srv.Update(thing, xdstest.R("a", testtype.Message("a", "invalid", "port 0")).As(thing))
	checkEvent(t, w.NextAmbient(t), true, codes.InvalidArgument)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if p.name == "sotw" { // xdstest records SotW requests only; the delta NACK is checked in delta_test.go
		if _, err := srv.WaitForRequest(ctx, xdstest.IsNACK(thing)); err != nil {
			t.Fatalf("server saw no NACK: %v", err)
		}
	}

	// Outage: cached data stays in use, watchers hear of it as ambient.
	srv.Stop()
	checkEvent(t, w.NextAmbient(t), true, codes.Unavailable)
	checkEvent(t, wl.NextAmbient(t), true, codes.Unavailable)

	// Restart with a new version: the engine reconnects and delivers it.
	srv.Set(xdstest.R("a", testtype.Message("a", "v", "3")).As(thing), xdstest.R("l", testtype.Message("l")).As(required))
	srv.Restart()
	if v := field(t, w.NextChanged(t), "v"); v != "3" {
		t.Fatalf("after restart v = %v, want 3", v)
	}
	// The listener came back unchanged: only the ambient error is cleared.
	if ev := wl.NextAmbient(t); ev.Err != nil {
		t.Fatalf("got %v, want the ambient error cleared", ev)
	}

	// Deleting the listener from the state of the world (A88 default:
	// ambient NOT_FOUND, resource kept).
	srv.Set(xdstest.R("a", testtype.Message("a", "v", "3")).As(thing))
	checkEvent(t, wl.NextAmbient(t), true, codes.NotFound)
}

// withFeatures adds server features to every server of the bootstrap.
func withFeatures(names ...string) func(*engine.Config) {
	return func(c *engine.Config) {
		if len(names) == 0 {
			return
		}
		b := *c.Bootstrap
		b.Servers = slices.Clone(b.Servers)
		for i := range b.Servers {
			b.Servers[i].ServerFeatures = append(slices.Clip(b.Servers[i].ServerFeatures), names...)
		}
		c.Bootstrap = &b
	}
}

// TestEndToEndRealClockTimer runs the does-not-exist timer on the real
// clock with a short timeout against a server that does not have the
// resource.
func TestEndToEndRealClockTimer(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(xdstest.R("present", testtype.Message("present")).As(thing))
	e := realClockEngine(t, srv.Addr(), func(c *engine.Config) { c.ResourceTimeout = 150 * time.Millisecond })
	w := watchrec.New()
	start := time.Now()
	e.Watch(thing, "missing", w)
	checkEvent(t, w.NextChanged(t), false, codes.NotFound)
	if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
		t.Fatalf("does-not-exist after %v, want about 150ms", d)
	}
	t.Logf("does-not-exist reported %v after the watch (timeout 150ms)", time.Since(start).Round(time.Millisecond))
}
