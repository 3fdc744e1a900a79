package engine_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

func deltaFixture(t *testing.T, extra ...string) *fixture {
	return newFixture(t, fixtureOpts{serverFeatures: append([]string{features.NameDeltaXDS}, extra...)})
}

// wantDelta checks a delta request's fields that tests care about.
func wantDelta(t *testing.T, got *discoverypb.DeltaDiscoveryRequest, typeURL, nonce string, subscribe, unsubscribe []string) {
	t.Helper()
	if got.GetTypeUrl() != typeURL || got.GetResponseNonce() != nonce ||
		!slices.Equal(got.GetResourceNamesSubscribe(), subscribe) || !slices.Equal(got.GetResourceNamesUnsubscribe(), unsubscribe) {
		t.Fatalf("delta request = {type %s, nonce %q, subscribe %v, unsubscribe %v, nack %v}, want {type %s, nonce %q, subscribe %v, unsubscribe %v}",
			got.GetTypeUrl(), got.GetResponseNonce(), got.GetResourceNamesSubscribe(), got.GetResourceNamesUnsubscribe(), got.GetErrorDetail(),
			typeURL, nonce, subscribe, unsubscribe)
	}
}

func deltaRes(name, version string, kv ...any) *discoverypb.Resource {
	return &discoverypb.Resource{Name: name, Version: version, Resource: res(thing, name, kv...)}
}

// TestDeltaSubscriptions: subscriptions go as changes; the node goes in
// the first request only; each response is answered once, by nonce.
func TestDeltaSubscriptions(t *testing.T) {
	f := deltaFixture(t)
	wa, cancelA := f.watch(thing, "a")
	f.watch(thing, "b")
	st := f.servers[0].WaitDeltaStream(t)
	first := st.RecvT(t)
	if first.GetNode().GetId() != nodeID {
		t.Fatalf("first request node %v, want id %s", first.GetNode(), nodeID)
	}
	for len(first.GetResourceNamesSubscribe()) < 2 { // the two watches may leave apart
		next := st.RecvT(t)
		if next.GetNode() != nil {
			t.Fatal("node sent again")
		}
		first.ResourceNamesSubscribe = append(first.ResourceNamesSubscribe, next.GetResourceNamesSubscribe()...)
	}
	if got := first.GetResourceNamesSubscribe(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("subscribed %v, want [a b]", got)
	}
	n := st.SendT(t, scriptedads.DeltaResponse(thing, "s1", []*discoverypb.Resource{deltaRes("a", "va1"), deltaRes("b", "vb1")}))
	wa.NextChanged(t)
	wantDelta(t, st.RecvT(t), thing, n, nil, nil) // the ACK
	cancelA()
	wantDelta(t, st.RecvT(t), thing, "", nil, []string{"a"})
	f.watch(thing, "c")
	wantDelta(t, st.RecvT(t), thing, "", []string{"c"}, nil)
	st.ExpectNoRequest(t, 50*time.Millisecond)
}

