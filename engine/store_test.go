package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/engine/storage"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
)

// memStore is an storage.Store in memory, with the digest rule of a real
// one: Load of another digest returns nothing, Apply of another replaces
// what it holds.
type memStore struct {
	mu     sync.Mutex
	digest []byte
	kept   map[[2]string]storage.Resource // by type URL and name
	sets   int
	loads  int
}

func newMemStore() *memStore { return &memStore{kept: map[[2]string]storage.Resource{}} }

func (s *memStore) Load(digest []byte) (storage.Loaded, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	if !bytes.Equal(digest, s.digest) {
		return storage.Loaded{}, nil
	}
	var out storage.Loaded
	for _, r := range s.kept {
		out.Resources = append(out.Resources, r)
	}
	return out, nil
}

func (s *memStore) Apply(digest []byte, changes []storage.Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !bytes.Equal(digest, s.digest) {
		s.digest, s.kept = bytes.Clone(digest), map[[2]string]storage.Resource{}
	}
	for _, c := range changes {
		k := [2]string{c.TypeURL, c.Name}
		if c.Delete {
			delete(s.kept, k)
		} else {
			s.kept[k] = c.Resource
		}
	}
	s.sets++
	return nil
}

func (s *memStore) Close() error { return nil }

// names lists what the store keeps as "name@version", sorted.
func (s *memStore) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.kept {
		out = append(out, r.Name+"@"+r.Version)
	}
	slices.Sort(out)
	return out
}

// updRec records updates with their origin, and ambient errors.
type updRec struct{ events chan any }

func newUpdRec() *updRec { return &updRec{events: make(chan any, 100)} }

func (r *updRec) OnResourceChanged(res registry.Resource, err error, done func()) {
	panic("OnUpdate is called instead")
}
func (r *updRec) OnUpdate(u engine.Update, done func()) { r.events <- u; done() }
func (r *updRec) OnAmbientError(err error, done func()) { r.events <- err; done() }

func (r *updRec) next(t *testing.T) any {
	t.Helper()
	select {
	case ev := <-r.events:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no callback")
		return nil
	}
}

func (r *updRec) update(t *testing.T) engine.Update {
	t.Helper()
	ev := r.next(t)
	u, ok := ev.(engine.Update)
	if !ok {
		t.Fatalf("got ambient error %v, want an update", ev)
	}
	return u
}

func (r *updRec) ambient(t *testing.T) error {
	t.Helper()
	ev := r.next(t)
	err, ok := ev.(error)
	if !ok && ev != nil {
		t.Fatalf("got %v, want an ambient error", ev)
	}
	return err
}

func (r *updRec) expectNone(t *testing.T) {
	t.Helper()
	select {
	case ev := <-r.events:
		t.Fatalf("unexpected %v", ev)
	case <-time.After(50 * time.Millisecond):
	}
}

func valueOf(u engine.Update) any {
	if u.Resource == nil {
		return nil
	}
	return u.Resource.(*testtype.Resource).Fields["v"]
}

// firstRun runs an engine on f's server that accepts what the server
// sends, and closes it, which writes what it kept.
func firstRun(t *testing.T, f *fixture, typeURL string, responses ...[]string) {
	t.Helper()
	var names []string
	for _, r := range responses[0] {
		names = append(names, strings.Split(r, "=")[0])
	}
	for _, n := range names {
		f.eng.Watch(typeURL, n, newUpdRec())
	}
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, typeURL, names...)
	for i, r := range responses {
		var rs []*anypb.Any
		for _, kv := range r {
			name, v, _ := strings.Cut(kv, "=")
			if v == "invalid" {
				rs = append(rs, res(typeURL, name, "invalid", "by test"))
			} else {
				rs = append(rs, res(typeURL, name, "v", v))
			}
		}
		st.SendT(t, resp(typeURL, fmt.Sprint(i+1), rs...))
		st.RecvT(t)
	}
	if err := f.eng.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	f.servers[0].Stop()
}

