package engine_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
)

// TestSubscriptionsFollowWatches: after any mix of watches, cancels and
// re-watches, the next request lists exactly the watched names, sorted.
// The list is kept by merging the names that changed into the last one,
// so this checks the merge against the set the test keeps itself.
func TestSubscriptionsFollowWatches(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run("seed"+strconv.FormatUint(seed, 10), func(t *testing.T) {
			f := newFixture(t, fixtureOpts{})
			rng := rand.New(rand.NewPCG(seed, 0))
			cancels := map[string][]func(){}
			var noop engine.WatcherFuncs
			watch := func(name string) {
				cancels[name] = append(cancels[name], f.eng.Watch(thing, name, noop))
			}
			for i := 0; i < 20; i++ {
				watch("n" + strconv.Itoa(i))
			}
			st := f.servers[0].WaitStream(t)
			for round := 0; round < 15; round++ {
				for op := 0; op < 10; op++ {
					name := "n" + strconv.Itoa(rng.IntN(40))
					if cs := cancels[name]; len(cs) > 0 && rng.IntN(2) == 0 {
						cs[len(cs)-1]()
						cancels[name] = cs[:len(cs)-1]
						continue
					}
					watch(name)
				}
				var want []string
				for name, cs := range cancels {
					if len(cs) > 0 {
						want = append(want, name)
					}
				}
				if len(want) == 0 {
					watch("n0")
					want = []string{"n0"}
				}
				slices.Sort(want)
				recvNames(t, st, thing, want...)
			}
		})
	}
}

// TestSubscriptionsAfterChurnWhileDown: watches and cancels made while
// the stream is down are gathered until the next request; past a bound
// the channel stops gathering them and rebuilds the list from the cache.
// Either way the first request of the new stream lists exactly the
// watched names.
func TestSubscriptionsAfterChurnWhileDown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		churn int // watch-and-cancel pairs while down
	}{
		{"merged", 100},
		{"rebuilt past the bound", 1500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{})
			var noop engine.WatcherFuncs
			var want []string
			for i := 0; i < 20; i++ {
				name := "n" + strconv.Itoa(i)
				f.eng.Watch(thing, name, noop)
				want = append(want, name)
			}
			slices.Sort(want)
			recvNames(t, f.servers[0].WaitStream(t), thing, want...)
			f.servers[0].Stop()
			f.clock.WaitForTimer(t, time.Second) // the retry's backoff
			for i := 0; i < tc.churn; i++ {
				f.eng.Watch(thing, "gone-"+strconv.Itoa(i%7), noop)()
			}
			cancelN3 := f.eng.Watch(thing, "n3", noop) // a second watch of a name
			for i := 0; i < 10; i++ {
				name := "new" + strconv.Itoa(i)
				f.eng.Watch(thing, name, noop)
				want = append(want, name)
			}
			cancelN3()
			slices.Sort(want)
			f.servers[0].Restart()
			f.clock.Advance(time.Second)
			st := f.servers[0].WaitStream(t)
			if got := st.RecvT(t).GetResourceNames(); !slices.Equal(got, want) {
				t.Fatalf("first request of the new stream: %v, want %v", got, want)
			}
		})
	}
}

// TestSubscriptionChangesOfAnEndedStream: the send loop builds a
// request's list of names from the changes since its last one with the
// engine's lock released, and gives the list back once written. When the
// stream ends while that request is being written, the list never comes
// back: the next stream's first request must still carry the changes,
// with those made while it was written.
func TestSubscriptionChangesOfAnEndedStream(t *testing.T) {
	tr := &memTransport{streams: make(chan *memStream, 1)}
	eng, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("mem")}, Node: bootstrap.Node{ID: nodeID}},
		Registry:  registry.MustNew(cds.Type),
		Switches:  &features.Switches{},
		Transport: tr,
		Backoff:   func(int) time.Duration { return 0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var noop engine.WatcherFuncs
	eng.Watch(cds.TypeURL, "a", noop)
	st := <-tr.streams
	expectNames(t, st, "a")
	eng.Watch(cds.TypeURL, "b", noop)
	expectNames(t, st, "a", "b")

	st.hold.Store(true)
	cancelC := eng.Watch(cds.TypeURL, "c", noop)
	expectNames(t, st, "a", "b", "c") // being written, never done
	eng.Watch(cds.TypeURL, "d", noop)
	st.end <- status.Error(codes.Unavailable, "stream cut")

	next := <-tr.streams
	expectNames(t, next, "a", "b", "c", "d")
	cancelC()
	expectNames(t, next, "a", "b", "d")
}

