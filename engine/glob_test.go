package engine_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/xdstest"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

const (
	globName = "xdstp://a/xdsengine.test.Thing/coll/*"
	member1  = "xdstp://a/xdsengine.test.Thing/coll/m1"
	member2  = "xdstp://a/xdsengine.test.Thing/coll/m2"
)

func member(name, version string, kv ...any) *discoverypb.Resource {
	return &discoverypb.Resource{Name: name, Version: version, Resource: res(thing, name, kv...)}
}

// wantMembers checks that an event delivers a glob collection with
// exactly the named members.
func wantMembers(t *testing.T, ev watchrec.Event, names ...string) {
	t.Helper()
	coll, ok := ev.Resource.(*registry.GlobCollection)
	if ev.Err != nil || !ok {
		t.Fatalf("got %v, want a glob collection of %v", ev, names)
	}
	var got []string
	for _, m := range coll.Members {
		got = append(got, m.Name)
		if resourceName(t, m.Resource) != m.Name {
			t.Errorf("member %s holds resource %s", m.Name, resourceName(t, m.Resource))
		}
	}
	if coll.Name != globName || !slices.Equal(got, names) {
		t.Fatalf("collection %s members %v, want %s members %v", coll.Name, got, globName, names)
	}
}

// TestGlobCollection: a watch of an xdstp:// glob collection (xRFC TP1)
// over delta is subscribed by its name; members the server sends and
// removes are merged into one collection value; an invalid member is
// NACKed and leaves the collection as it was; the members answer the
// collection's does-not-exist timer.
func TestGlobCollection(t *testing.T) {
	f := newFixture(t, fixtureOpts{serverFeatures: []string{features.NameDeltaXDS}, mutate: func(c *engine.Config) {
		c.Bootstrap.Authorities = map[string]bootstrap.Authority{"a": {}}
	}})
	w, _ := f.watch(thing, globName)
	st := f.servers[0].WaitDeltaStream(t)
	wantDelta(t, st.RecvT(t), thing, "", []string{globName}, nil)

	n := st.SendT(t, scriptedads.DeltaResponse(thing, "s1", []*discoverypb.Resource{
		member(member2, "1"), member(member1, "1"),
		member("xdstp://a/xdsengine.test.Thing/other/m3", "1"), // not under the collection
	}))
	wantMembers(t, w.NextChanged(t), member1, member2)
	wantDelta(t, st.RecvT(t), thing, n, nil, nil)
	f.clock.Advance(time.Minute) // the collection's timer was answered
	w.ExpectNone(t, 20*time.Millisecond)

	st.SendT(t, scriptedads.DeltaResponse(thing, "s2", nil, member1))
	wantMembers(t, w.NextChanged(t), member2)
	st.RecvT(t)

	n = st.SendT(t, scriptedads.DeltaResponse(thing, "s3", []*discoverypb.Resource{member(member2, "2", "invalid", "bad port")}))
	checkEvent(t, w.NextAmbient(t), true, codes.InvalidArgument)
	if nack := st.RecvT(t); nack.GetResponseNonce() != n || nack.GetErrorDetail() == nil {
		t.Fatalf("got %v, want the NACK of %s", nack, n)
	}
	st.SendT(t, scriptedads.DeltaResponse(thing, "s4", []*discoverypb.Resource{member(member1, "3")}))
	wantMembers(t, w.NextChanged(t), member1, member2)
	st.RecvT(t)

	// A new stream tells the server which members the client holds, so
	// that it can say which went away meanwhile.
	st.Close(nil)
	st2 := f.servers[0].WaitDeltaStream(t)
	req := st2.RecvT(t)
	if want := map[string]string{member1: "3", member2: "1"}; !maps.Equal(req.GetInitialResourceVersions(), want) ||
		!slices.Equal(req.GetResourceNamesSubscribe(), []string{globName}) {
		t.Fatalf("new stream: subscribe %v, initial versions %v; want [%s], %v", req.GetResourceNamesSubscribe(), req.GetInitialResourceVersions(), globName, want)
	}
	st2.SendT(t, scriptedads.DeltaResponse(thing, "s5", nil, member2))
	wantMembers(t, w.NextChanged(t), member1)
}

// TestGlobLEDSOverDelta: an EDS locality whose endpoints are a LEDS glob
// collection (xRFC TP1) resolves, through the dependency graph, to the
// members an incremental server adds and removes.
func TestGlobLEDSOverDelta(t *testing.T) {
	const (
		glob = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpoint/backend/z1/*"
		m1   = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpoint/backend/z1/m1"
		m2   = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpoint/backend/z1/m2"
	)
	f := newFixture(t, fixtureOpts{serverFeatures: []string{features.NameDeltaXDS}, mutate: func(c *engine.Config) {
		c.Registry = builtin.Registry()
		c.Bootstrap.Authorities = map[string]bootstrap.Authority{"endpoints.example": {}}
	}})
	graphs := make(chan *graph.Graph, 16)
	defer graph.Watch(f.eng, registry.Ref{TypeURL: eds.TypeURL, Name: "backend"}, graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
		defer done()
		if err == nil {
			graphs <- g
		}
	}))()
	endpointsOf := func(g *graph.Graph) []string {
		var out []string
		for _, l := range g.Node(registry.Ref{TypeURL: eds.TypeURL, Name: "backend"}).Resource.(*eds.ClusterLoadAssignment).Localities {
			for _, e := range l.Endpoints {
				out = append(out, e.Address.String())
			}
		}
		return out
	}
	await := func(want ...string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case g := <-graphs:
				if slices.Equal(endpointsOf(g), want) {
					return
				}
			case <-timeout:
				t.Fatalf("endpoints never became %v", want)
			}
		}
	}
	asAny := func(m proto.Message) *anypb.Any {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	st := f.servers[0].WaitDeltaStream(t)
	wantDelta(t, st.RecvT(t), eds.TypeURL, "", []string{"backend"}, nil)
	st.SendT(t, scriptedads.DeltaResponse(eds.TypeURL, "1", []*discoverypb.Resource{{Name: "backend", Version: "1",
		Resource: asAny(xdstest.ClusterLoadAssignment("backend", xdstest.Locality{Zone: "z1", Collection: glob}))}}))
	for req := st.RecvT(t); req.GetTypeUrl() != leds.EndpointTypeURL; req = st.RecvT(t) {
	}
	st.SendT(t, scriptedads.DeltaResponse(leds.EndpointTypeURL, "1", []*discoverypb.Resource{
		{Name: m2, Version: "1", Resource: asAny(xdstest.LbEndpoint("10.0.9.2:80"))},
		{Name: m1, Version: "1", Resource: asAny(xdstest.LbEndpoint("10.0.9.1:80"))},
	}))
	await("10.0.9.1:80", "10.0.9.2:80")
	st.SendT(t, scriptedads.DeltaResponse(leds.EndpointTypeURL, "2", nil, m1))
	await("10.0.9.2:80")
}