// reconnect restarts f's stopped server and moves the clock on until the
// engine's retry reaches it.
func reconnect(t *testing.T, f *fixture) *scriptedads.Stream {
	t.Helper()
	f.servers[0].Restart()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f.clock.Advance(10 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		st, err := f.servers[0].NextStream(ctx)
		cancel()
		if err == nil {
			return st
		}
	}
	t.Fatal("the engine did not reconnect")
	return nil
}

func newEngine(t *testing.T, cfg engine.Config) *engine.Engine {
	t.Helper()
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestStoreServesWhileServersAreDown: an engine started while its server
// is down delivers what the last run accepted, marked as from the store,
// then an ambient UNAVAILABLE saying so; no does-not-exist timer fires;
// CSDS and Authorities show it. When the server answers, its data wins.
func TestStoreServesWhileServersAreDown(t *testing.T) {
	store := newMemStore()
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store = store }})
	firstRun(t, f, thing, []string{"a=1"})
	if got := store.names(); !slices.Equal(got, []string{"a@1"}) {
		t.Fatalf("store holds %v, want [a@1]", got)
	}

	e := newEngine(t, f.cfg)
	w := newUpdRec()
	start := time.Now()
	e.Watch(thing, "a", w)
	u := w.update(t)
	took := time.Since(start)
	if u.Err != nil || valueOf(u) != "1" || !u.FromStore || u.Version != "1" || u.Server.URI != f.servers[0].Addr() {
		t.Fatalf("first update %+v, want a=1 from the store, version 1, from %s", u, f.servers[0].Addr())
	}
	amb := w.ambient(t)
	if status.Code(amb) != codes.Unavailable || !strings.Contains(amb.Error(), "last-known-good store") {
		t.Fatalf("ambient error %v, want UNAVAILABLE naming the store", amb)
	}
	t.Logf("served from the store %v after Watch", took)

	f.clock.Advance(time.Minute) // past the does-not-exist timer, and a retry
	w.expectNone(t)
	checkDump(t, e, thing, "a", adminpb.ClientResourceStatus_ACKED, true)
	if d := e.ResourceStatus(thing, "a").GetErrorState().GetDetails(); !strings.Contains(d, "last-known-good store") {
		t.Fatalf("CSDS error_state %q, want it to say the store", d)
	}
	if n := e.Authorities()[0].FromStore; n != 1 {
		t.Fatalf("Authorities: FromStore %d, want 1", n)
	}

	st := reconnect(t, f)
	recvNames(t, st, thing, "a")
	st.SendT(t, resp(thing, "7", res(thing, "a", "v", "2")))
	if u := w.update(t); valueOf(u) != "2" || u.FromStore || u.Version != "7" {
		t.Fatalf("update %+v, want a=2 from the server", u)
	}
	if n := e.Authorities()[0].FromStore; n != 0 {
		t.Fatalf("Authorities: FromStore %d after the server answered, want 0", n)
	}
}

// TestStoreSameBytesClearTheAmbientError: when the server sends what the
// store served, the watcher hears only that the error is gone.
func TestStoreSameBytesClearTheAmbientError(t *testing.T) {
	store := newMemStore()
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store = store }})
	firstRun(t, f, thing, []string{"a=1"})
	e := newEngine(t, f.cfg)
	w := newUpdRec()
	e.Watch(thing, "a", w)
	if u := w.update(t); !u.FromStore {
		t.Fatalf("update %+v, want one from the store", u)
	}
	w.ambient(t)
	st := reconnect(t, f)
	recvNames(t, st, thing, "a")
	st.SendT(t, resp(thing, "1", res(thing, "a", "v", "1")))
	if err := w.ambient(t); err != nil {
		t.Fatalf("ambient %v, want it cleared", err)
	}
	w.expectNone(t)
}