// TestAuthorityMovingHereMidResponse: a response of an all-required type
// is applied in parts, with the lock released between them, and an
// authority can fall back to the response's server meanwhile (A71). An
// entry of that authority which the response named in a part applied
// before the move was not marked as named then (the server was not the
// authority's own), yet the response named it: it is not deleted.
func TestAuthorityMovingHereMidResponse(t *testing.T) {
	const (
		x1 = "xdstp://x.example/xdsengine.test.RequiredThing/x1"
		x2 = "xdstp://x.example/xdsengine.test.RequiredThing/x2"
		n  = 100 * wire.ApplyPart // old-style names, served by the fallback
	)
	f := newFixture(t, fixtureOpts{servers: 2, mutate: func(c *engine.Config) {
		primary, fallback := c.Bootstrap.Servers[0], c.Bootstrap.Servers[1]
		c.Bootstrap.Servers = []bootstrap.ServerConfig{fallback}
		c.Bootstrap.Authorities = map[string]bootstrap.Authority{
			"x.example": {Servers: []bootstrap.ServerConfig{primary, fallback}},
		}
	}})
	primary, fallback := f.servers[0], f.servers[1]

	wx1, _ := f.watch(required, x1)
	pst := primary.WaitStream(t)
	recvNames(t, pst, required, x1)
	pst.SendT(t, resp(required, "p1", res(required, x1, "v", "primary")))
	wx1.NextChanged(t)

	// The moment of the move is observed through deliveries, which keep
	// the order their notices were made in: the move happens in the Watch
	// of x2 made by the first delivery of the response (its first part
	// is applied by then), and the watch of x1 made right after it is
	// delivered before the response's last resource if both calls took
	// the lock before the last part.
	var mu sync.Mutex
	var order []string
	record := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	var delivered sync.WaitGroup
	delivered.Add(n)
	var moved sync.Once
	wy := engine.WatcherFuncs{ResourceChanged: func(r registry.Resource, err error, done func()) {
		defer done()
		if err != nil {
			t.Errorf("y: %v", err)
			return
		}
		name := resourceName(t, r)
		record(name)
		moved.Do(func() {
			f.eng.Watch(required, x2, engine.WatcherFuncs{})
			f.eng.Watch(required, x1, engine.WatcherFuncs{ResourceChanged: func(_ registry.Resource, _ error, done func()) {
				record("x1 again")
				done()
			}})
		})
		delivered.Done()
	}}
	ys := make([]string, n)
	for i := range ys {
		ys[i] = fmt.Sprintf("y%05d", i)
		f.eng.Watch(required, ys[i], wy)
	}
	fst := fallback.WaitStream(t)
	recvNames(t, fst, required, ys...)

	// The primary goes: x1 stays cached, and with nothing uncached the
	// authority stays where it is until x2 is watched.
	primary.Stop()
	for ambient := false; !ambient; {
		select {
		case ev := <-wx1.Events():
			ambient = ev.Ambient
		case <-time.After(20 * time.Millisecond):
			f.clock.Advance(time.Second) // the primary's retries
		}
	}

	resources := []*anypb.Any{res(required, x1, "v", "fallback")}
	for _, y := range ys {
		resources = append(resources, res(required, y))
	}
	fst.SendT(t, resp(required, "f1", resources...))
	delivered.Wait()
	if ev := wx1.NextChanged(t); ev.Err != nil {
		t.Fatalf("x1: %v, want the fallback's resource", ev.Err)
	}
	wx1.ExpectNone(t, 50*time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	again := slices.Index(order, "x1 again")
	if last := slices.Index(order, ys[n-1]); again < 0 || again > last {
		t.Fatalf("the authority moved after the response's last part (deliveries: ... %v): nothing tested", order[max(0, len(order)-3):])
	}
}

// expectNames fails unless the next request the client wrote names
// exactly want, in order.
func expectNames(t *testing.T, st *memStream, want ...string) {
	t.Helper()
	if got := st.request(t).GetResourceNames(); !slices.Equal(got, want) {
		t.Fatalf("request names %v, want %v", got, want)
	}
}

// TestLargeResponseAppliedInParts: a response larger than one part
// (wire.ApplyPart resources) is applied with the engine's lock released
// between parts. Watchers of the first parts are notified, and watch more
// names, while later parts are applied; still no request is written with
// the response's nonce before its version is accepted (that would read as
// a NACK), the invalid resource in the last part is NACKed, and a
// resource missing from the response is reported deleted once the whole
// response is applied.
func TestLargeResponseAppliedInParts(t *testing.T) {
	const n = 2000
	f := newFixture(t, fixtureOpts{})
	var mu sync.Mutex
	changed := map[string]error{}
	extra := make(chan func(), n)
	var w engine.WatcherFuncs
	w = engine.WatcherFuncs{ResourceChanged: func(r registry.Resource, err error, done func()) {
		defer done()
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			var ee *engine.Error
			if errors.As(err, &ee) {
				changed[ee.Name] = err
			}
			return
		}
		name := resourceName(t, r)
		changed[name] = nil
		if len(changed)%100 == 1 {
			// A watcher that watches more on news, as the graph watch
			// does: the subscription changes mid-response.
			extra <- f.eng.Watch(required, "extra-"+name, w)
		}
	}, AmbientError: func(err error, done func()) {
		defer done()
		// A deletion of a cached resource is ambient (A88): it stays in
		// use.
		var ee *engine.Error
		if errors.As(err, &ee) {
			mu.Lock()
			changed[ee.Name] = err
			mu.Unlock()
		}
	}}
	var names []string
	for i := 0; i < n; i++ {
		name := "r" + strconv.Itoa(10000+i)
		names = append(names, name)
		f.eng.Watch(required, name, w)
	}
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, required, names...)

	var resources []*anypb.Any
	for i, name := range names[:n-1] { // the last one is left out: deleted
		if i == n-2 {
			resources = append(resources, res(required, name, "invalid", "true"))
			continue
		}
		resources = append(resources, res(required, name))
	}
	// Version 1 first, so that there is something to delete.
	var all []*anypb.Any
	for _, name := range names {
		all = append(all, res(required, name))
	}
	n1 := st.SendT(t, resp(required, "1", all...))
	waitRequest(t, st, func(r *discoverypb.DiscoveryRequest) bool {
		return r.GetResponseNonce() == n1 && r.GetVersionInfo() == "1"
	})

	n2 := st.SendT(t, resp(required, "2", resources...))
	var nack *discoverypb.DiscoveryRequest
	deadline := time.Now().Add(10 * time.Second)
	for nack == nil && time.Now().Before(deadline) {
		req := st.RecvT(t)
		if req.GetResponseNonce() != n2 {
			continue
		}
		// The response is NACKed (one invalid resource) but its version
		// is accepted (the others are valid): every request answering it
		// says version 2 and carries, the first time, the error.
		if req.GetVersionInfo() != "2" {
			t.Fatalf("request with the response's nonce %q says version %q, want 2: written before the response was applied", n2, req.GetVersionInfo())
		}
		if req.GetErrorDetail() != nil {
			nack = req
		}
	}
	if nack == nil {
		t.Fatal("no NACK of version 2")
	}
	if got := nack.GetErrorDetail().GetMessage(); !contains(got, names[n-2]) {
		t.Fatalf("NACK %q does not name the invalid resource %s", got, names[n-2])
	}
	deleted := names[n-1]
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		err := changed[deleted]
		mu.Unlock()
		if status.Code(err) == codes.NotFound {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%s, missing from version 2: watcher saw %v, want NOT_FOUND (deleted, as an ambient error)", deleted, err)
		}
	}
	close(extra)
	for cancel := range extra {
		cancel()
	}
}

func waitRequest(t *testing.T, st interface {
	RecvT(testing.TB) *discoverypb.DiscoveryRequest
}, match func(*discoverypb.DiscoveryRequest) bool) *discoverypb.DiscoveryRequest {
	t.Helper()
	for {
		if req := st.RecvT(t); match(req) {
			return req
		}
	}
}
