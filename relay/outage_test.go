package relay_test

import (
	"context"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/lastgood"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// strict clients drop a resource on any data error
// (fail_on_data_errors), so that a deletion the relay sent by mistake
// shows as an error.
var strict = []string{features.NameFailOnDataErrors}

// clientWatches are one client's watches of the mesh's listener and
// cluster.
type clientWatches struct{ listener, cluster *latest }

func watchMesh(t *testing.T, c *engine.Engine) clientWatches {
	return clientWatches{listener: watch(t, c, lds.TypeURL, "listener-1"), cluster: watch(t, c, cds.TypeURL, "cluster-1")}
}

func (w clientWatches) waitFor(t *testing.T, eds string) {
	t.Helper()
	w.listener.waitFor(t, "the listener", routeName("route-1"))
	w.cluster.waitFor(t, "cluster of "+eds, edsName(eds))
}

func (w clientWatches) kept(t *testing.T, what string) {
	t.Helper()
	w.listener.kept(t, what)
	w.cluster.kept(t, what)
}

// keyStatus returns the relay's only key's status.
func keyStatus(t *testing.T, r *relay.Relay) relay.KeyStatus {
	t.Helper()
	st := r.Status()
	if len(st) != 1 {
		t.Fatalf("relay status has %d keys, want 1: %+v", len(st), st)
	}
	return st[0]
}

// TestUpstreamOutage: while the upstream is down, clients keep their
// configuration, clients that connect meanwhile get it too, the relay's
// status says the upstream fails; after it is back, updates flow again.
func TestUpstreamOutage(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(t *testing.T) {
			up := newUpstream(t, "upstream")
			up.Set(meshResources("eds-1")...)
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { mp.Shutdown(context.Background()) })
			r := newRelay(t, up, relaytest.Options{}, func(c *relay.Config) { c.MeterProvider = mp })
			before := watchMesh(t, client(t, r, relaytest.BootstrapOptions{NodeID: "a", Cluster: "blue", Delta: delta, ServerFeatures: strict}))
			before.waitFor(t, "eds-1")
			waitUntil(t, "the key connected", func() bool { return keyStatus(t, r.Relay()).Connected })

			up.Stop()
			waitUntil(t, "the relay to see the upstream fail", func() bool { return keyStatus(t, r.Relay()).Err != nil })
			if n := sumOf(t, reader, relay.MetricUpstreamUnreachable); n != 1 {
				t.Errorf("%s = %d during the outage, want 1", relay.MetricUpstreamUnreachable, n)
			}
			during := watchMesh(t, client(t, r, relaytest.BootstrapOptions{NodeID: "b", Cluster: "blue", Delta: delta, ServerFeatures: strict}))
			during.waitFor(t, "eds-1")

			up.Restart()
			up.Update(cds.TypeURL, xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-2")))
			before.waitFor(t, "eds-2")
			during.waitFor(t, "eds-2")
			waitUntil(t, "the key connected again", func() bool {
				s := keyStatus(t, r.Relay())
				return s.Connected && s.Err == nil
			})
			before.kept(t, "through the outage")
			during.kept(t, "through the outage")
			if n := sumOf(t, reader, relay.MetricUpstreamUnreachable); n != 0 {
				t.Errorf("%s = %d after the outage, want 0", relay.MetricUpstreamUnreachable, n)
			}
			if n := sumOf(t, reader, relay.MetricResources); n != 2 {
				t.Errorf("%s = %d, want 2 (the listener and the cluster)", relay.MetricResources, n)
			}
		})
	}
}

