package relay_test

import (
	"slices"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsengine/xdsengine/internal/testutil/fakeclock"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
)

// subscribedUpstream reports whether the relay's last CDS request upstream
// names cluster-1.
func subscribedUpstream(reqs []*discoverypb.DiscoveryRequest) bool {
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].GetTypeUrl() == cds.TypeURL {
			return slices.Contains(reqs[i].GetResourceNames(), "cluster-1")
		}
	}
	return false
}

// TestLinger: an upstream subscription outlives its last downstream
// subscriber by the linger, so a client that comes back meanwhile is
// served from the cache without a new upstream subscription; after the
// linger it ends upstream, and so does the key's engine once the key has
// no client.
func TestLinger(t *testing.T) {
	const linger = 30 * time.Second
	clk := fakeclock.New(time.Unix(0, 0))
	up := newUpstream(t, "upstream")
	up.Set(meshResources("eds-1")...)
	r := newRelay(t, up, relaytest.Options{}, func(c *relay.Config) {
		c.Clock = clk
		c.Linger = linger
	})
	ctx := ctxFor(t)

	// c1 keeps a listener watch, so that its stream stays when it drops
	// the cluster: the relay then has two watches of it, LDS and CDS.
	c1 := client(t, r, relaytest.BootstrapOptions{NodeID: "c1", Cluster: "blue"})
	watch(t, c1, "type.googleapis.com/envoy.config.listener.v3.Listener", "listener-1").waitFor(t, "the listener", routeName("route-1"))
	l1 := newLatest()
	cancel := c1.Watch(cds.TypeURL, "cluster-1", l1)
	l1.waitFor(t, "the cluster", edsName("eds-1"))
	cancel()
	waitUntil(t, "the relay to see c1 drop the cluster", func() bool { return clk.Pending() > 0 })
	if s := keyStatus(t, r.Relay()); s.Subscriptions != 2 || s.Watches != 2 {
		t.Fatalf("after the last client of cluster-1 left: %+v, want 2 watches and 2 upstream subscriptions, cluster-1 lingering", s)
	}

	c2 := client(t, r, relaytest.BootstrapOptions{NodeID: "c2", Cluster: "blue"})
	watch(t, c2, cds.TypeURL, "cluster-1").waitFor(t, "the cluster from the cache", edsName("eds-1"))
	if !subscribedUpstream(up.Requests()) {
		t.Fatal("the upstream subscription ended during the linger")
	}
	c2.Close()
	waitUntil(t, "the relay to see c2 leave", func() bool { return keyStatus(t, r.Relay()).Watches == 2 })

	clk.Advance(linger)
	if _, err := up.WaitForRequest(ctx, func(req *discoverypb.DiscoveryRequest) bool {
		return req.GetTypeUrl() == cds.TypeURL && len(req.GetResourceNames()) == 0 && req.GetResponseNonce() != ""
	}); err != nil {
		t.Fatalf("the upstream subscription did not end after the linger: %v", err)
	}
	if s := keyStatus(t, r.Relay()); s.Subscriptions != 1 {
		t.Fatalf("upstream subscriptions = %d after the linger, want 1 (the listener)", s.Subscriptions)
	}

	c1.Close()
	waitUntil(t, "the relay to see c1 leave", func() bool { return keyStatus(t, r.Relay()).Watches == 0 })
	clk.Advance(linger) // the listener's linger, and the key's
	if err := up.WaitForOpenStreams(ctx, 0); err != nil {
		t.Fatalf("the idle key's engine kept its stream: %v", err)
	}
	if st := r.Relay().Status(); len(st) != 0 {
		t.Fatalf("relay status after the key went idle: %+v, want no key", st)
	}
}
