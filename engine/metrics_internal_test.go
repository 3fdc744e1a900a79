package engine

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestMetricsRecorder: a count lands on its counter with the target, server
// and type labels; a count of zero records nothing; gauges read the
// engine's state at collection, and nothing once it is closed.
func TestMetricsRecorder(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	open := true
	r, err := newMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), "xds:///t", "v0", func() (gaugeValues, bool) {
		return gaugeValues{Connected: map[string]bool{"s1": true}, Resources: map[gaugeKey]int64{{"#old", "x.Y", "acked"}: 2}}, open
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	r.add(countValid, 3, "s1", "type.googleapis.com/x.Y")
	r.add(countInvalid, 0, "s1", "type.googleapis.com/x.Y")
	r.add(countFailures, 1, "s1", "")
	got := collectMetrics(t, reader, "xds:///t")
	want := map[string]int64{
		MetricResourceUpdatesValid + " s1 x.Y": 3,
		MetricServerFailure + " s1 ":           1,
		MetricConnected + " s1 ":               1,
		MetricResources + "  x.Y #old acked":   2,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got[MetricResourceUpdatesInvalid+" s1 x.Y"]; ok {
		t.Errorf("a count of zero was recorded: %v", got)
	}
	open = false
	if got := collectMetrics(t, reader, "xds:///t"); got[MetricConnected+" s1 "] != 0 || got[MetricResources+"  x.Y #old acked"] != 0 {
		t.Errorf("gauges reported after the engine closed: %v", got)
	}
}

// collectMetrics reads every data point as "metric server type
// [authority state]", checking that each has the engine's target.
func collectMetrics(t *testing.T, reader *sdkmetric.ManualReader, target string) map[string]int64 {
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
				if label(LabelTarget) != target {
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
