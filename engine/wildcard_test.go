package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/xdstest"
)

// allRec records a WildcardWatcher's calls as "name: what" lines.
type allRec struct {
	events chan string
}

func newAllRec() *allRec { return &allRec{events: make(chan string, 1000)} }

func (r *allRec) OnResourceChanged(name string, res registry.Resource, err error, done func()) {
	defer done()
	if err != nil {
		r.events <- fmt.Sprintf("%s: changed error %s %s", name, status.Code(err), engine.KindOf(err))
		return
	}
	r.events <- fmt.Sprintf("%s: changed v=%v", name, res.(*testtype.Resource).Fields["v"])
}

func (r *allRec) OnAmbientError(name string, err error, done func()) {
	defer done()
	if err == nil {
		r.events <- name + ": ambient cleared"
		return
	}
	r.events <- fmt.Sprintf("%s: ambient %s %s", name, status.Code(err), engine.KindOf(err))
}

// next returns the next n events, sorted: the calls about different
// resources of one response come in no fixed order.
func (r *allRec) next(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	for range n {
		select {
		case ev := <-r.events:
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %v, want %d events", got, n)
		}
	}
	slices.Sort(got)
	return got
}

// answered checks that the next event is the subscription's ("", nil):
// the server's response was applied, every resource of it delivered.
func (r *allRec) answered(t *testing.T) {
	t.Helper()
	wantEvents(t, r.next(t, 1), ": ambient cleared")
}

func (r *allRec) expectNone(t *testing.T) {
	t.Helper()
	select {
	case ev := <-r.events:
		t.Fatalf("unexpected %s", ev)
	case <-time.After(30 * time.Millisecond):
	}
}

func wantEvents(t *testing.T, got []string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// TestWildcardSotW: a wildcard is written as Envoy first writes it, with
// no names (the legacy wildcard, which every server reads), names watched
// beside it implied; it reports every resource the server sends, each by
// its name, with A88's meaning: a deletion the cache keeps is ambient. A
// name watched both ways is delivered to both watchers. Cancelling the
// wildcard writes the names left, and the resources it alone held leave
// the cache.
func TestWildcardSotW(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	all := newAllRec()
	cancelAll := f.eng.WatchAll(required, all)
	st := f.servers[0].WaitStream(t)
	wantRequest(t, st.RecvT(t), required, "", "")
	wa, _ := f.watch(required, "a")
	wantRequest(t, st.RecvT(t), required, "", "") // a is implied, and has its timer
	n := st.SendT(t, resp(required, "1", res(required, "a", "v", "1"), res(required, "b", "v", "1")))
	wantEvents(t, all.next(t, 2), "a: changed v=1", "b: changed v=1")
	all.answered(t)
	if ev := wa.NextChanged(t); ev.Err != nil {
		t.Fatalf("a's own watcher: %v", ev)
	}
	wantRequest(t, st.RecvT(t), required, "1", n)

	// b is gone from the next response: deleted, kept by A88, ambient.
	n = st.SendT(t, resp(required, "2", res(required, "a", "v", "2")))
	wantEvents(t, all.next(t, 2), "a: changed v=2", "b: ambient NotFound deleted")
	all.answered(t)
	checkDump(t, f.eng, required, "b", adminpb.ClientResourceStatus_DOES_NOT_EXIST, true)
	st.RecvT(t)

	cancelAll()
	wantRequest(t, st.RecvT(t), required, "2", n, "a")
	for _, g := range f.eng.Dump().GetGenericXdsConfigs() {
		if g.GetName() != "a" {
			t.Fatalf("CSDS still has %s after the wildcard went", g.GetName())
		}
	}
	all.expectNone(t)
}

// TestWildcardJoinsLate: a wildcard made when resources are cached gets
// each of them at once. On a State-of-the-World stream that has written
// names of the type, no request can add the wildcard in a form every
// server reads: after names, an empty list means "none", and "*" is a
// name to some servers. The stream is replaced at once, without backoff
// or an error, and the new one writes the legacy wildcard first.
func TestWildcardJoinsLate(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.watch(thing, "a")
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, thing, "a")
	n := st.SendT(t, resp(thing, "1", res(thing, "a", "v", "1")))
	wantRequest(t, st.RecvT(t), thing, "1", n, "a")
	all := newAllRec()
	f.eng.WatchAll(thing, all)
	wantEvents(t, all.next(t, 1), "a: changed v=1")
	select {
	case <-st.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the stream that had written names stayed open")
	}
	st2 := f.servers[0].WaitStream(t)
	wantRequest(t, st2.RecvT(t), thing, "", "") // asked afresh: every server answers it whole
	st2.SendT(t, resp(thing, "1", res(thing, "a", "v", "1"), res(thing, "b", "v", "1")))
	wantEvents(t, all.next(t, 1), "b: changed v=1")
	all.answered(t)
	if a := f.eng.Authorities()[0]; a.Err != nil || !a.Connected {
		t.Fatalf("after the replacement: Connected %v, Err %v; want a healthy server", a.Connected, a.Err)
	}
}

