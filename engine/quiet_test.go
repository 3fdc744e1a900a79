package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
)

// quietWindow is the window these tests open: apart from the fixture's
// backoff (1 s, 2 s, ...) and does-not-exist timer (15 s), so that an
// advance meant for one moves no other.
const quietWindow = 700 * time.Millisecond

func withQuietWindow(c *engine.Config) { c.QuietWindow = quietWindow }

// waitConnected polls the old-style authority's Connected until it is
// want: the engine learns of the window's end on a goroutine of its own.
func waitConnected(t *testing.T, e *engine.Engine, want bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := e.Authorities()[0]
		if a.Connected == want && (a.Err == nil) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Connected %v, Err %v; want Connected %v", a.Connected, a.Err, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestQuietIncrementalServerIsHealthy: after an outage, an incremental
// server whose resources did not change sends nothing on the new stream
// (initial_resource_versions said it all). Once the stream's request has
// gone unanswered for the quiet window, the stream open, the server
// counts as healthy again: Connected, and the ambient UNAVAILABLE of the
// outage cleared. A server that never answered is not made healthy by
// its silence.
func TestQuietIncrementalServerIsHealthy(t *testing.T) {
	f := newFixture(t, fixtureOpts{serverFeatures: []string{features.NameDeltaXDS}, mutate: withQuietWindow})
	w, _ := f.watch(thing, "a")
	st := f.servers[0].WaitDeltaStream(t)
	wantDelta(t, st.RecvT(t), thing, "", []string{"a"}, nil)
	n := st.SendT(t, scriptedads.DeltaResponse(thing, "s1", []*discoverypb.Resource{deltaRes("a", "1", "v", "1")}))
	if ev := w.NextChanged(t); ev.Err != nil {
		t.Fatalf("a: %v", ev.Err)
	}
	wantDelta(t, st.RecvT(t), thing, n, nil, nil)
	waitConnected(t, f.eng, true)

	st.Close(status.Error(codes.Unavailable, "restarting"))
	st2 := f.servers[0].WaitDeltaStream(t) // a stream that saw a response is replaced at once
	wantDelta(t, st2.RecvT(t), thing, "", []string{"a"}, nil)
	st2.Close(status.Error(codes.Unavailable, "still down")) // no response: an outage
	if ev := w.NextAmbient(t); status.Code(ev.Err) != codes.Unavailable {
		t.Fatalf("a's ambient error %v, want UNAVAILABLE", ev.Err)
	}
	waitConnected(t, f.eng, false)

	f.clock.WaitForTimer(t, time.Second) // the backoff
	f.clock.Advance(time.Second)
	st3 := f.servers[0].WaitDeltaStream(t)
	req := st3.RecvT(t)
	if v := req.GetInitialResourceVersions()["a"]; v != "1" {
		t.Fatalf("initial_resource_versions %v, want a at 1", req.GetInitialResourceVersions())
	}
	w.ExpectNone(t, 20*time.Millisecond)
	if a := f.eng.Authorities()[0]; a.Connected {
		t.Fatal("Connected before the quiet window ran out")
	}
	f.clock.WaitForTimer(t, quietWindow)
	f.clock.Advance(quietWindow)
	if ev := w.NextAmbient(t); ev.Err != nil {
		t.Fatalf("a's ambient error %v after the quiet window, want it cleared", ev.Err)
	}
	waitConnected(t, f.eng, true)
}

// TestQuietFirstServerStaysUnhealthy: a server that has never answered
// is not healthy by its silence: what it has not sent may be on its way,
// and until it answers, the last-known-good store may be what serves.
func TestQuietFirstServerStaysUnhealthy(t *testing.T) {
	f := newFixture(t, fixtureOpts{serverFeatures: []string{features.NameDeltaXDS}, mutate: withQuietWindow})
	f.watch(thing, "a")
	st := f.servers[0].WaitDeltaStream(t)
	st.RecvT(t)
	f.clock.WaitForTimer(t, quietWindow)
	f.clock.Advance(2 * quietWindow)
	time.Sleep(20 * time.Millisecond) // the window's end, if it were heard, is heard by now
	if a := f.eng.Authorities()[0]; a.Connected {
		t.Fatal("a server that never answered counts as Connected after the quiet window")
	}
}

// TestQuietWildcardJoinIsAnswered: a wildcard that joins names the
// stream holds every resource of is answered by the server's silence: an
// incremental server (go-control-plane's LinearCache over either
// protocol, too) has nothing new to send, and a wildcard watcher must
// not wait for the next change to learn it has it all.
func TestQuietWildcardJoinIsAnswered(t *testing.T) {
	f := newFixture(t, fixtureOpts{serverFeatures: []string{features.NameDeltaXDS}, mutate: withQuietWindow})
	f.watch(thing, "a")
	st := f.servers[0].WaitDeltaStream(t)
	st.RecvT(t)
	n := st.SendT(t, scriptedads.DeltaResponse(thing, "s1", []*discoverypb.Resource{deltaRes("a", "1", "v", "1")}))
	wantDelta(t, st.RecvT(t), thing, n, nil, nil)

	all := newAllRec()
	f.eng.WatchAll(thing, all)
	wantEvents(t, all.next(t, 1), "a: changed v=1")
	wantDelta(t, st.RecvT(t), thing, "", []string{"*"}, nil)
	all.expectNone(t)
	f.clock.WaitForTimer(t, quietWindow)
	f.clock.Advance(quietWindow)
	all.answered(t)
}

// TestRepeatedResponseCostsNothing: a server that answers each ACK with
// the response it acknowledged (go-control-plane's SnapshotCache does so
// for a subscription it cannot satisfy) is ACKed, as the protocol wants,
// but the repeat is neither decoded nor applied: no watcher, a wildcard's
// included, hears of it. It is counted and logged. A response the same
// as the last, in answer to a subscription change, is an answer and is
// applied as any other.
func TestRepeatedResponseCostsNothing(t *testing.T) {
	var decodes atomic.Int64
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) {
		c.Registry = registry.MustNew(countDecodes(testtype.Type(thing, false), &decodes))
		c.MeterProvider = mp
	}})
	all := newAllRec()
	f.eng.WatchAll(thing, all)
	st := f.servers[0].WaitStream(t)
	st.RecvT(t)
	v1 := resp(thing, "1", res(thing, "a", "v", "1"), res(thing, "b", "v", "1"))
	n := st.SendT(t, v1)
	wantEvents(t, all.next(t, 2), "a: changed v=1", "b: changed v=1")
	all.answered(t)
	wantRequest(t, st.RecvT(t), thing, "1", n)
	before := decodes.Load()

	for range 3 {
		n = st.SendT(t, v1)
		wantRequest(t, st.RecvT(t), thing, "1", n)
	}
	all.expectNone(t)
	if got := decodes.Load() - before; got != 0 {
		t.Fatalf("%d decodes of repeated responses, want none", got)
	}
	if got := collect(t, reader)[engine.MetricRepeatedResponses]["grpc.target= grpc.xds.resource_type=xdsengine.test.Thing "]; got != 3 {
		t.Fatalf("%s = %d, want 3", engine.MetricRepeatedResponses, got)
	}

	// A new name beside the wildcard: the same response answers it.
	f.watch(thing, "c")
	st.RecvT(t)
	n = st.SendT(t, v1)
	all.answered(t)
	wantRequest(t, st.RecvT(t), thing, "1", n)
}
