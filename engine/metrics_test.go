package engine_test

import (
	"context"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
)

// collect reads every metric and returns data points as "labels → value".
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			points := map[string]int64{}
			add := func(set attribute.Set, v int64) {
				key := ""
				for _, kv := range set.ToSlice() {
					if kv.Key == engine.LabelServer {
						continue // loopback ports vary
					}
					key += string(kv.Key) + "=" + kv.Value.AsString() + " "
				}
				points[key] += v
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					add(p.Attributes, p.Value)
				}
			}
			out[m.Name] = points
		}
	}
	return out
}

// TestMetrics drives resources into every A88 cache state and reads the
// A78 metrics with the SDK's manual reader.
func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	withMeter := func(target string) func(*engine.Config) {
		return func(c *engine.Config) { c.MeterProvider = mp; c.Target = target }
	}

	// Engine one: eight of the nine states.
	f := newFixture(t, fixtureOpts{mutate: withMeter("xds:///one")})
	for _, n := range []string{"acked", "nacked_but_cached", "received_error_but_cached", "nacked", "received_error", "does_not_exist"} {
		f.watch(thing, n)
	}
	deleted, _ := f.watch(required, "does_not_exist_but_cached")
	st := f.servers[0].WaitStream(t)
	for seen := map[string]int{}; seen[thing] < 6 || seen[required] < 1; {
		req := st.RecvT(t)
		seen[req.GetTypeUrl()] = len(req.GetResourceNames())
	}
	st.SendT(t, resp(thing, "1", res(thing, "acked"), res(thing, "nacked_but_cached"), res(thing, "received_error_but_cached")))
	st.SendT(t, resp(required, "1", res(required, "does_not_exist_but_cached")))
	bad := resp(thing, "2", res(thing, "acked"), res(thing, "nacked_but_cached", "invalid", "x"), res(thing, "nacked", "invalid", "y"))
	bad.ResourceErrors = []*discoverypb.ResourceError{
		scriptedads.ResourceError("received_error_but_cached", codes.Unavailable, "later"),
		scriptedads.ResourceError("received_error", codes.PermissionDenied, "no"),
	}
	st.SendT(t, bad)
	st.SendT(t, resp(required, "2")) // deletes, A88 keeps the cached copy
	// Every name but does_not_exist settled: only its timer is left. The
	// deletion's notification is the last of the responses: once its
	// watcher has it, the stream is no longer held for delivery, and the
	// clock may move without the hold taking the time.
	waitState(t, f.eng, required, "does_not_exist_but_cached", "DOES_NOT_EXIST")
	deleted.NextChanged(t)
	deleted.NextAmbient(t)
	f.clock.WaitForTimer(t, 15*time.Second)
	f.clock.Advance(15 * time.Second)
	waitState(t, f.eng, thing, "does_not_exist", "DOES_NOT_EXIST")
	waitState(t, f.eng, thing, "received_error", "RECEIVED_ERROR")
	f.watch(thing, "requested") // after the clock moved: its timer is still running

	// Engine two: a server with resource_timer_is_transient_error.
	f2 := newFixture(t, fixtureOpts{mutate: withMeter("xds:///two"), serverFeatures: []string{features.NameResourceTimerIsTransientError}})
	f2.watch(thing, "timeout")
	f2.servers[0].WaitStream(t).RecvT(t)
	f2.clock.WaitForTimer(t, 30*time.Second)
	f2.clock.Advance(30 * time.Second)
	waitState(t, f2.eng, thing, "timeout", "TIMEOUT")

	got := collect(t, reader)
	wantResources := map[string]int64{}
	for _, state := range []string{"acked", "nacked_but_cached", "received_error_but_cached", "nacked", "received_error", "requested", "does_not_exist"} {
		wantResources["grpc.target=xds:///one grpc.xds.authority=#old grpc.xds.cache_state="+state+" grpc.xds.resource_type=xdsengine.test.Thing "] = 1
	}
	wantResources["grpc.target=xds:///one grpc.xds.authority=#old grpc.xds.cache_state=does_not_exist_but_cached grpc.xds.resource_type=xdsengine.test.RequiredThing "] = 1
	wantResources["grpc.target=xds:///two grpc.xds.authority=#old grpc.xds.cache_state=timeout grpc.xds.resource_type=xdsengine.test.Thing "] = 1
	if diff := cmp.Diff(wantResources, got[engine.MetricResources]); diff != "" {
		t.Errorf("%s (-want +got):\n%s", engine.MetricResources, diff)
	}
	wantValid := map[string]int64{
		"grpc.target=xds:///one grpc.xds.resource_type=xdsengine.test.Thing ":         4, // 3 in v1, acked again in v2
		"grpc.target=xds:///one grpc.xds.resource_type=xdsengine.test.RequiredThing ": 1,
	}
	if diff := cmp.Diff(wantValid, got[engine.MetricResourceUpdatesValid]); diff != "" {
		t.Errorf("%s (-want +got):\n%s", engine.MetricResourceUpdatesValid, diff)
	}
	wantInvalid := map[string]int64{"grpc.target=xds:///one grpc.xds.resource_type=xdsengine.test.Thing ": 4} // 2 NACKed + 2 TP3
	if diff := cmp.Diff(wantInvalid, got[engine.MetricResourceUpdatesInvalid]); diff != "" {
		t.Errorf("%s (-want +got):\n%s", engine.MetricResourceUpdatesInvalid, diff)
	}
	wantConnected := map[string]int64{"grpc.target=xds:///one ": 1, "grpc.target=xds:///two ": 0}
	if diff := cmp.Diff(wantConnected, got[engine.MetricConnected]); diff != "" {
		t.Errorf("%s (-want +got):\n%s", engine.MetricConnected, diff)
	}

	// A server failure is counted once, on the transition, and the gauge drops.
	st.Close(nil)
	st2 := f.servers[0].WaitStream(t)
	st2.RecvT(t)
	st2.Close(status.Error(codes.Unavailable, "down"))
	f.clock.WaitForTimer(t, time.Second)
	got = collect(t, reader)
	if v := got[engine.MetricServerFailure]["grpc.target=xds:///one "]; v != 1 {
		t.Errorf("server_failure = %d, want 1", v)
	}
	if v := got[engine.MetricConnected]["grpc.target=xds:///one "]; v != 0 {
		t.Errorf("connected = %d after the failure, want 0", v)
	}
}

func waitState(t *testing.T, e *engine.Engine, typeURL, name, state string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, g := range e.Dump().GetGenericXdsConfigs() {
			if g.GetTypeUrl() == typeURL && g.GetName() == name && g.GetClientStatus().String() == state {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s %s never reached %s", typeURL, name, state)
}