// TestDeltaReconnect: a new stream subscribes every name again, with the
// versions cached from this server, so that the server need not send them
// again; nothing is re-delivered and no does-not-exist timer runs for them.
func TestDeltaReconnect(t *testing.T) {
	f := deltaFixture(t)
	wa, _ := f.watch(thing, "a")
	f.watch(thing, "b")
	st := f.servers[0].WaitDeltaStream(t)
	st.RecvT(t)
	n := st.SendT(t, scriptedads.DeltaResponse(thing, "s1", []*discoverypb.Resource{deltaRes("a", "va1")}))
	wa.NextChanged(t)
	for req := st.RecvT(t); req.GetResponseNonce() != n; req = st.RecvT(t) {
	}
	st.Close(nil) // after a response: replaced at once (A57)
	wa.ExpectNone(t, 20*time.Millisecond)
	st2 := f.servers[0].WaitDeltaStream(t)
	req := st2.RecvT(t)
	if got := req.GetResourceNamesSubscribe(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("new stream subscribes %v, want [a b]", got)
	}
	if got := req.GetInitialResourceVersions(); len(got) != 1 || got["a"] != "va1" {
		t.Fatalf("initial_resource_versions %v, want {a: va1}", got)
	}
	if req.GetNode().GetId() != nodeID {
		t.Fatal("the new stream's first request has no node")
	}
	wa.ExpectNone(t, 50*time.Millisecond)
	if d := f.clock.PendingDurations(); slices.Contains(d, 15*time.Second) {
		// b is uncached: its timer runs. a's must not: count them.
		n := 0
		for _, x := range d {
			if x == 15*time.Second {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d does-not-exist timers pending, want 1 (b only)", n)
		}
	}
}

// TestDeltaRemoved: removed_resources deletes, for every type: a cached
// resource is kept and the deletion is ambient unless the server says
// fail_on_data_errors (A88); an uncached one does not exist.
func TestDeltaRemoved(t *testing.T) {
	tests := []struct {
		name        string
		typeURL     string
		cached      bool
		failOnData  bool
		wantAmbient bool
		wantStatus  adminpb.ClientResourceStatus
		wantCached  bool
	}{
		{"EDS-like, cached", thing, true, false, true, adminpb.ClientResourceStatus_DOES_NOT_EXIST, true},
		{"EDS-like, cached, fail_on_data_errors", thing, true, true, false, adminpb.ClientResourceStatus_DOES_NOT_EXIST, false},
		{"EDS-like, uncached", thing, false, false, false, adminpb.ClientResourceStatus_DOES_NOT_EXIST, false},
		{"LDS-like, cached", required, true, false, true, adminpb.ClientResourceStatus_DOES_NOT_EXIST, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var extra []string
			if tc.failOnData {
				extra = append(extra, features.NameFailOnDataErrors)
			}
			f := deltaFixture(t, extra...)
			w, _ := f.watch(tc.typeURL, "r")
			st := f.servers[0].WaitDeltaStream(t)
			st.RecvT(t)
			if tc.cached {
				st.SendT(t, scriptedads.DeltaResponse(tc.typeURL, "s1", []*discoverypb.Resource{{Name: "r", Version: "1", Resource: res(tc.typeURL, "r")}}))
				w.NextChanged(t)
				st.RecvT(t)
			}
			n := st.SendT(t, scriptedads.DeltaResponse(tc.typeURL, "s2", nil, "r"))
			checkEvent(t, w.Next(t), tc.wantAmbient, codes.NotFound)
			checkDump(t, f.eng, tc.typeURL, "r", tc.wantStatus, tc.wantCached)
			wantDelta(t, st.RecvT(t), tc.typeURL, n, nil, nil)
			if !tc.cached {
				f.clock.Advance(time.Minute) // its timer is stopped: no second event
				w.ExpectNone(t, 20*time.Millisecond)
			}
		})
	}
}

