package engine_test

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
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

// TestScale100kWatches: 100,000 watches of one type, on the real clock
// with gRPC's 15 s does-not-exist timer. The server answers every
// request at once with every resource (pre-serialized, so that its own
// cost, under -race, does not count). Every watcher gets its resource and
// none gets a false does-not-exist, however long this client takes to
// deliver them on a loaded machine: the timer does not run while the
// stream is held for delivery, and the burst of watches leaves in a few
// requests. Dump of 100,000 entries is cheap.
func TestScale100kWatches(t *testing.T) {
	const n = 100_000
	all := make([]*anypb.Any, n)
	for i := range all {
		all[i] = res(thing, "r"+strconv.Itoa(i))
	}
	// One serialized response serves every request, with a nonce of its
	// own appended (fields may come in any order): the server costs
	// nothing.
	wire, err := proto.Marshal(&discoverypb.DiscoveryResponse{TypeUrl: thing, VersionInfo: "1", Resources: all})
	if err != nil {
		t.Fatal(err)
	}
	srv := scriptedads.Start(t)
	e := newEngineFor(t, srv.Addr(), nil)

	var resources, errs atomic.Int64
	var firstErr atomic.Value
	w := countingWatcher{&resources, &errs, &firstErr, make(chan struct{}), n}
	var requests atomic.Int64
	serverDone := make(chan struct{})
	quiet := make(chan struct{}) // the response with every name is ACKed: the engine is idle
	go func() {
		defer close(serverDone)
		st, err := srv.NextStream(context.Background())
		if err != nil {
			return
		}
		subscribed := 0
		for nonce := 1; ; nonce++ {
			req, err := st.Recv(context.Background())
			if err != nil {
				return
			}
			requests.Add(1)
			if len(req.GetResourceNames()) == subscribed {
				if subscribed == n && req.GetResponseNonce() != "" {
					select {
					case <-quiet:
					default:
						close(quiet)
					}
				}
				continue // an ACK: nothing new was asked for
			}
			subscribed = len(req.GetResourceNames())
			if st.SendRaw(rawString(slices.Clip(wire), 5, strconv.Itoa(nonce))) != nil {
				return
			}
		}
	}()

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
	t.Logf("%d resources delivered in %v; the server saw %d requests", n, time.Since(start).Round(time.Millisecond), requests.Load())
	// 3 on this project's machine, with -race or without: once a request
	// outgrows gRPC's write quota (64 KB), writing it waits for the
	// server to read, and the watches gather meanwhile. One request per
	// watch, or per handful, would be thousands.
	if got := requests.Load(); got > 40 {
		t.Errorf("%d watches took %d requests (ACKs included), want a few", n, got)
	}

	select {
	case <-quiet:
	case <-time.After(time.Minute):
		t.Fatal("the last response was never ACKed")
	}
	// Dump: a constant, small number of allocations per entry (so its
	// cost is linear, whatever the machine), and, without the race
	// detector, at most a second for 100,000 entries.
	allocs := testing.AllocsPerRun(3, func() {
		if got := len(e.Dump().GetGenericXdsConfigs()); got != n {
			t.Fatalf("Dump has %d entries, want %d", got, n)
		}
	})
	// An entry is three messages (GenericXdsConfig, its Any and its
	// timestamp). The count is the process's, so the rest is slack for
	// what the engine's other goroutines allocate meanwhile; anything
	// worse than linear would show as thousands per entry.
	if perEntry := allocs / n; perEntry > 10 {
		t.Errorf("Dump makes %.1f allocations per entry, want at most 10", perEntry)
	}
	d := time.Duration(1 << 62)
	for i := 0; i < 3; i++ {
		s := time.Now()
		e.Dump()
		d = min(d, time.Since(s))
	}
	t.Logf("Dump of %d entries: %v, %.1f allocations per entry", n, d, allocs/n)
	if !raceEnabled && d > time.Second {
		t.Errorf("Dump of %d entries took %v, want at most 1s", n, d)
	}
	e.Close()
	<-serverDone
}