// TestWildcardDelta: over incremental xDS a wildcard subscribes "*",
// removals are deletions, and cancelling it unsubscribes "*" (while a
// watch by name keeps the stream).
func TestWildcardDelta(t *testing.T) {
	f := deltaFixture(t)
	all := newAllRec()
	cancel := f.eng.WatchAll(thing, all)
	st := f.servers[0].WaitDeltaStream(t)
	wantDelta(t, st.RecvT(t), thing, "", []string{"*"}, nil)
	f.watch(required, "l")
	wantDelta(t, st.RecvT(t), required, "", []string{"l"}, nil)
	n := st.SendT(t, scriptedads.DeltaResponse(thing, "s1", []*discoverypb.Resource{deltaRes("a", "1", "v", "1"), deltaRes("b", "1", "v", "1")}))
	wantEvents(t, all.next(t, 2), "a: changed v=1", "b: changed v=1")
	all.answered(t)
	wantDelta(t, st.RecvT(t), thing, n, nil, nil)
	n = st.SendT(t, scriptedads.DeltaResponse(thing, "s2", nil, "a"))
	wantEvents(t, all.next(t, 1), "a: ambient NotFound deleted")
	all.answered(t)
	wantDelta(t, st.RecvT(t), thing, n, nil, nil)
	cancel()
	wantDelta(t, st.RecvT(t), thing, "", nil, []string{"*"})
}

// TestWildcardServerState: a wildcard hears of its server as a whole,
// under the name "", when it fails and when it answers again.
func TestWildcardServerState(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	all := newAllRec()
	f.eng.WatchAll(thing, all)
	st := f.servers[0].WaitStream(t)
	st.RecvT(t)
	st.Close(status.Error(codes.Unavailable, "going away")) // no response: a connectivity failure
	wantEvents(t, all.next(t, 1), ": ambient Unavailable connectivity")
	f.clock.WaitForTimer(t, time.Second) // the backoff
	f.clock.Advance(time.Second)
	st2 := f.servers[0].WaitStream(t)
	recvNames(t, st2, thing)
	st2.SendT(t, resp(thing, "1", res(thing, "a", "v", "1")))
	wantEvents(t, all.next(t, 2), ": ambient cleared", "a: changed v=1")
	all.answered(t)
}

// TestWildcardGoControlPlane: against go-control-plane's server, which
// answers "*" with every resource of the type, a wildcard gets them all,
// then an added one and a removed one.
func TestWildcardGoControlPlane(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := xdstest.NewServer(t, xdstest.Options{})
			srv.Set(xdstest.R("a", testtype.Message("a", "v", "1")).As(required), xdstest.R("b", testtype.Message("b", "v", "1")).As(required))
			e := realClockEngine(t, srv.Addr(), func(c *engine.Config) { c.Bootstrap.Servers[0].ServerFeatures = p.features })
			all := newAllRec()
			defer e.WatchAll(required, all)()
			wantEvents(t, all.next(t, 2), "a: changed v=1", "b: changed v=1")
			all.answered(t)
			srv.Set(xdstest.R("a", testtype.Message("a", "v", "1")).As(required), xdstest.R("c", testtype.Message("c", "v", "1")).As(required))
			wantEvents(t, all.next(t, 2), "b: ambient NotFound deleted", "c: changed v=1")
			all.answered(t)
		})
	}
}
