package engine_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// bigResource is a test resource of about n bytes.
func bigResource(typeURL, name string, n int) *anypb.Any {
	return res(typeURL, name, "padding", strings.Repeat("p", n))
}

// TestResponseTooLarge: a response over Config.MaxResponseBytes cannot be
// read. Watchers hear of it (ambient where cached, changed where not),
// with RESOURCE_EXHAUSTED naming the size and the setting; it is counted;
// and the stream is retried with growing backoff, not at once forever.
func TestResponseTooLarge(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	const limit = 64 << 10
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) {
		c.MaxResponseBytes = limit
		c.MeterProvider = mp
		c.Target = "xds:///big"
	}})
	wa, _ := f.watch(thing, "a")
	st := f.servers[0].WaitStream(t)
	st.RecvT(t)
	st.SendT(t, resp(thing, "1", res(thing, "a")))
	wa.NextChanged(t)
	st.RecvT(t)
	wb, _ := f.watch(thing, "b")
	recvNames(t, st, thing, "a", "b")

	st.SendT(t, resp(thing, "2", res(thing, "a"), bigResource(thing, "b", 100<<10)))
	for _, w := range []struct {
		rec     *watchrec.Recorder
		ambient bool
	}{{wa, true}, {wb, false}} {
		ev := w.rec.Next(t)
		checkEvent(t, ev, w.ambient, codes.ResourceExhausted)
		if engine.KindOf(ev.Err) != engine.KindResponseTooLarge {
			t.Errorf("kind %v, want KindResponseTooLarge", engine.KindOf(ev.Err))
		}
		for _, want := range []string{"a response of 10", "exceeds the receive limit of 65536 bytes", "MaxResponseBytes"} {
			if !strings.Contains(ev.Err.Error(), want) {
				t.Errorf("error %q does not contain %q", ev.Err, want)
			}
		}
	}
	checkDump(t, f.eng, thing, "a", adminpb.ClientResourceStatus_ACKED, true)

	// Backoff, growing: the fixture's backoff is (n+1) s.
	f.clock.WaitForTimer(t, time.Second)
	f.clock.Advance(time.Second)
	st2 := f.servers[0].WaitStream(t)
	recvNames(t, st2, thing, "a", "b")
	st2.SendT(t, resp(thing, "1", res(thing, "a")))
	wa.NextAmbient(t) // cleared: the server answered
	st2.RecvT(t)
	st2.SendT(t, resp(thing, "2", res(thing, "a"), bigResource(thing, "b", 100<<10)))
	checkEvent(t, wa.NextAmbient(t), true, codes.ResourceExhausted)
	f.clock.WaitForTimer(t, 2*time.Second)
	if n := f.servers[0].StreamCount(); n != 2 {
		t.Fatalf("%d streams before the backoff passed, want 2", n)
	}

	got := collect(t, reader)
	if v := got[engine.MetricResponsesTooLarge]["grpc.target=xds:///big "]; v != 2 {
		t.Errorf("%s = %d, want 2", engine.MetricResponsesTooLarge, v)
	}
}

// TestDefaultReceiveLimitFitsLargeResponses: gRPC's own 4 MiB default is
// not the engine's; a 5 MiB response is read.
func TestDefaultReceiveLimitFitsLargeResponses(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	w, _ := f.watch(thing, "a")
	st := f.servers[0].WaitStream(t)
	st.RecvT(t)
	var resources []*anypb.Any
	resources = append(resources, res(thing, "a"))
	for i := 0; i < 5; i++ {
		resources = append(resources, bigResource(thing, "filler-"+strconv.Itoa(i), 1<<20))
	}
	st.SendT(t, resp(thing, "1", resources...))
	if ev := w.NextChanged(t); ev.Err != nil {
		t.Fatalf("got %v, want the resource from a 5 MiB response", ev)
	}
}

