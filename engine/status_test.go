package engine_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

// updateRecorder is a watcher that implements engine.UpdateWatcher.
type updateRecorder struct {
	updates chan engine.Update
}

func (r *updateRecorder) OnResourceChanged(registry.Resource, error, func()) {
	panic("OnResourceChanged called on an UpdateWatcher")
}
func (r *updateRecorder) OnAmbientError(_ error, done func()) { done() }
func (r *updateRecorder) OnUpdate(u engine.Update, done func()) {
	r.updates <- u
	done()
}

func (r *updateRecorder) next(t *testing.T) engine.Update {
	t.Helper()
	select {
	case u := <-r.updates:
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("no update")
		return engine.Update{}
	}
}

func TestUpdateMetadata(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	w := &updateRecorder{updates: make(chan engine.Update, 10)}
	defer f.eng.Watch(thing, "a", w)()
	st := f.servers[0].WaitStream(t)
	st.RecvT(t)
	received := f.clock.Now()
	st.SendT(t, resp(thing, "v7", res(thing, "a")))

	u := w.next(t)
	if u.Err != nil || resourceName(t, u.Resource) != "a" {
		t.Fatalf("update = %+v, want resource a", u)
	}
	if u.Version != "v7" || u.Server.URI != f.servers[0].Addr() || !u.Received.Equal(received) {
		t.Errorf("update from version %q, server %q, at %v; want v7, %q, %v", u.Version, u.Server.URI, u.Received, f.servers[0].Addr(), received)
	}

	// A second watcher is given the cached resource with the same origin.
	w2 := &updateRecorder{updates: make(chan engine.Update, 10)}
	defer f.eng.Watch(thing, "a", w2)()
	if u2 := w2.next(t); u2.Version != "v7" || u2.Server.URI != u.Server.URI || !u2.Received.Equal(received) {
		t.Errorf("cached update = %+v, want the first one's origin", u2)
	}

	// A new version is delivered with its own origin, to both watchers.
	st.RecvT(t) // the ACK of v7
	f.clock.Advance(time.Second)
	received8 := f.clock.Now()
	st.SendT(t, resp(thing, "v8", res(thing, "a", "v", "8")))
	for _, rec := range []*updateRecorder{w, w2} {
		if u8 := rec.next(t); u8.Version != "v8" || u8.Server.URI != u.Server.URI || !u8.Received.Equal(received8) {
			t.Errorf("update = %+v, want version v8 received at %v", u8, received8)
		}
	}

	// A resource that does not exist was not deleted by any response: its
	// update names no version.
	typed := make(chan engine.TypedUpdate[registry.Resource], 10)
	defer engine.Watch[registry.Resource](f.eng, thing, "missing", typedUpdates(typed))()
	st.RecvT(t)
	f.clock.WaitForTimer(t, 15*time.Second)
	f.clock.Advance(15 * time.Second)
	var tu engine.TypedUpdate[registry.Resource]
	select {
	case tu = <-typed:
	case <-time.After(10 * time.Second):
		t.Fatal("no typed update")
	}
	if status.Code(tu.Err) != codes.NotFound || tu.Version != "" || !tu.Received.Equal(f.clock.Now()) {
		t.Errorf("typed update = %+v, want NOT_FOUND at %v with no version", tu, f.clock.Now())
	}
}

type typedUpdates chan engine.TypedUpdate[registry.Resource]

func (c typedUpdates) OnResourceChanged(registry.Resource, error, func()) {
	panic("OnResourceChanged called on a TypedUpdateWatcher")
}
func (c typedUpdates) OnAmbientError(_ error, done func()) { done() }
func (c typedUpdates) OnUpdate(u engine.TypedUpdate[registry.Resource], done func()) {
	c <- u
	done()
}

