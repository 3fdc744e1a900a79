package relay_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsengine/xdsengine/internal/testutil/fakeclock"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func clusters(names ...string) []xdstest.Resource {
	var out []xdstest.Resource
	for _, n := range names {
		out = append(out, xdstest.R(n, xdstest.Cluster(n, n+"-eds")))
	}
	return out
}

// wildcardClient is a hand-driven wildcard subscriber to CDS, as Envoy
// is: it reports the clusters it holds after each response, and ACKs.
type wildcardClient interface {
	// next applies the next response and returns the clusters held.
	next(t *testing.T) []string
	none(t *testing.T)
}

type sotwWildcard struct {
	s     *sotwStream
	names []string // what the client sends as resource_names
}

func newSotwWildcard(t *testing.T, addr, nodeID string, names ...string) *sotwWildcard {
	c := &sotwWildcard{s: openSotw(t, addr), names: names}
	c.s.request(t, &discoverypb.DiscoveryRequest{Node: node(nodeID, "blue"), TypeUrl: cds.TypeURL, ResourceNames: names})
	return c
}

func (c *sotwWildcard) next(t *testing.T) []string {
	t.Helper()
	resp := c.s.next(t)
	var held []string
	for _, a := range resp.GetResources() {
		held = append(held, nameOf(t, cds.TypeURL, a.GetValue()))
	}
	c.s.request(t, &discoverypb.DiscoveryRequest{TypeUrl: cds.TypeURL, ResourceNames: c.names,
		VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce()})
	slices.Sort(held)
	return held
}

func (c *sotwWildcard) none(t *testing.T) { t.Helper(); c.s.none(t, quiet) }

type deltaWildcard struct {
	s    *deltaStream
	held map[string]bool
}

func newDeltaWildcard(t *testing.T, addr, nodeID string, initial map[string]string) *deltaWildcard {
	c := &deltaWildcard{s: openDelta(t, addr), held: map[string]bool{}}
	for name := range initial {
		c.held[name] = true
	}
	c.s.request(t, &discoverypb.DeltaDiscoveryRequest{Node: node(nodeID, "blue"), TypeUrl: cds.TypeURL,
		ResourceNamesSubscribe: []string{"*"}, InitialResourceVersions: initial})
	return c
}

func (c *deltaWildcard) next(t *testing.T) []string {
	t.Helper()
	resp := c.s.next(t)
	for _, r := range resp.GetResources() {
		c.held[r.GetName()] = true
	}
	for _, name := range resp.GetRemovedResources() {
		delete(c.held, name)
	}
	c.s.request(t, &discoverypb.DeltaDiscoveryRequest{TypeUrl: cds.TypeURL, ResponseNonce: resp.GetNonce()})
	var held []string
	for name := range c.held {
		held = append(held, name)
	}
	slices.Sort(held)
	return held
}

func (c *deltaWildcard) none(t *testing.T) { t.Helper(); c.s.none(t, quiet) }

// TestWildcard: clients subscribing to every cluster, as Envoy does
// (State of the World with no names or with "*", incremental with "*"),
// are held until the upstream answers, then get every cluster, additions
// and deletions, through one upstream wildcard subscription.
func TestWildcard(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T, addr, nodeID string) wildcardClient
	}{
		{"sotw legacy", func(t *testing.T, addr, id string) wildcardClient { return newSotwWildcard(t, addr, id) }},
		{"sotw explicit", func(t *testing.T, addr, id string) wildcardClient { return newSotwWildcard(t, addr, id, "*") }},
		{"delta", func(t *testing.T, addr, id string) wildcardClient { return newDeltaWildcard(t, addr, id, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, "upstream")
			r := newRelay(t, up, relaytest.Options{}, nil)
			first := tc.open(t, r.Addr(), "envoy-1")
			first.none(t) // the upstream has not answered

			up.Set(clusters("a", "b")...)
			if got := first.next(t); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("first answer: %v, want a and b", got)
			}
			second := tc.open(t, r.Addr(), "envoy-2")
			if got := second.next(t); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("a second client's first answer: %v, want a and b", got)
			}

			up.Update(cds.TypeURL, clusters("a", "c")...)
			for i, c := range []wildcardClient{first, second} {
				// The relay applies an upstream response as the engine
				// tells of it, which may take more than one answer: c
				// added, then b deleted. Never is a lost.
				for got := c.next(t); !slices.Equal(got, []string{"a", "c"}); got = c.next(t) {
					if !slices.Contains(got, "a") || !slices.Contains(got, "c") {
						t.Fatalf("client %d after b was replaced by c: holds %v, want a and c, perhaps b still", i+1, got)
					}
				}
			}
			var wildcards int
			for _, req := range up.Requests() {
				// The engine writes a State-of-the-World wildcard with no
				// names, as Envoy first does; a stream's first request of
				// the type is the one without a nonce.
				if req.GetTypeUrl() == cds.TypeURL && req.GetResponseNonce() == "" && len(req.GetResourceNames()) == 0 {
					wildcards++
				}
			}
			if wildcards != 1 || up.StreamsOpened() != 1 {
				t.Errorf("upstream: %d wildcard subscriptions on %d streams, want 1 on 1", wildcards, up.StreamsOpened())
			}
		})
	}
}