// TestDeltaNACK: an invalid resource is NACKed through error_detail with
// the response's nonce, naming the resource and the rule; the valid ones
// of the response are used, the invalid one's last good version kept.
func TestDeltaNACK(t *testing.T) {
	tests := []struct {
		name     string
		bad      *discoverypb.Resource
		wantNACK []string
	}{
		{"invalid resource", deltaRes("b", "2", "invalid", "port 0 out of range"), []string{`name "b"`, "port 0 out of range"}},
		{"TTL refused", &discoverypb.Resource{Name: "b", Version: "2", Resource: res(thing, "b"), Ttl: durationpb.New(time.Minute)},
			[]string{`name "b"`, "resource TTL (1m0s) is not supported"}},
		{"heartbeat without a resource", &discoverypb.Resource{Name: "b", Version: "2"}, []string{`name "b"`, "Resource holds no resource"}},
		{"wrong type", &discoverypb.Resource{Name: "b", Version: "2", Resource: res(required, "b")}, []string{`name "b"`, "resource type"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := deltaFixture(t)
			wa, _ := f.watch(thing, "a")
			wb, _ := f.watch(thing, "b")
			st := f.servers[0].WaitDeltaStream(t)
			for sub := 0; sub < 2; {
				sub += len(st.RecvT(t).GetResourceNamesSubscribe())
			}
			n1 := st.SendT(t, scriptedads.DeltaResponse(thing, "s1", []*discoverypb.Resource{deltaRes("a", "1"), deltaRes("b", "1")}))
			wa.NextChanged(t)
			wb.NextChanged(t)
			wantDelta(t, st.RecvT(t), thing, n1, nil, nil)
			n2 := st.SendT(t, scriptedads.DeltaResponse(thing, "s2", []*discoverypb.Resource{deltaRes("a", "2", "v", "2"), tc.bad}))
			nack := st.RecvT(t)
			wantDelta(t, nack, thing, n2, nil, nil)
			msg := nack.GetErrorDetail().GetMessage()
			for _, want := range tc.wantNACK {
				if !strings.Contains(msg, want) {
					t.Errorf("NACK %q does not contain %q", msg, want)
				}
			}
			if ev := wa.NextChanged(t); ev.Resource.(*testtype.Resource).Fields["v"] != "2" {
				t.Errorf("a: got %v, want its version 2", ev)
			}
			checkEvent(t, wb.Next(t), true, codes.InvalidArgument)
			checkDump(t, f.eng, thing, "b", adminpb.ClientResourceStatus_NACKED, true)
		})
	}
}

// TestDeltaCSDSVersions: CSDS shows each resource's own version, and the
// authority's status the response's system version.
func TestDeltaCSDSVersions(t *testing.T) {
	f := deltaFixture(t)
	wa, _ := f.watch(thing, "a")
	st := f.servers[0].WaitDeltaStream(t)
	st.RecvT(t)
	r := deltaRes("a", "resource-v7")
	r.Aliases = []string{"ignored-alias"}
	st.SendT(t, scriptedads.DeltaResponse(thing, "system-v3", []*discoverypb.Resource{r}))
	wa.NextChanged(t)
	if got := f.eng.ResourceStatus(thing, "a").GetVersionInfo(); got != "resource-v7" {
		t.Fatalf("CSDS version %q, want the resource's own, resource-v7", got)
	}
	if a := f.eng.Authorities()[0]; !a.Delta || a.Versions[thing] != "system-v3" {
		t.Fatalf("authority %+v, want delta with the system version system-v3 for the type", a)
	}
}

// TestDeltaFlowControl: the next response is not read until the watchers
// of the last have called done; the ACK is not held back.
func TestDeltaFlowControl(t *testing.T) {
	f := deltaFixture(t)
	w := watchrec.NewHolding()
	f.eng.Watch(thing, "a", w)
	st := f.servers[0].WaitDeltaStream(t)
	st.RecvT(t)
	n1 := st.SendT(t, scriptedads.DeltaResponse(thing, "s1", []*discoverypb.Resource{deltaRes("a", "1", "v", "1")}))
	ev1 := w.NextChanged(t)
	wantDelta(t, st.RecvT(t), thing, n1, nil, nil)
	st.SendT(t, scriptedads.DeltaResponse(thing, "s2", []*discoverypb.Resource{deltaRes("a", "2", "v", "2")}))
	w.ExpectNone(t, 100*time.Millisecond)
	ev1.Done()
	ev2 := w.NextChanged(t)
	if ev2.Resource.(*testtype.Resource).Fields["v"] != "2" {
		t.Fatalf("got %v, want version 2", ev2)
	}
	ev2.Done()
}

// TestDeltaGoConfig: bootstrap.ServerConfig.Delta selects delta as the
// server feature does.
func TestDeltaGoConfig(t *testing.T) {
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) {
		s := c.Bootstrap.Servers[0]
		s.Delta = true
		c.Bootstrap = &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{s}, Node: c.Bootstrap.Node}
	}})
	f.watch(thing, "a")
	wantDelta(t, f.servers[0].WaitDeltaStream(t).RecvT(t), thing, "", []string{"a"}, nil)
	if n := f.servers[0].StreamCount(); n != 0 {
		t.Fatalf("%d SotW streams opened, want none", n)
	}
}
