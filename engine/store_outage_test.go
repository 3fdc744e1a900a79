package engine_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/tcpproxy"
	"github.com/xdsengine/xdsengine/transport"
)

// The last-known-good store on bad days: a clean shutdown, a server
// whose address drops what it is sent, and a server that returns without
// a resource the store served.

// TestStoreKeepsWhatACleanShutdownCancels: a program that cancels its
// watches before Close (Go's usual defer order) leaves the store as full
// as one that does not: cancelling a watch forgets nothing, and the next
// start during an outage is served what the server had sent.
func TestStoreKeepsWhatACleanShutdownCancels(t *testing.T) {
	store := newMemStore()
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store = store }})
	_, cancelA := f.watch(thing, "a")
	_, cancelB := f.watch(thing, "b")
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, thing, "a", "b")
	n := st.SendT(t, resp(thing, "1", res(thing, "a", "v", "1"), res(thing, "b", "v", "1")))
	wantRequest(t, st.RecvT(t), thing, "1", n, "a", "b")
	cancelB()
	wantRequest(t, st.RecvT(t), thing, "1", n, "a") // b's entry goes with this request
	cancelA()                                       // the last watch: the stream ends, as gRPC's does
	if err := f.eng.Close(); err != nil {
		t.Fatal(err)
	}
	if got := store.names(); !slices.Equal(got, []string{"a@1", "b@1"}) {
		t.Fatalf("after cancelling every watch and Close, the store holds %v, want [a@1 b@1]", got)
	}

	f.servers[0].Stop()
	e := newEngine(t, f.cfg)
	w := newUpdRec()
	e.Watch(thing, "b", w)
	if u := w.update(t); valueOf(u) != "1" || !u.FromStore {
		t.Fatalf("first update %+v, want b=1 from the store", u)
	}
}

// TestStoreForgetsWhatAgedOut: a resource kept longer than StoreMaxAge
// is not served, and the store forgets it when it is next loaded (nothing
// else would: no watch of it is left to).
func TestStoreForgetsWhatAgedOut(t *testing.T) {
	store := newMemStore()
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store, c.StoreMaxAge = store, time.Hour }})
	firstRun(t, f, thing, []string{"a=1"})
	f.clock.Advance(2 * time.Hour)
	e := newEngine(t, f.cfg)
	w := newUpdRec()
	e.Watch(thing, "a", w)
	if u := w.update(t); u.Resource != nil || status.Code(u.Err) != codes.Unavailable {
		t.Fatalf("first update %+v, want UNAVAILABLE and nothing from the store", u)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if got := store.names(); len(got) != 0 {
		t.Fatalf("the store still holds %v after a load found it past StoreMaxAge", got)
	}
}

// TestStoreServesABlackHoledServerAfterTheWait: when the path to the
// server goes silent (a real TCP proxy that accepts connections and
// forwards nothing: a black-holed address, or a server that accepts and
// never answers), no stream fails for gRPC's 20 s connection attempt; the
// store serves after Config.StoreWait all the same, with an ambient
// UNAVAILABLE that says why. When the path comes back, what the server
// sends wins.
func TestStoreServesABlackHoledServerAfterTheWait(t *testing.T) {
	store := newMemStore()
	var proxy *tcpproxy.Proxy
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) {
		proxy = tcpproxy.Start(t, c.Bootstrap.Servers[0].URI)
		c.Bootstrap.Servers[0].URI = proxy.Addr()
		c.Store, c.StoreWait = store, 2*time.Second
	}})
	firstRun(t, f, thing, []string{"a=1"})
	f.servers[0].Restart()

	proxy.Pause()
	cfg := f.cfg
	cfg.Transport = transport.GRPC() // gRPC's own connection timeouts, not the fixture's short ones
	e := newEngine(t, cfg)
	w := newUpdRec()
	e.Watch(thing, "a", w)
	w.expectNone(t)
	f.clock.WaitForTimer(t, 2*time.Second)
	f.clock.Advance(2 * time.Second)
	if u := w.update(t); valueOf(u) != "1" || !u.FromStore {
		t.Fatalf("update %+v, want a=1 from the store after the wait", u)
	}
	amb := w.ambient(t)
	if status.Code(amb) != codes.Unavailable || !strings.Contains(amb.Error(), "StoreWait") || !strings.Contains(amb.Error(), "last-known-good store") {
		t.Fatalf("ambient error %v, want UNAVAILABLE naming the store and the wait", amb)
	}
	if a := e.Authorities()[0]; a.FromStore != 1 || a.Connected {
		t.Fatalf("Authorities: FromStore %d, Connected %v; want 1, false", a.FromStore, a.Connected)
	}

	proxy.Resume()
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, thing, "a")
	st.SendT(t, resp(thing, "2", res(thing, "a", "v", "2")))
	if u := w.update(t); valueOf(u) != "2" || u.FromStore {
		t.Fatalf("update %+v, want a=2 from the server", u)
	}
}

// TestStoreResourceTheServerNoLongerSends: after a start from the store,
// the server returns and sends one resource of two. The other, served
// from the store, gets the does-not-exist timer an uncached resource has,
// from the server's first answer: when it runs out, the watcher is told
// NOT_FOUND and drops it, the store forgets it, and nothing is counted as
// served from the store while the server is Connected.
func TestStoreResourceTheServerNoLongerSends(t *testing.T) {
	store := newMemStore()
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store = store }})
	firstRun(t, f, thing, []string{"a=1", "b=1"})

	e := newEngine(t, f.cfg)
	wa, wb := newUpdRec(), newUpdRec()
	e.Watch(thing, "a", wa)
	e.Watch(thing, "b", wb)
	for _, w := range []*updRec{wa, wb} {
		if u := w.update(t); !u.FromStore {
			t.Fatalf("update %+v, want one from the store", u)
		}
		w.ambient(t)
	}

	st := reconnect(t, f)
	recvNames(t, st, thing, "a", "b")
	n := st.SendT(t, resp(thing, "2", res(thing, "a", "v", "2")))
	if u := wa.update(t); valueOf(u) != "2" || u.FromStore {
		t.Fatalf("a: %+v, want a=2 from the server", u)
	}
	if err := wb.ambient(t); err != nil {
		t.Fatalf("b: ambient %v once the server answered, want it cleared", err)
	}
	wantRequest(t, st.RecvT(t), thing, "2", n, "a", "b")
	if a := e.Authorities()[0]; !a.Connected || a.FromStore != 1 {
		t.Fatalf("Authorities: Connected %v, FromStore %d; want true, 1 (b until its timer)", a.Connected, a.FromStore)
	}

	f.clock.WaitForTimer(t, 15*time.Second)
	f.clock.Advance(15 * time.Second)
	if u := wb.update(t); u.Resource != nil || status.Code(u.Err) != codes.NotFound {
		t.Fatalf("b: %+v, want NOT_FOUND and no resource", u)
	}
	checkDump(t, e, thing, "b", adminpb.ClientResourceStatus_DOES_NOT_EXIST, false)
	if a := e.Authorities()[0]; !a.Connected || a.FromStore != 0 {
		t.Fatalf("Authorities: Connected %v, FromStore %d; want true, 0", a.Connected, a.FromStore)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if got := store.names(); !slices.Equal(got, []string{"a@2"}) {
		t.Fatalf("the store holds %v after Close, want [a@2]", got)
	}
}