// TestSlowWatcher: a watcher that keeps done past the threshold is named
// in a warning and counted; the read stays held (A88), and the next
// response arrives once done is called.
func TestSlowWatcher(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	var logs syncBuffer
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) {
		c.MeterProvider = mp
		c.Target = "xds:///slow"
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}})
	slow := watchrec.NewHolding()
	f.eng.Watch(thing, "slow-resource", slow)
	st := f.servers[0].WaitStream(t)
	st.RecvT(t)
	st.SendT(t, resp(thing, "1", res(thing, "slow-resource")))
	ev := slow.NextChanged(t)
	st.RecvT(t)

	f.clock.WaitForTimer(t, engine.DefaultSlowWatcherThreshold)
	f.clock.Advance(engine.DefaultSlowWatcherThreshold)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "have not called done") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	out := logs.String()
	for _, want := range []string{"level=WARN", "have not called done", `Thing \"slow-resource\"`, "after=30s"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	if v := collect(t, reader)[engine.MetricSlowWatchers]["grpc.target=xds:///slow grpc.xds.resource_type=xdsengine.test.Thing "]; v != 1 {
		t.Errorf("%s = %d, want 1", engine.MetricSlowWatchers, v)
	}

	st.SendT(t, resp(thing, "2", res(thing, "slow-resource", "v", "2")))
	slow.ExpectNone(t, 50*time.Millisecond) // flow control holds
	ev.Done()
	if ev2 := slow.NextChanged(t); ev2.Resource.(*testtype.Resource).Fields["v"] != "2" {
		t.Fatalf("got %v, want version 2", ev2)
	}
}

// TestTimerDoesNotRunWhileHeld: a resource whose response has arrived but
// waits, unread, behind a response a watcher still holds gets no
// does-not-exist error, however long the hold; the timer counts only the
// time the stream was read. Once it is read again, a resource that truly
// is missing still times out.
func TestTimerDoesNotRunWhileHeld(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	holder := watchrec.NewHolding()
	f.eng.Watch(thing, "held", holder)
	wb, _ := f.watch(thing, "b")
	wc, _ := f.watch(thing, "missing")
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, thing, "b", "held", "missing")
	// The three names went in one request: one timer serves them.
	f.clock.WaitForTimer(t, 15*time.Second)

	f.clock.Advance(5 * time.Second)
	st.SendT(t, resp(thing, "1", res(thing, "held")))
	ev := holder.NextChanged(t)
	st.RecvT(t)
	st.SendT(t, resp(thing, "2", res(thing, "held"), res(thing, "b"))) // buffered, unread

	f.clock.Advance(time.Minute)
	time.Sleep(20 * time.Millisecond)
	wb.ExpectNone(t, 20*time.Millisecond)
	wc.ExpectNone(t, 0)

	ev.Done()
	if ev := wb.NextChanged(t); ev.Err != nil {
		t.Fatalf("b: got %v, want the resource", ev)
	}
	// "missing" had 5 s of its 15 s before the hold; 10 s remain.
	f.clock.WaitForTimer(t, 10*time.Second)
	// The read of b's response held the stream again for a moment; if
	// the clock moves in that moment, that counts as held too. So the
	// clock is moved until the timer fires, a few times at most.
	for i := 0; ; i++ {
		f.clock.Advance(10 * time.Second)
		select {
		case ev := <-wc.Events():
			checkEvent(t, ev, false, codes.NotFound)
			return
		case <-time.After(50 * time.Millisecond):
		}
		if i == 3 {
			t.Fatalf("missing never timed out; pending timers %v", f.clock.PendingDurations())
		}
	}
}

// TestNamelessCopyOfWrappedResource: bytes cached under a Resource
// wrapper's name do not lend that name to the same bytes sent bare. The
// bare copy has no name, so it is NACKed as such and, in an LDS/CDS-like
// response, deletes nothing by absence (found by FuzzResponse).
func TestNamelessCopyOfWrappedResource(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	wa, _ := f.watch(required, "a")
	wb, _ := f.watch(required, "b")
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, required, "a", "b")
	nameless := res(required, "", "v", "1")
	st.SendT(t, resp(required, "1", scriptedads.Wrap("a", nameless), res(required, "b")))
	wa.NextChanged(t)
	wb.NextChanged(t)
	st.RecvT(t)

	n := st.SendT(t, resp(required, "2", scriptedads.Wrap("a", nameless), nameless))
	req := st.RecvT(t)
	if req.GetResponseNonce() != n || !strings.Contains(req.GetErrorDetail().GetMessage(), "resource index 1: no name") {
		t.Fatalf("answer %v, want a NACK of the nameless resource", req)
	}
	checkDump(t, f.eng, required, "b", adminpb.ClientResourceStatus_ACKED, true)
	wb.ExpectNone(t, 20*time.Millisecond)
}
