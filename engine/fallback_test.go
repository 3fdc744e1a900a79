package engine_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/internal/testutil/tcpproxy"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/xdstest"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// fallbackEngine is an engine on the real clock whose top-level servers
// are addrs, in priority order.
func fallbackEngine(t *testing.T, mutate func(*engine.Config), addrs ...string) *engine.Engine {
	t.Helper()
	return realClockEngine(t, addrs[0], func(c *engine.Config) {
		c.Bootstrap.Servers = nil
		for _, a := range addrs {
			c.Bootstrap.Servers = append(c.Bootstrap.Servers, bootstrap.InsecureServer(a))
		}
		if mutate != nil {
			mutate(c)
		}
	})
}

func thingR(name, v string) xdstest.Resource {
	return xdstest.R(name, testtype.Message(name, "v", v)).As(thing)
}

func waitOpenStreams(t *testing.T, s *xdstest.Server, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitForOpenStreams(ctx, n); err != nil {
		t.Fatalf("open streams: got %d, want %d: %v", s.OpenStreams(), n, err)
	}
}

// TestFallbackAtStartupAndRecovery: the primary is down before any
// response, the fallback serves, and the primary's return takes over at
// once and closes the fallback stream (A71).
func TestFallbackAtStartupAndRecovery(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	fallback := xdstest.NewServer(t, xdstest.Options{Name: "fallback"})
	primary.Set(thingR("x", "primary"))
	fallback.Set(thingR("x", "fallback"))
	primary.Stop()
	e := fallbackEngine(t, nil, primary.Addr(), fallback.Addr())

	w := watchrec.New()
	outage := time.Now()
	e.Watch(thing, "x", w)
	if v := field(t, w.NextChanged(t), "v"); v != "fallback" {
		t.Fatalf("v = %v, want the fallback's (a successful fallback shows no error first)", v)
	}
	t.Logf("outage to first fallback data: %v", time.Since(outage).Round(time.Millisecond))
	// The fallback server starts from an empty version: versions are per server.
	if reqs := fallback.Requests(); reqs[0].GetVersionInfo() != "" {
		t.Fatalf("first request to the fallback has version %q", reqs[0].GetVersionInfo())
	}

	back := time.Now()
	primary.Restart()
	if v := field(t, w.NextChanged(t), "v"); v != "primary" {
		t.Fatalf("v = %v, want the primary's after it returned", v)
	}
	waitOpenStreams(t, fallback, 0)
	t.Logf("primary return to fallback stream closed: %v", time.Since(back).Round(time.Millisecond))
	w.ExpectNone(t, 50*time.Millisecond)
}

// TestNoFallbackWhenCached: with everything cached, losing the primary is
// an ambient error and the cache stays in use; a new uncached watch then
// triggers fallback.
func TestNoFallbackWhenCached(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	fallback := xdstest.NewServer(t, xdstest.Options{Name: "fallback"})
	primary.Set(thingR("x", "primary"))
	fallback.Set(thingR("x", "fallback"), thingR("y", "fallback"))
	proxy := tcpproxy.Start(t, primary.Addr())
	e := fallbackEngine(t, nil, proxy.Addr(), fallback.Addr())

	wx := watchrec.New()
	e.Watch(thing, "x", wx)
	field(t, wx.NextChanged(t), "v")
	proxy.Cut()
	checkEvent(t, wx.NextAmbient(t), true, codes.Unavailable)
	time.Sleep(100 * time.Millisecond)
	if n := fallback.StreamsOpened(); n != 0 {
		t.Fatalf("fallback contacted with everything cached (%d streams)", n)
	}
	checkDump(t, e, thing, "x", 3 /* ACKED */, true)

	wy := watchrec.New()
	start := time.Now()
	e.Watch(thing, "y", wy)
	if v := field(t, wy.NextChanged(t), "v"); v != "fallback" {
		t.Fatalf("y = %v, want the fallback's", v)
	}
	t.Logf("new uncached watch during outage to first fallback data: %v", time.Since(start).Round(time.Millisecond))
	// Fallback re-subscribes everything of the authority: x now comes from it too.
	if v := field(t, wx.NextChanged(t), "v"); v != "fallback" {
		t.Fatalf("x = %v, want the fallback's", v)
	}
	proxy.Restore()
	if v := field(t, wx.NextChanged(t), "v"); v != "primary" {
		t.Fatalf("x = %v after the primary returned, want the primary's", v)
	}
	waitOpenStreams(t, fallback, 0)
}

