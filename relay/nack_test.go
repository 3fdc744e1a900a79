package relay_test

import (
	"context"
	"testing"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// clusterEDS returns the EDS service name of a served Cluster.
func clusterEDS(t *testing.T, a *anypb.Any) string {
	t.Helper()
	var c clusterpb.Cluster
	if err := a.UnmarshalTo(&c); err != nil {
		t.Fatalf("a served resource is no Cluster: %v", err)
	}
	return c.GetEdsClusterConfig().GetServiceName()
}

// sumOf returns the sum of a counter, all attributes together.
func sumOf(t *testing.T, reader *sdkmetric.ManualReader, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					n += p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					n += p.Value
				}
			}
		}
	}
	return n
}

// TestDownstreamNACK: a client's NACK is counted, not forwarded upstream,
// and the rejected version is not sent to it again, whether it rejected
// its first response or a later one; the next change reaches it.
func TestDownstreamNACK(t *testing.T) {
	up := newUpstream(t, "upstream")
	up.Set(meshResources("eds-1")...)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	r := newRelay(t, up, relaytest.Options{}, func(c *relay.Config) { c.MeterProvider = mp })
	// A well-behaved client of the same key, which must not suffer.
	other := watch(t, client(t, r, relaytest.BootstrapOptions{NodeID: "good", Cluster: "blue"}), cds.TypeURL, "cluster-1")
	other.waitFor(t, "the good client's cluster", edsName("eds-1"))

	t.Run("sotw", func(t *testing.T) {
		s := openSotw(t, r.Addr())
		req := &discoverypb.DiscoveryRequest{Node: node("bad-sotw", "blue"), TypeUrl: cds.TypeURL, ResourceNames: []string{"cluster-1"}}
		s.request(t, req)
		first := s.next(t)
		if got := clusterEDS(t, first.GetResources()[0]); got != "eds-1" {
			t.Fatalf("first response has %q, want eds-1", got)
		}
		// Rejecting the very first response: version_info stays "".
		s.request(t, &discoverypb.DiscoveryRequest{TypeUrl: cds.TypeURL, ResourceNames: req.ResourceNames,
			ResponseNonce: first.GetNonce(), ErrorDetail: nackDetail()})
		s.none(t, quiet)

		up.Update(cds.TypeURL, xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-2")))
		second := s.next(t)
		if got := clusterEDS(t, second.GetResources()[0]); got != "eds-2" {
			t.Fatalf("after the NACK, the client got %q, want the next change eds-2", got)
		}
		other.waitFor(t, "the good client's update", edsName("eds-2"))
		s.request(t, &discoverypb.DiscoveryRequest{TypeUrl: cds.TypeURL, ResourceNames: req.ResourceNames,
			VersionInfo: second.GetVersionInfo(), ResponseNonce: second.GetNonce()}) // ACK

		up.Update(cds.TypeURL, xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-3")))
		third := s.next(t)
		// Rejecting a later one: version_info is the last accepted.
		s.request(t, &discoverypb.DiscoveryRequest{TypeUrl: cds.TypeURL, ResourceNames: req.ResourceNames,
			VersionInfo: second.GetVersionInfo(), ResponseNonce: third.GetNonce(), ErrorDetail: nackDetail()})
		s.none(t, quiet)
		up.Update(cds.TypeURL, xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-4")))
		if got := clusterEDS(t, s.next(t).GetResources()[0]); got != "eds-4" {
			t.Fatalf("after the second NACK, the client got %q, want eds-4", got)
		}
	})

	t.Run("delta", func(t *testing.T) {
		s := openDelta(t, r.Addr())
		s.request(t, &discoverypb.DeltaDiscoveryRequest{Node: node("bad-delta", "blue"), TypeUrl: cds.TypeURL,
			ResourceNamesSubscribe: []string{"cluster-1"}})
		first := s.next(t)
		s.request(t, &discoverypb.DeltaDiscoveryRequest{TypeUrl: cds.TypeURL, ResponseNonce: first.GetNonce(), ErrorDetail: nackDetail()})
		s.none(t, quiet)
		up.Update(cds.TypeURL, xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-5")))
		next := s.next(t)
		if got := clusterEDS(t, next.GetResources()[0].GetResource()); got != "eds-5" {
			t.Fatalf("after the NACK, the client got %q, want eds-5", got)
		}
	})

	other.waitFor(t, "the good client's last update", edsName("eds-5"))
	if n := len(up.NACKs()); n != 0 {
		t.Errorf("the upstream got %d NACKs, want none: a client's NACK is not forwarded", n)
	}
	if n := sumOf(t, reader, relay.MetricDownstreamNACKs); n != 3 {
		t.Errorf("%s = %d, want 3", relay.MetricDownstreamNACKs, n)
	}
}