// TestStoreKeepsWhatWasAccepted: a NACKed version is not kept (the last
// good one is), a deleted resource is forgotten, and a type that opts out
// is never written.
func TestStoreKeepsWhatWasAccepted(t *testing.T) {
	store := newMemStore()
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store = store }})
	firstRun(t, f, required, []string{"a=1", "b=1", "c=1"}, []string{"a=invalid", "c=1"})
	// c's version is 1 or 2: the second response may come before the
	// first change set is written, or after.
	if got := store.names(); len(got) != 2 || got[0] != "a@1" || !strings.HasPrefix(got[1], "c@") {
		t.Fatalf("store holds %v, want a@1 and c (a's NACKed version and deleted b left out)", got)
	}

	secret := testtype.Type(thing, false)
	secret.NotStored = true
	store = newMemStore()
	f = newFixture(t, fixtureOpts{mutate: func(c *engine.Config) {
		c.Store, c.Registry = store, registry.MustNew(secret)
	}})
	firstRun(t, f, thing, []string{"a=1"})
	if got := store.names(); len(got) != 0 {
		t.Fatalf("store holds %v of a type with NotStored", got)
	}
}

// TestStoreLatestChangeWins: the store ends with each resource's last
// state, whether its changes fall in one change set or several: a
// resource deleted and sent again is kept, one sent again and deleted is
// not.
func TestStoreLatestChangeWins(t *testing.T) {
	for _, tc := range []struct {
		name      string
		responses [][]string
		want      string
	}{
		{"deleted then back", [][]string{{"a=1", "b=1"}, {"a=1"}, {"a=1", "b=3"}}, "a b@3"},
		{"changed then deleted", [][]string{{"a=1", "b=1"}, {"a=1", "b=2"}, {"a=1"}}, "a"},
		{"deleted, back, deleted", [][]string{{"a=1", "b=1"}, {"a=1"}, {"a=1", "b=3"}, {"a=1"}}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store = store }})
			firstRun(t, f, required, tc.responses...)
			got := store.names()
			for i, n := range got {
				if strings.HasPrefix(n, "a@") {
					got[i] = "a" // a's version is of whichever response was written last
				}
			}
			if got := strings.Join(got, " "); got != tc.want {
				t.Fatalf("store holds %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStoreNotServed: what the store holds is not served when it was
// written for another node, when it is older than StoreMaxAge, when it no
// longer validates, or once a server has answered.
func TestStoreNotServed(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *engine.Config, store *memStore)
		answer bool // the server answers, without the resource, before the watch
	}{
		{name: "another node", mutate: func(c *engine.Config, _ *memStore) {
			b := *c.Bootstrap
			b.Node.ID = "another-node"
			c.Bootstrap = &b
		}},
		{name: "too old", mutate: func(c *engine.Config, _ *memStore) { c.StoreMaxAge = time.Second }},
		{name: "invalid today", mutate: func(c *engine.Config, store *memStore) {
			for k, r := range store.kept {
				r.Raw, _ = proto.Marshal(testtype.Message("a", "invalid", "a rule of today"))
				store.kept[k] = r
			}
		}},
		{name: "a server answered", answer: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store = store }})
			firstRun(t, f, thing, []string{"a=1"})
			cfg := f.cfg
			if tc.mutate != nil {
				tc.mutate(&cfg, store)
			}
			if tc.name == "too old" {
				f.clock.Advance(time.Hour)
			}
			e := newEngine(t, cfg)
			if tc.answer {
				wb := newUpdRec()
				e.Watch(thing, "b", wb)
				wb.update(t) // UNAVAILABLE: the server is down
				st := reconnect(t, f)
				recvNames(t, st, thing, "b")
				st.SendT(t, resp(thing, "1", res(thing, "b", "v", "1")))
				wb.update(t)
				st.RecvT(t)
				f.servers[0].Stop()
			}
			w := newUpdRec()
			e.Watch(thing, "a", w)
			u := w.update(t)
			if u.Resource != nil || status.Code(u.Err) != codes.Unavailable {
				t.Fatalf("update %+v, want UNAVAILABLE and no resource", u)
			}
		})
	}
}

// TestStoreServesWildcards: a WatchAll made while the server is down gets
// every resource of its type the store holds.
func TestStoreServesWildcards(t *testing.T) {
	store := newMemStore()
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store = store }})
	firstRun(t, f, thing, []string{"a=1", "b=2"})
	e := newEngine(t, f.cfg)
	all := newAllRec()
	e.WatchAll(thing, all)
	// The subscription's own ambient error, then each resource and its.
	got := all.next(t, 5)
	wantEvents(t, got, ": ambient Unavailable connectivity", "a: changed v=1", "a: ambient Unavailable connectivity",
		"b: changed v=2", "b: ambient Unavailable connectivity")
}