// TestFallbackOnReachabilityOnly (A95): with everything cached, an
// authority with fallback_on_reachability_only still falls back, shows no
// error, and takes updates from the fallback.
func TestFallbackOnReachabilityOnly(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	fallback := xdstest.NewServer(t, xdstest.Options{Name: "fallback"})
	const name = "xdstp://endpoints.example/xdsengine.test.Thing/svc/locality-1"
	primary.Set(thingR(name, "primary-1"))
	fallback.Set(thingR(name, "fallback-1"))
	proxy := tcpproxy.Start(t, primary.Addr())
	e := realClockEngine(t, proxy.Addr(), func(c *engine.Config) {
		c.Bootstrap.Authorities = map[string]bootstrap.Authority{"endpoints.example": {
			Servers:                    []bootstrap.ServerConfig{bootstrap.InsecureServer(proxy.Addr()), bootstrap.InsecureServer(fallback.Addr())},
			FallbackOnReachabilityOnly: true,
		}}
	})
	w := watchrec.New()
	e.Watch(thing, name, w)
	if v := field(t, w.NextChanged(t), "v"); v != "primary-1" {
		t.Fatalf("v = %v", v)
	}
	outage := time.Now()
	proxy.Cut()
	ev := w.Next(t)
	if ev.Ambient || ev.Err != nil {
		t.Fatalf("got %v, want data from the fallback and no error", ev)
	}
	if v := field(t, ev, "v"); v != "fallback-1" {
		t.Fatalf("v = %v, want fallback-1", v)
	}
	t.Logf("outage to first fallback data (reachability only): %v", time.Since(outage).Round(time.Millisecond))
	fallback.Set(thingR(name, "fallback-2"))
	if v := field(t, w.NextChanged(t), "v"); v != "fallback-2" {
		t.Fatalf("v = %v, want the fallback's update", v)
	}

	t.Run("ignored with GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK=false", func(t *testing.T) {
		primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
		fallback := xdstest.NewServer(t, xdstest.Options{Name: "fallback"})
		primary.Set(thingR(name, "primary-1"))
		fallback.Set(thingR(name, "fallback-1"))
		e := realClockEngine(t, primary.Addr(), func(c *engine.Config) {
			c.Switches = &features.Switches{DisableEndpointFallback: true}
			c.Bootstrap.Authorities = map[string]bootstrap.Authority{"endpoints.example": {
				Servers:                    []bootstrap.ServerConfig{bootstrap.InsecureServer(primary.Addr()), bootstrap.InsecureServer(fallback.Addr())},
				FallbackOnReachabilityOnly: true,
			}}
		})
		w := watchrec.New()
		e.Watch(thing, name, w)
		field(t, w.NextChanged(t), "v")
		primary.Stop()
		checkEvent(t, w.NextAmbient(t), true, codes.Unavailable)
		w.ExpectNone(t, 100*time.Millisecond)
		if fallback.StreamsOpened() != 0 {
			t.Fatal("fallback contacted")
		}
	})
}

// TestFallbackWalksTheList: the second server is broken (it fails every
// stream), so the engine goes on to the third.
func TestFallbackWalksTheList(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	primary.Stop()
	broken := scriptedads.Start(t)
	broken.FailStreams(status.Error(codes.Internal, "broken server"))
	third := xdstest.NewServer(t, xdstest.Options{Name: "third"})
	third.Set(thingR("x", "third"))
	e := fallbackEngine(t, nil, primary.Addr(), broken.Addr(), third.Addr())
	w := watchrec.New()
	start := time.Now()
	e.Watch(thing, "x", w)
	if v := field(t, w.NextChanged(t), "v"); v != "third" {
		t.Fatalf("v = %v, want the third server's", v)
	}
	t.Logf("outage to first data from the third server: %v", time.Since(start).Round(time.Millisecond))
	if broken.StreamCount() == 0 {
		t.Fatal("the broken second server was skipped, want it tried")
	}
}

// TestFallbackAllFail: when every server fails, watchers see the error of
// the last one.
func TestFallbackAllFail(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	primary.Stop()
	broken := scriptedads.Start(t)
	broken.FailStreams(status.Error(codes.PermissionDenied, "last server says no"))
	e := fallbackEngine(t, nil, primary.Addr(), broken.Addr())
	w := watchrec.New()
	e.Watch(thing, "x", w)
	ev := w.NextChanged(t)
	checkEvent(t, ev, false, codes.Unavailable)
	if !contains(ev.Err.Error(), "last server says no") || !contains(ev.Err.Error(), broken.Addr()) {
		t.Fatalf("error %v does not come from the last server", ev.Err)
	}
}