// TestWildcardJoinsNamed: a wildcard client of a key whose clusters are
// partly watched by name already gets them all in its first answer, not
// the cached ones alone (which would delete the others from a client that
// holds them), and while the upstream is down, nothing.
func TestWildcardJoinsNamed(t *testing.T) {
	for _, outage := range []bool{false, true} {
		t.Run(map[bool]string{false: "upstream up", true: "upstream down"}[outage], func(t *testing.T) {
			var names []string
			for i := range 300 {
				names = append(names, fmt.Sprintf("cluster-%03d", i))
			}
			up := newUpstream(t, "upstream")
			up.Set(clusters(names...)...)
			r := newRelay(t, up, relaytest.Options{}, nil)
			byName := client(t, r, relaytest.BootstrapOptions{NodeID: "grpc", Cluster: "blue"})
			watch(t, byName, cds.TypeURL, names[0]).waitFor(t, "a cluster by name", edsName(names[0]+"-eds"))
			if outage {
				up.Stop()
				waitUntil(t, "the relay to see the upstream fail", func() bool { return keyStatus(t, r.Relay()).Err != nil })
			}

			// A client that reconnects holding every cluster, incrementally.
			initial := map[string]string{}
			for _, n := range names {
				initial[n] = "some-version"
			}
			envoy := newDeltaWildcard(t, r.Addr(), "envoy", initial)
			if outage {
				envoy.none(t)
				up.Restart()
			}
			if got := envoy.next(t); !slices.Equal(got, names) {
				t.Fatalf("the wildcard client holds %d clusters after its first answer, want all %d: %v", len(got), len(names), got)
			}
		})
	}
}

// TestWildcardEmptyType: a wildcard subscription to a type the upstream
// has nothing of is answered, empty, as soon as the upstream answers it
// (the engine says that a response of the type was applied, though it
// brought no resource); never while the upstream is unreachable, however
// long that lasts: a client reconnecting then keeps what it holds.
func TestWildcardEmptyType(t *testing.T) {
	up := newUpstream(t, "upstream")
	up.Set(xdstest.R("listener-1", xdstest.Listener("listener-1", "route-1"))) // no clusters
	r := newRelay(t, up, relaytest.Options{}, nil)
	if got := newSotwWildcard(t, r.Addr(), "envoy-1").next(t); len(got) != 0 {
		t.Fatalf("the answer has clusters %v, want none", got)
	}

	up.Stop()
	waitUntil(t, "the relay to see the upstream fail", func() bool { return keyStatus(t, r.Relay()).Err != nil })
	// The key's wildcard was answered: a new client of it is answered at
	// once, from what the relay knows.
	if got := newSotwWildcard(t, r.Addr(), "envoy-2").next(t); len(got) != 0 {
		t.Fatalf("the answer during the outage has clusters %v, want none", got)
	}
	// A client of another key reconnects, holding clusters: the key's
	// engine cannot reach the upstream, and the client is not answered.
	green := &sotwWildcard{s: openSotw(t, r.Addr())}
	green.s.request(t, &discoverypb.DiscoveryRequest{Node: node("envoy-3", "green"), TypeUrl: cds.TypeURL,
		VersionInfo: "another-relay-3"})
	waitUntil(t, "the new key's engine to fail", func() bool {
		st := r.Relay().Status()
		return len(st) == 2 && st[1].Key == "green" && st[1].Err != nil
	})
	green.none(t)
	if st := r.Relay().Status()[1]; st.Held != 1 {
		t.Errorf("key green: %+v, want its watch held", st)
	}

	up.Restart()
	if got := green.next(t); len(got) != 0 {
		t.Fatalf("the answer after the outage has clusters %v, want none", got)
	}
}

// TestWildcardLinger: the upstream wildcard subscription outlives its
// last client by the linger, then ends, and what it alone brought is
// forgotten.
func TestWildcardLinger(t *testing.T) {
	clk := fakeclock.New(time.Unix(0, 0))
	up := newUpstream(t, "upstream")
	up.Set(append(clusters("a", "b"), xdstest.R("listener-1", xdstest.Listener("listener-1", "route-1")))...)
	r := newRelay(t, up, relaytest.Options{}, func(c *relay.Config) { c.Clock = clk })
	// A client of a listener keeps the key, and its stream upstream.
	watch(t, client(t, r, relaytest.BootstrapOptions{NodeID: "grpc", Cluster: "blue"}), lds.TypeURL, "listener-1").
		waitFor(t, "the listener", routeName("route-1"))
	envoy := newSotwWildcard(t, r.Addr(), "envoy")
	if got := envoy.next(t); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("answer %v, want a and b", got)
	}
	envoy.s.end()
	waitUntil(t, "the relay to see the client leave", func() bool { return keyStatus(t, r.Relay()).Watches == 1 })
	if s := keyStatus(t, r.Relay()); s.Subscriptions != 2 || s.Resources != 3 {
		t.Fatalf("right after the client left: %+v, want the wildcard lingering with its 2 clusters", s)
	}
	clk.Advance(relay.DefaultLinger)
	if _, err := up.WaitForRequest(ctxFor(t), func(req *discoverypb.DiscoveryRequest) bool {
		return req.GetTypeUrl() == cds.TypeURL && req.GetResponseNonce() != "" && !slices.Contains(req.GetResourceNames(), "*")
	}); err != nil {
		t.Fatalf("the wildcard was not unsubscribed upstream after the linger: %v", err)
	}
	if s := keyStatus(t, r.Relay()); s.Subscriptions != 1 || s.Resources != 1 {
		t.Fatalf("after the linger: %+v, want the listener alone", s)
	}
}
