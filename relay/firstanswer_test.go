package relay_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// sotwNames are the names of a State of the World response's resources,
// sorted.
func sotwNames(t *testing.T, resp *discoverypb.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	for _, a := range resp.GetResources() {
		out = append(out, nameOf(t, resp.GetTypeUrl(), a.GetValue()))
	}
	slices.Sort(out)
	return out
}

func listeners(names ...string) []xdstest.Resource {
	var out []xdstest.Resource
	for _, n := range names {
		out = append(out, xdstest.R(n, xdstest.Listener(n, "route-1")))
	}
	return out
}

func assignments(names ...string) []xdstest.Resource {
	var out []xdstest.Resource
	for _, n := range names {
		out = append(out, xdstest.R(n, xdstest.ClusterLoadAssignment(n, xdstest.Locality{Zone: "a", Endpoints: []string{"10.0.0.1:80"}})))
	}
	return out
}

// TestNoEmptyFirstAnswer: a State of the World subscription by name is
// answered only once the upstream has a verdict on every name in it (the
// resource, or that it does not exist): a response that leaves out a
// Listener or Cluster tells a gRPC client it was deleted, and one with
// nothing in it says nothing at all. Incremental subscriptions already
// wait, since a response there names what it sends. The answer after the
// verdict is complete, and an ACK of it holds nothing.
func TestNoEmptyFirstAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		typeURL string
		// before are the upstream's resources when the client subscribes
		// (nil: the upstream has answered nothing yet); warm are names
		// another client subscribed to first, so that the relay has them.
		before []xdstest.Resource
		warm   []string
		names  []string
		// after is what the upstream serves next, if anything; the
		// engine's does-not-exist timer decides the rest.
		after []xdstest.Resource
		want  []string
		delta bool
	}{
		{name: "listeners, upstream silent", typeURL: lds.TypeURL, names: []string{"listener-1", "listener-2"},
			after: listeners("listener-1", "listener-2"), want: []string{"listener-1", "listener-2"}},
		{name: "clusters, one known and one new", typeURL: cds.TypeURL, before: clusters("cluster-1"), warm: []string{"cluster-1"},
			names: []string{"cluster-1", "cluster-2"}, after: clusters("cluster-1", "cluster-2"), want: []string{"cluster-1", "cluster-2"}},
		{name: "clusters, one the upstream does not have", typeURL: cds.TypeURL, before: clusters("cluster-1"), warm: []string{"cluster-1"},
			names: []string{"cluster-1", "missing"}, want: []string{"cluster-1"}},
		{name: "endpoints, upstream silent", typeURL: eds.TypeURL, names: []string{"eds-1"},
			after: assignments("eds-1"), want: []string{"eds-1"}},
		{name: "incremental listeners, upstream silent", typeURL: lds.TypeURL, delta: true, names: []string{"listener-1", "listener-2"},
			after: listeners("listener-1", "listener-2"), want: []string{"listener-1", "listener-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, "upstream")
			if tc.before != nil {
				up.Set(tc.before...)
			}
			// Long enough that a verdict by timer cannot come within
			// quiet; short enough for the test.
			r := newRelay(t, up, relaytest.Options{}, func(c *relay.Config) { c.Upstream.ResourceTimeout = 3 * quiet })
			if tc.warm != nil {
				warm := openSotw(t, r.Addr())
				req := &discoverypb.DiscoveryRequest{Node: node("warm", "blue"), TypeUrl: tc.typeURL, ResourceNames: tc.warm}
				for {
					warm.request(t, req)
					resp := warm.next(t)
					if slices.Equal(sotwNames(t, resp), tc.warm) {
						break
					}
					req = &discoverypb.DiscoveryRequest{TypeUrl: tc.typeURL, ResourceNames: tc.warm, VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce()}
				}
			}

			if tc.delta {
				s := openDelta(t, r.Addr())
				s.request(t, &discoverypb.DeltaDiscoveryRequest{Node: node("subject", "blue"), TypeUrl: tc.typeURL, ResourceNamesSubscribe: tc.names})
				s.none(t, quiet)
				up.Update(tc.typeURL, tc.after...)
				got := map[string]bool{}
				for len(got) < len(tc.want) {
					resp := s.next(t)
					for _, res := range resp.GetResources() {
						got[res.GetName()] = true
					}
					if len(resp.GetRemovedResources()) > 0 {
						t.Errorf("removed %v from a client that held nothing", resp.GetRemovedResources())
					}
					s.request(t, &discoverypb.DeltaDiscoveryRequest{TypeUrl: tc.typeURL, ResponseNonce: resp.GetNonce()})
				}
				if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, tc.want) {
					t.Errorf("the client holds %v, want %v", names, tc.want)
				}
				return
			}

			s := openSotw(t, r.Addr())
			req := &discoverypb.DiscoveryRequest{Node: node("subject", "blue"), TypeUrl: tc.typeURL, ResourceNames: tc.names}
			start := time.Now()
			s.request(t, req)
			s.none(t, quiet)
			if tc.after != nil {
				up.Update(tc.typeURL, tc.after...)
			}
			first := s.next(t)
			if got := sotwNames(t, first); !slices.Equal(got, tc.want) {
				t.Fatalf("the first answer, after %v, has %v, want %v", time.Since(start).Round(time.Millisecond), got, tc.want)
			}
			if s := keyStatus(t, r.Relay()); s.Held != 0 {
				t.Errorf("%d watches held after the answer, want none: %+v", s.Held, s)
			}
			s.request(t, &discoverypb.DiscoveryRequest{TypeUrl: tc.typeURL, ResourceNames: tc.names,
				VersionInfo: first.GetVersionInfo(), ResponseNonce: first.GetNonce()})
			s.none(t, quiet)
			if s := keyStatus(t, r.Relay()); s.Held != 0 {
				t.Errorf("the ACK is held: %+v", s)
			}
		})
	}
}