func TestResourceStatus(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	if got := f.eng.ResourceStatus(thing, "a"); got != nil {
		t.Fatalf("status of an unwatched resource = %v, want nil", got)
	}
	w, cancel := f.watch(thing, "a")
	st := f.servers[0].WaitStream(t)
	st.RecvT(t)
	if got := f.eng.ResourceStatus(thing, "a"); got.GetClientStatus() != adminpb.ClientResourceStatus_REQUESTED {
		t.Fatalf("status before a response = %v, want REQUESTED", got.GetClientStatus())
	}
	st.SendT(t, resp(thing, "1", res(thing, "a")))
	w.NextChanged(t)
	got := f.eng.ResourceStatus(thing, "a")
	if got.GetClientStatus() != adminpb.ClientResourceStatus_ACKED || got.GetVersionInfo() != "1" {
		t.Fatalf("status = %v version %q, want ACKED version 1", got.GetClientStatus(), got.GetVersionInfo())
	}
	for _, g := range f.eng.Dump().GetGenericXdsConfigs() {
		if g.GetName() == "a" && g.GetClientStatus() != got.GetClientStatus() {
			t.Errorf("Dump says %v, ResourceStatus %v", g.GetClientStatus(), got.GetClientStatus())
		}
	}
	cancel()
	if got := f.eng.ResourceStatus(thing, "a"); got != nil {
		t.Errorf("status after cancel = %v, want nil", got)
	}
}

func TestAuthorities(t *testing.T) {
	f := newFixture(t, fixtureOpts{servers: 2})
	auths := f.eng.Authorities()
	if len(auths) != 1 || !auths[0].OldStyle || len(auths[0].Servers) != 2 || auths[0].Active != "" {
		t.Fatalf("authorities before any watch = %+v", auths)
	}
	w, _ := f.watch(thing, "a")
	primary := f.servers[0].WaitStream(t)
	primary.RecvT(t)
	if a := f.eng.Authorities()[0]; a.Active != f.servers[0].Addr() || a.Connected {
		t.Fatalf("authority before a response = %+v, want the primary, not connected", a)
	}
	f.servers[0].Stop()
	fallback := f.servers[1].WaitStream(t) // the resource is still REQUESTED: fall back (A71)
	fallback.RecvT(t)
	fallback.SendT(t, resp(thing, "1", res(thing, "a")))
	w.NextChanged(t)
	a := f.eng.Authorities()[0]
	if a.Active != f.servers[1].Addr() || !a.Connected || a.Err != nil {
		t.Fatalf("authority after fallback = %+v, want the fallback, connected", a)
	}
}

func TestDefaultBackoff(t *testing.T) {
	tests := []struct {
		n        int
		min, max time.Duration
	}{
		{0, 800 * time.Millisecond, 1200 * time.Millisecond},
		{1, 1280 * time.Millisecond, 1920 * time.Millisecond},
		{5, time.Duration(0.8 * 10.48576 * float64(time.Second)), time.Duration(1.2 * 10.48576 * float64(time.Second))},
		{100, 96 * time.Second, 144 * time.Second},
	}
	for _, tt := range tests {
		for i := 0; i < 50; i++ {
			if d := engine.DefaultBackoff(tt.n); d < tt.min || d > tt.max {
				t.Fatalf("DefaultBackoff(%d) = %v, want within [%v, %v]", tt.n, d, tt.min, tt.max)
			}
		}
	}
}

// TestUpdateServerIsTheEntryUsed: two bootstrap entries may share a URI
// and differ in features (or credentials); the engine keeps a stream for
// each, and an update names the entry it came through, not the first
// with that URI (issue 39): a "self" config source in the resource means
// that entry.
func TestUpdateServerIsTheEntryUsed(t *testing.T) {
	const authority = "auth.example"
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) {
		addr := c.Bootstrap.Servers[0].URI
		c.Bootstrap.Servers = []bootstrap.ServerConfig{bootstrap.InsecureServer(addr, features.NameIgnoreResourceDeletion)}
		c.Bootstrap.Authorities = map[string]bootstrap.Authority{
			authority: {Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr, features.NameFailOnDataErrors)}},
		}
	}})
	name := "xdstp://" + authority + "/" + strings.TrimPrefix(thing, "type.googleapis.com/") + "/a"
	w := &updateRecorder{updates: make(chan engine.Update, 10)}
	defer f.eng.Watch(thing, name, w)()
	st := f.servers[0].WaitStream(t)
	st.RecvT(t)
	st.SendT(t, resp(thing, "v1", res(thing, name)))
	u := w.next(t)
	if u.Err != nil {
		t.Fatal(u.Err)
	}
	if got := u.Server.ServerFeatures; !slices.Equal(got, []string{features.NameFailOnDataErrors}) {
		t.Fatalf("update from the entry with features %v, want the authority's entry (%s)", got, features.NameFailOnDataErrors)
	}
}