// TestAuthoritiesShareStreamsButNotFallbacks: two authorities with the
// same primary share one ADS stream, and fall back each to its own server.
func TestAuthoritiesShareStreamsButNotFallbacks(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	fbA := xdstest.NewServer(t, xdstest.Options{Name: "fallback-a"})
	fbB := xdstest.NewServer(t, xdstest.Options{Name: "fallback-b"})
	const (
		nameA  = "xdstp://a.example/xdsengine.test.Thing/x"
		nameB  = "xdstp://b.example/xdsengine.test.Thing/x"
		nameA2 = "xdstp://a.example/xdsengine.test.Thing/y"
		nameB2 = "xdstp://b.example/xdsengine.test.Thing/y"
	)
	primary.Set(thingR(nameA, "primary"), thingR(nameB, "primary"))
	fbA.Set(thingR(nameA, "a"), thingR(nameA2, "a"))
	fbB.Set(thingR(nameB, "b"), thingR(nameB2, "b"))
	proxy := tcpproxy.Start(t, primary.Addr())
	e := realClockEngine(t, proxy.Addr(), func(c *engine.Config) {
		c.Bootstrap.Authorities = map[string]bootstrap.Authority{
			"a.example": {Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(proxy.Addr()), bootstrap.InsecureServer(fbA.Addr())}},
			"b.example": {Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(proxy.Addr()), bootstrap.InsecureServer(fbB.Addr())}},
		}
	})
	wa, wb := watchrec.New(), watchrec.New()
	e.Watch(thing, nameA, wa)
	e.Watch(thing, nameB, wb)
	field(t, wa.NextChanged(t), "v")
	field(t, wb.NextChanged(t), "v")
	if n := primary.StreamsOpened(); n != 1 {
		t.Fatalf("primary has %d streams, want one shared by both authorities", n)
	}
	proxy.Cut()
	wa.NextAmbient(t)
	wb.NextAmbient(t)
	wa2, wb2 := watchrec.New(), watchrec.New()
	start := time.Now()
	e.Watch(thing, nameA2, wa2)
	e.Watch(thing, nameB2, wb2)
	if v := field(t, wa2.NextChanged(t), "v"); v != "a" {
		t.Fatalf("authority a got %v, want its own fallback's", v)
	}
	if v := field(t, wb2.NextChanged(t), "v"); v != "b" {
		t.Fatalf("authority b got %v, want its own fallback's", v)
	}
	t.Logf("new watches during outage to first data from each authority's fallback: %v", time.Since(start).Round(time.Millisecond))
}

// TestPoolFallsBackPerTarget: two targets share nothing; only the one with
// an uncached resource goes to the fallback server.
func TestPoolFallsBackPerTarget(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	fallback := xdstest.NewServer(t, xdstest.Options{Name: "fallback"})
	primary.Set(thingR("x", "primary"))
	fallback.Set(thingR("x", "fallback"), thingR("y", "fallback"))
	proxy := tcpproxy.Start(t, primary.Addr())
	sw := features.Switches{}
	pool, err := engine.NewPool(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(proxy.Addr()), bootstrap.InsecureServer(fallback.Addr())}, Node: bootstrap.Node{ID: nodeID}},
		Registry:  testtype.Registry(),
		Transport: transport.GRPC(fastDial),
		Backoff:   func(int) time.Duration { return 20 * time.Millisecond },
		Switches:  &sw,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	e1, release1, _ := pool.Get("xds:///one")
	defer release1()
	e2, release2, _ := pool.Get("xds:///two")
	defer release2()
	w1, w2 := watchrec.New(), watchrec.New()
	e1.Watch(thing, "x", w1)
	e2.Watch(thing, "x", w2)
	field(t, w1.NextChanged(t), "v")
	field(t, w2.NextChanged(t), "v")
	proxy.Cut()
	w1.NextAmbient(t)
	w2.NextAmbient(t)
	wy := watchrec.New()
	start := time.Now()
	e2.Watch(thing, "y", wy)
	if v := field(t, wy.NextChanged(t), "v"); v != "fallback" {
		t.Fatalf("y = %v", v)
	}
	t.Logf("target two: uncached watch to first fallback data: %v", time.Since(start).Round(time.Millisecond))
	w1.ExpectNone(t, 100*time.Millisecond)
	if n := fallback.StreamsOpened(); n != 1 {
		t.Fatalf("fallback has %d streams, want only target two's", n)
	}
	for _, cc := range pool.Dump() {
		for _, g := range cc.GetGenericXdsConfigs() {
			v := g.GetXdsConfig() != nil
			t.Logf("CSDS %s: %s %s cached=%v", cc.GetClientScope(), g.GetName(), g.GetClientStatus(), v)
		}
	}
}