// TestStoreDigest: the digest covers the node and the servers, not what
// the engine adds itself, so an engine of another version uses the store.
func TestStoreDigest(t *testing.T) {
	store := newMemStore()
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store = store }})
	firstRun(t, f, thing, []string{"a=1"})
	for _, tc := range []struct {
		name  string
		edit  func(b *bootstrap.Bootstrap, c *engine.Config)
		serve bool
	}{
		{"user agent", func(_ *bootstrap.Bootstrap, c *engine.Config) { c.UserAgentVersion = "v9" }, true},
		{"cluster", func(b *bootstrap.Bootstrap, _ *engine.Config) { b.Node.Cluster = "other" }, false},
		{"server", func(b *bootstrap.Bootstrap, _ *engine.Config) {
			b.Servers = append(slices.Clone(b.Servers), bootstrap.InsecureServer("localhost:1"))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.cfg
			b := *cfg.Bootstrap
			tc.edit(&b, &cfg)
			cfg.Bootstrap = &b
			e := newEngine(t, cfg)
			w := newUpdRec()
			e.Watch(thing, "a", w)
			if u := w.update(t); u.FromStore != tc.serve {
				t.Fatalf("update %+v: from the store %v, want %v", u, u.FromStore, tc.serve)
			}
		})
	}
}

// TestStoreHonoursTTL: a resource sent with a ttl in its Resource wrapper
// is not served from the store once the ttl has run out.
func TestStoreHonoursTTL(t *testing.T) {
	for _, tc := range []struct {
		after time.Duration
		serve bool
	}{{5 * time.Second, true}, {15 * time.Second, false}} {
		t.Run(tc.after.String(), func(t *testing.T) {
			store := newMemStore()
			f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store = store }})
			w := newUpdRec()
			f.eng.Watch(thing, "a", w)
			st := f.servers[0].WaitStream(t)
			recvNames(t, st, thing, "a")
			wrapped := &discoverypb.Resource{Name: "a", Resource: res(thing, "a", "v", "1"), Ttl: durationpb.New(10 * time.Second)}
			a, err := anypb.New(wrapped)
			if err != nil {
				t.Fatal(err)
			}
			st.SendT(t, resp(thing, "1", a))
			w.update(t)
			f.eng.Close()
			f.servers[0].Stop()
			f.clock.Advance(tc.after)

			e := newEngine(t, f.cfg)
			w = newUpdRec()
			e.Watch(thing, "a", w)
			if u := w.update(t); u.FromStore != tc.serve {
				t.Fatalf("%v after it was received with a 10s ttl: update %+v, want from the store: %v", tc.after, u, tc.serve)
			}
		})
	}
}

// TestStoreAfterFallback: the store is served only once every server of
// the authority has failed (gRFC A71): a fallback that answers wins.
func TestStoreAfterFallback(t *testing.T) {
	for _, fallbackUp := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback up %v", fallbackUp), func(t *testing.T) {
			store := newMemStore()
			f := newFixture(t, fixtureOpts{servers: 2, mutate: func(c *engine.Config) { c.Store = store }})
			firstRun(t, f, thing, []string{"a=1"})
			if !fallbackUp {
				f.servers[1].Stop()
			}
			e := newEngine(t, f.cfg)
			w := newUpdRec()
			e.Watch(thing, "a", w)
			if !fallbackUp {
				if u := w.update(t); !u.FromStore || valueOf(u) != "1" {
					t.Fatalf("update %+v, want a=1 from the store", u)
				}
				return
			}
			st := f.servers[1].WaitStream(t)
			recvNames(t, st, thing, "a")
			st.SendT(t, resp(thing, "f1", res(thing, "a", "v", "fallback")))
			if u := w.update(t); u.FromStore || valueOf(u) != "fallback" {
				t.Fatalf("update %+v, want the fallback's a", u)
			}
		})
	}
}

