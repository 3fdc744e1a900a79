package metrics

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTypeLabel(t *testing.T) {
	for _, tc := range []struct{ typeURL, want string }{
		{"type.googleapis.com/envoy.config.cluster.v3.Cluster", "envoy.config.cluster.v3.Cluster"},
		{"example.com/a/b.C", "b.C"},
		{"NoSlash", "NoSlash"},
	} {
		if got := TypeLabel(tc.typeURL); got != tc.want {
			t.Errorf("TypeLabel(%q) = %q, want %q", tc.typeURL, got, tc.want)
		}
	}
}

// TestCounters: a count lands on its counter with the target, server
// and type labels; a count of zero records nothing; gauges read the
// engine's state at collection, and nothing once it is closed.
func TestCounters(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	open := true
	r, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), "xds:///t", "v0", func() (Gauges, bool) {
		return Gauges{Connected: map[string]bool{"s1": true}, Resources: map[ResourceKey]int64{{"#old", "x.Y", "acked"}: 2}}, open
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Add(Valid, 3, "s1", "type.googleapis.com/x.Y")
	r.Add(Invalid, 0, "s1", "type.googleapis.com/x.Y")
	r.Add(Failures, 1, "s1", "")
	got := collect(t, reader)
	want := map[string]int64{
		ResourceUpdatesValid + " s1 x.Y": 3,
		ServerFailure + " s1 ":           1,
		Connected + " s1 ":               1,
		Resources + "  x.Y #old acked":   2,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got[ResourceUpdatesInvalid+" s1 x.Y"]; ok {
		t.Errorf("a count of zero was recorded: %v", got)
	}
	open = false
	if got := collect(t, reader); got[Connected+" s1 "] != 0 || got[Resources+"  x.Y #old acked"] != 0 {
		t.Errorf("gauges reported after the engine closed: %v", got)
	}
}

// collect reads every data point as "metric server type authority state".
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var points []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				points = d.DataPoints
			case metricdata.Gauge[int64]:
				points = d.DataPoints
			}
			for _, p := range points {
				label := func(k string) string { v, _ := p.Attributes.Value(attribute.Key(k)); return v.AsString() }
				if label(LabelTarget) != "xds:///t" {
					t.Errorf("%s: target %q", m.Name, label(LabelTarget))
				}
				key := m.Name + " " + label(LabelServer) + " " + label(LabelResourceType)
				if a := label(LabelAuthority); a != "" {
					key += " " + a + " " + label(LabelCacheState)
				}
				out[key] += p.Value
			}
		}
	}
	return out
}