// TestNameErrors: an unknown authority or a malformed xdstp name fails the
// watch at once, and no stream is opened.
func TestNameErrors(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	e := realClockEngine(t, primary.Addr(), func(c *engine.Config) {
		c.Bootstrap.Authorities = map[string]bootstrap.Authority{"known.example": {}}
	})
	tests := []struct {
		name string
		code codes.Code
		kind engine.Kind
	}{
		{"xdstp://unknown.example/xdsengine.test.Thing/x", codes.FailedPrecondition, engine.KindUnknownAuthority},
		{"xdstp://known.example/xdsengine.test.Thing", codes.InvalidArgument, engine.KindInvalidName},
		{"xdstp://known.example/envoy.config.listener.v3.Listener/x", codes.InvalidArgument, engine.KindInvalidName},
		{"xdstp:known.example/xdsengine.test.Thing/x", codes.InvalidArgument, engine.KindInvalidName},
		{"xdstp://known.example/xdsengine.test.Thing/x%zz", codes.InvalidArgument, engine.KindInvalidName},
	}
	for _, tc := range tests {
		w := watchrec.New()
		e.Watch(thing, tc.name, w)
		ev := w.NextChanged(t)
		if status.Code(ev.Err) != tc.code || engine.KindOf(ev.Err) != tc.kind {
			t.Errorf("Watch(%q) = %v, want %v %v", tc.name, ev, tc.code, tc.kind)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := primary.StreamsOpened(); n != 0 {
		t.Fatalf("%d streams opened for rejected names", n)
	}
}

// TestFallbackDisabled: GRPC_EXPERIMENTAL_XDS_FALLBACK=false uses only the
// first server.
func TestFallbackDisabled(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	fallback := xdstest.NewServer(t, xdstest.Options{Name: "fallback"})
	fallback.Set(thingR("x", "fallback"))
	primary.Stop()
	e := fallbackEngine(t, func(c *engine.Config) { c.Switches = &features.Switches{DisableFallback: true} }, primary.Addr(), fallback.Addr())
	w := watchrec.New()
	e.Watch(thing, "x", w)
	checkEvent(t, w.NextChanged(t), false, codes.Unavailable)
	w.ExpectNone(t, 100*time.Millisecond)
	if fallback.StreamsOpened() != 0 {
		t.Fatal("fallback contacted with fallback disabled")
	}
}

// TestCustomFallbackPolicy: a user policy can refuse fallback.
func TestCustomFallbackPolicy(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	fallback := xdstest.NewServer(t, xdstest.Options{Name: "fallback"})
	fallback.Set(thingR("x", "fallback"))
	primary.Stop()
	var seen []engine.FallbackState
	e := fallbackEngine(t, func(c *engine.Config) {
		c.FallbackPolicy = engine.FallbackPolicyFunc(func(s engine.FallbackState) bool {
			seen = append(seen, s)
			return false
		})
	}, primary.Addr(), fallback.Addr())
	w := watchrec.New()
	e.Watch(thing, "x", w)
	checkEvent(t, w.NextChanged(t), false, codes.Unavailable)
	if fallback.StreamsOpened() != 0 {
		t.Fatal("fallback contacted against the policy")
	}
	e.Close() // the policy's slice is read after the engine is done with it
	if len(seen) == 0 || seen[0].Uncached != 1 || seen[0].Next != fallback.Addr() {
		t.Fatalf("policy saw %+v", seen)
	}
}

// TestFallbackMixesVariants: fallback (A71) works across a State-of-the-
// World and an incremental server, either way round: the variant is a
// property of each server, not of the authority.
func TestFallbackMixesVariants(t *testing.T) {
	for _, tc := range []struct {
		name              string
		primary, fallback []string
	}{
		{"sotw primary, delta fallback", nil, []string{features.NameDeltaXDS}},
		{"delta primary, sotw fallback", []string{features.NameDeltaXDS}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
			fallback := xdstest.NewServer(t, xdstest.Options{Name: "fallback"})
			primary.Set(thingR("x", "primary"))
			fallback.Set(thingR("x", "fallback"))
			primary.Stop()
			e := fallbackEngine(t, func(c *engine.Config) {
				c.Bootstrap.Servers[0].ServerFeatures = tc.primary
				c.Bootstrap.Servers[1].ServerFeatures = tc.fallback
			}, primary.Addr(), fallback.Addr())
			w := watchrec.New()
			e.Watch(thing, "x", w)
			if v := field(t, w.NextChanged(t), "v"); v != "fallback" {
				t.Fatalf("v = %v, want the fallback's", v)
			}
			primary.Restart()
			if v := field(t, w.NextChanged(t), "v"); v != "primary" {
				t.Fatalf("v = %v, want the primary's after it returned", v)
			}
			if a := e.Authorities()[0]; a.Active != primary.Addr() || !a.Connected {
				t.Fatalf("authority %+v, want the primary active and connected", a)
			}
			w.ExpectNone(t, 50*time.Millisecond)
		})
	}
}