// TestStoreMetrics: the store's counters say what it did: a change set
// written, a load, a resource served, one dropped as invalid.
func TestStoreMetrics(t *testing.T) {
	store := newMemStore()
	first := sdkmetric.NewManualReader()
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) {
		c.Store, c.MeterProvider = store, sdkmetric.NewMeterProvider(sdkmetric.WithReader(first))
	}})
	firstRun(t, f, thing, []string{"a=1", "b=1"})
	if got := store.names(); len(got) != 2 {
		t.Fatalf("store holds %v", got)
	}
	var writes int64
	for _, v := range collect(t, first)[engine.MetricStoreWrites] {
		writes += v
	}
	if writes < 1 {
		t.Fatalf("%s = %d after a first run that wrote", engine.MetricStoreWrites, writes)
	}
	for k, r := range store.kept {
		if r.Name == "b" {
			r.Raw, _ = proto.Marshal(testtype.Message("b", "invalid", "by a rule of today"))
			store.kept[k] = r
		}
	}
	reader := sdkmetric.NewManualReader()
	cfg := f.cfg
	cfg.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	e := newEngine(t, cfg)
	w := newUpdRec()
	e.Watch(thing, "a", w)
	if u := w.update(t); !u.FromStore {
		t.Fatalf("update %+v, want one from the store", u)
	}
	got := collect(t, reader)
	total := func(name string) (n int64) {
		for _, v := range got[name] {
			n += v
		}
		return n
	}
	for name, want := range map[string]int64{engine.MetricStoreLoads: 1, engine.MetricStoreServed: 1, engine.MetricStoreDropped: 1, engine.MetricStoreErrors: 0} {
		if n := total(name); n != want {
			t.Errorf("%s = %d, want %d (%v)", name, n, want, got[name])
		}
	}
}

// slowStore is a memStore whose Load waits for release.
type slowStore struct {
	*memStore
	release chan struct{}
}

func (s slowStore) Load(digest []byte) (storage.Loaded, error) {
	<-s.release
	return s.memStore.Load(digest)
}

// TestStoreLoadHoldsTheFailure: a server that fails while the store is
// loading is reported after the store's resources, so that a watcher
// whose resource is on disk never hears UNAVAILABLE in its place; one
// whose Load is slower than a second hears the failure, then the stored
// resource.
func TestStoreLoadHoldsTheFailure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		slow      bool // Load takes longer than the engine holds the failure
		wantFirst string
	}{
		{name: "load returns", wantFirst: "update"},
		{name: "load is slow", slow: true, wantFirst: "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Store = store }})
			firstRun(t, f, thing, []string{"a=1"})

			slow := slowStore{store, make(chan struct{})}
			cfg := f.cfg
			cfg.Store = slow
			e := newEngine(t, cfg)
			release := sync.OnceFunc(func() { close(slow.release) })
			t.Cleanup(release) // before Close, which waits for Load
			w := newUpdRec()
			e.Watch(thing, "a", w)
			deadline := time.Now().Add(10 * time.Second)
			for e.Authorities()[0].Err == nil {
				if time.Now().After(deadline) {
					t.Fatal("the stopped server is not reported failing in Authorities")
				}
				time.Sleep(time.Millisecond)
			}
			if tc.slow {
				f.clock.Advance(time.Second)
			} else {
				w.expectNone(t) // held while loading
			}
			if tc.wantFirst == "error" {
				if u := w.update(t); status.Code(u.Err) != codes.Unavailable || u.Resource != nil {
					t.Fatalf("first update %+v, want UNAVAILABLE without a resource", u)
				}
			}
			release()
			if u := w.update(t); u.Err != nil || valueOf(u) != "1" || !u.FromStore {
				t.Fatalf("update %+v, want a=1 from the store", u)
			}
			if amb := w.ambient(t); status.Code(amb) != codes.Unavailable || !strings.Contains(amb.Error(), "last-known-good store") {
				t.Fatalf("ambient error %v, want UNAVAILABLE naming the store", amb)
			}
			w.expectNone(t)
		})
	}
}
