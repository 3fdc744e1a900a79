package engine_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/mgmt"
	"github.com/xdsengine/xdsengine/internal/testutil/testtype"
	"github.com/xdsengine/xdsengine/registry"
)

// countingWatcher counts what a crowd of watchers receives.
type countingWatcher struct {
	resources, errs *atomic.Int64
	firstErr        *atomic.Value
	all             chan struct{} // closed when every watcher has its resource
	total           int64
}

func (w countingWatcher) OnResourceChanged(r registry.Resource, err error, done func()) {
	if err != nil {
		w.errs.Add(1)
		w.firstErr.CompareAndSwap(nil, err)
	} else if w.resources.Add(1) == w.total {
		close(w.all)
	}
	done()
}

func (w countingWatcher) OnAmbientError(err error, done func()) { done() }

// TestScale100kWatches: 100,000 watches of one type on go-control-plane,
// on the real clock with gRPC's 15 s does-not-exist timer. Every one of
// them gets its resource and no watcher gets a false does-not-exist,
// however long delivery takes on a loaded machine (the timer does not run
// while the stream is held for delivery). Dump of 100,000 entries is
// linear and cheap.
func TestScale100kWatches(t *testing.T) {
	const n = 100_000
	srv := mgmt.Start(t, mgmt.Options{})
	rs := make([]mgmt.Resource, n)
	for i := range rs {
		name := "r" + strconv.Itoa(i)
		rs[i] = mgmt.R(name, testtype.Message(name)).As(thing)
	}
	srv.Set(rs...)
	sw := features.Switches{}
	e, err := engine.New(engine.Config{
		Bootstrap: engine.Bootstrap{Servers: []engine.ServerConfig{engine.InsecureServer(srv.Addr())}, Node: engine.Node{ID: nodeID}},
		Registry:  testtype.Registry(),
		Switches:  &sw,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	var resources, errs atomic.Int64
	var firstErr atomic.Value
	w := countingWatcher{&resources, &errs, &firstErr, make(chan struct{}), n}
	start := time.Now()
	for i := 0; i < n; i++ {
		e.Watch(thing, "r"+strconv.Itoa(i), w)
	}
	select {
	case <-w.all:
	case <-time.After(5 * time.Minute):
		t.Fatalf("after 5m: %d of %d resources delivered", resources.Load(), n)
	}
	if errs.Load() > 0 {
		t.Fatalf("%d watchers got an error before their resource; first: %v", errs.Load(), firstErr.Load())
	}
	t.Logf("%d resources delivered in %v, in %d requests", n, time.Since(start).Round(time.Millisecond), len(srv.Requests()))

	// Dump: linear in the number of entries, and cheap.
	dump := func() time.Duration {
		best := time.Duration(1 << 62)
		for i := 0; i < 3; i++ {
			s := time.Now()
			if got := len(e.Dump().GetGenericXdsConfigs()); got != n {
				t.Fatalf("Dump has %d entries, want %d", got, n)
			}
			best = min(best, time.Since(s))
		}
		return best
	}
	d := dump()
	limit := time.Second
	if raceEnabled {
		limit = 10 * time.Second
	}
	t.Logf("Dump of %d entries: %v (limit %v)", n, d, limit)
	if d > limit {
		t.Errorf("Dump of %d entries took %v, want at most %v", n, d, limit)
	}
}
