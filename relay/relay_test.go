package relay_test

import (
	"testing"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// edsName is a predicate: the resource is a Cluster of that EDS name.
func edsName(want string) func(registry.Resource, error) bool {
	return func(r registry.Resource, _ error) bool {
		c, ok := r.(*cds.Cluster)
		return ok && c.EDSName() == want
	}
}

// routeName is a predicate: the resource is a Listener on RDS name.
func routeName(want string) func(registry.Resource, error) bool {
	return func(r registry.Resource, _ error) bool {
		l, ok := r.(*lds.Listener)
		return ok && l.RouteConfigName == want
	}
}

func meshResources(eds1 string) []xdstest.Resource {
	return []xdstest.Resource{
		xdstest.R("listener-1", xdstest.Listener("listener-1", "route-1")),
		xdstest.R("route-1", xdstest.RouteConfig("route-1", "cluster-1")),
		xdstest.R("cluster-1", xdstest.Cluster("cluster-1", eds1)),
		xdstest.R(eds1, xdstest.ClusterLoadAssignment(eds1, xdstest.Locality{Zone: "a", Endpoints: []string{"10.0.0.1:80"}})),
	}
}

// TestFanOut: clients of one key, over State of the World and
// incremental, get the upstream's resources and its updates, through one
// upstream stream.
func TestFanOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delta []bool // one client each
	}{
		{"sotw", []bool{false, false}},
		{"delta", []bool{true, true}},
		{"mixed", []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, "upstream")
			up.Set(meshResources("eds-1")...)
			r := newRelay(t, up, relaytest.Options{}, nil)
			var watches []map[string]*latest
			for i, delta := range tc.delta {
				c := client(t, r, relaytest.BootstrapOptions{NodeID: "client-" + string(rune('a'+i)), Cluster: "blue", Delta: delta})
				watches = append(watches, map[string]*latest{
					lds.TypeURL: watch(t, c, lds.TypeURL, "listener-1"),
					rds.TypeURL: watch(t, c, rds.TypeURL, "route-1"),
					cds.TypeURL: watch(t, c, cds.TypeURL, "cluster-1"),
					eds.TypeURL: watch(t, c, eds.TypeURL, "eds-1"),
				})
			}
			for _, w := range watches {
				w[lds.TypeURL].waitFor(t, "the listener", routeName("route-1"))
				w[rds.TypeURL].waitFor(t, "the route", func(r registry.Resource, _ error) bool { return r != nil })
				w[cds.TypeURL].waitFor(t, "the cluster", edsName("eds-1"))
				w[eds.TypeURL].waitFor(t, "the endpoints", func(r registry.Resource, _ error) bool { return r != nil })
			}
			up.Update(cds.TypeURL, xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-2")))
			for _, w := range watches {
				w[cds.TypeURL].waitFor(t, "the updated cluster", edsName("eds-2"))
			}
			if n := up.StreamsOpened(); n != 1 {
				t.Errorf("upstream streams opened = %d, want 1 for %d clients of one key", n, len(tc.delta))
			}
		})
	}
}

// TestUnknownType: a type the relay's registry does not have is answered
// with nothing, by name or wildcard, and the stream goes on serving the
// others (go-control-plane's MuxCache would end it).
func TestUnknownType(t *testing.T) {
	const secrets = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
	up := newUpstream(t, "upstream")
	up.Set(meshResources("eds-1")...)
	r := newRelay(t, up, relaytest.Options{}, nil)
	s := openSotw(t, r.Addr())
	s.request(t, &discoverypb.DiscoveryRequest{Node: node("envoy", "blue"), TypeUrl: secrets})
	s.request(t, &discoverypb.DiscoveryRequest{TypeUrl: cds.TypeURL, ResourceNames: []string{"cluster-1"}})
	secretsAnswered := false
	for clusters := 0; !secretsAnswered || clusters == 0; {
		resp := s.next(t)
		switch resp.GetTypeUrl() {
		case secrets:
			secretsAnswered = true
			if n := len(resp.GetResources()); n != 0 {
				t.Fatalf("%d secrets served, want none", n)
			}
		case cds.TypeURL:
			clusters = len(resp.GetResources())
			s.request(t, &discoverypb.DiscoveryRequest{TypeUrl: cds.TypeURL, ResourceNames: []string{"cluster-1"},
				VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce()})
		}
	}
}