// TestRelayRestart: clients of a relay that restarts reconnect to the new
// one and keep their configuration, even when the upstream is down
// meanwhile: the new relay holds their watches (it knows nothing yet, and
// answering would delete what they hold) until the upstream is back.
func TestRelayRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		outage bool
	}{
		{"upstream up", false},
		{"upstream down", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, "upstream")
			up.Set(meshResources("eds-1")...)
			first := newRelay(t, up, relaytest.Options{}, nil)
			var clients []clientWatches
			for _, delta := range []bool{false, true} {
				w := watchMesh(t, client(t, first, relaytest.BootstrapOptions{NodeID: "n", Cluster: "blue", Delta: delta, ServerFeatures: strict}))
				w.waitFor(t, "eds-1")
				clients = append(clients, w)
			}
			if tc.outage {
				up.Stop()
			}
			first.Close()
			second := newRelay(t, up, relaytest.Options{Port: first.Port()}, nil)
			if tc.outage {
				waitUntil(t, "both clients back, two watches each", func() bool {
					st := second.Relay().Status()
					return len(st) == 1 && st[0].Watches >= 4
				})
				// What an answer now would do, it would have done by
				// then.
				time.Sleep(quiet)
				for _, w := range clients {
					w.kept(t, "reconnected to a relay that knows nothing yet")
				}
				if s := keyStatus(t, second.Relay()); s.Held != 4 {
					t.Errorf("%d watches held, want 4: %+v", s.Held, s)
				}
				up.Restart()
			}
			up.Update(cds.TypeURL, xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-2")))
			for _, w := range clients {
				w.waitFor(t, "eds-2")
				w.kept(t, "across the relay's restart")
			}
		})
	}
}

// TestHeldUntilResolved: on the wire, a State of the World client that
// comes with another relay's version, as one that comes with none, gets
// nothing for Listeners until the relay knows each of them, and then all
// of them together, once.
func TestHeldUntilResolved(t *testing.T) {
	up := newUpstream(t, "upstream")
	r := newRelay(t, up, relaytest.Options{}, nil)
	names := []string{"listener-1", "listener-2"}

	reconnecting := openSotw(t, r.Addr())
	reconnecting.request(t, &discoverypb.DiscoveryRequest{Node: node("old", "blue"), TypeUrl: lds.TypeURL,
		ResourceNames: names, VersionInfo: "another-relay-7"})
	fresh := openSotw(t, r.Addr())
	fresh.request(t, &discoverypb.DiscoveryRequest{Node: node("new", "blue"), TypeUrl: lds.TypeURL, ResourceNames: names})
	// The upstream has said nothing.
	reconnecting.none(t, quiet)
	fresh.none(t, quiet)

	up.Update(lds.TypeURL, xdstest.R("listener-1", xdstest.Listener("listener-1", "route-1")),
		xdstest.R("listener-2", xdstest.Listener("listener-2", "route-1")))
	for _, s := range []*sotwStream{reconnecting, fresh} {
		if n := len(s.next(t).GetResources()); n != 2 {
			t.Fatalf("a held client's answer has %d listeners, want both", n)
		}
	}
	reconnecting.none(t, quiet)
	fresh.none(t, quiet)
}

// TestRestartDuringOutageWithStore: a relay that keeps each key's last
// good configuration (StoreDir) and restarts while its upstream is down
// serves it: to its clients, which keep it, and to a client that never
// had it.
func TestRestartDuringOutageWithStore(t *testing.T) {
	dir := t.TempDir()
	up := newUpstream(t, "upstream")
	up.Set(meshResources("eds-1")...)
	withStore := func(c *relay.Config) { c.Store = relay.StoreDir(dir, lastgood.Options{}) }
	first := newRelay(t, up, relaytest.Options{}, withStore)
	old := watchMesh(t, client(t, first, relaytest.BootstrapOptions{NodeID: "old", Cluster: "blue", ServerFeatures: strict}))
	old.waitFor(t, "eds-1")

	up.Stop()
	first.Close()
	second := newRelay(t, up, relaytest.Options{Port: first.Port()}, withStore)
	fresh := watchMesh(t, client(t, second, relaytest.BootstrapOptions{NodeID: "fresh", Cluster: "blue", ServerFeatures: strict}))
	fresh.waitFor(t, "eds-1")
	if s := keyStatus(t, second.Relay()); s.Err == nil || s.Connected {
		t.Errorf("the key's status %+v, want its upstream failing", s)
	}

	up.Restart()
	up.Update(cds.TypeURL, xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-2")))
	for _, w := range []clientWatches{old, fresh} {
		w.waitFor(t, "eds-2")
		w.kept(t, "through the relay's restart during the outage")
	}
}
