package cds_test

import (
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// BenchmarkDecode compares a full decode of an EDS Cluster (unmarshal,
// validation, conversion) with proto.Unmarshal alone: x-raw is the
// decode's time over proto.Unmarshal's, measured in the same run. "eds" is
// the usual EDS cluster (name, type, eds_cluster_config with ADS and a
// service name, lb_policy), which the decoder reads from its bytes;
// "eds+limits" adds a connect_timeout, circuit breakers and outlier
// detection, which the decoder reads from the bytes too; "eds+budget"
// gives the circuit breaker a retry budget, which sends circuit_breakers
// through proto.Unmarshal. Run it with
//
//	go test -run '^$' -bench BenchmarkDecode -benchmem ./types/cds/
func BenchmarkDecode(b *testing.B) {
	limits := xdstest.Cluster("cluster-1", "eds-1")
	limits.ConnectTimeout = durationpb.New(time.Second)
	limits.CircuitBreakers = &clusterpb.CircuitBreakers{Thresholds: []*clusterpb.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(100)}}}
	limits.OutlierDetection = &clusterpb.OutlierDetection{Interval: durationpb.New(10 * time.Second), MaxEjectionPercent: wrapperspb.UInt32(20)}
	budget := proto.Clone(limits).(*clusterpb.Cluster)
	budget.CircuitBreakers.Thresholds[0].RetryBudget = &clusterpb.CircuitBreakers_Thresholds_RetryBudget{MinRetryConcurrency: wrapperspb.UInt32(3)}
	for _, shape := range []struct {
		name    string
		cluster *clusterpb.Cluster
	}{
		{"eds", xdstest.Cluster("cluster-1", "eds-1")},
		{"eds+limits", limits},
		{"eds+budget", budget},
	} {
		raw := marshal(b, shape.cluster)
		var rawNs float64
		b.Run(shape.name+"/proto.Unmarshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var m clusterpb.Cluster
				if err := proto.Unmarshal(raw, &m); err != nil {
					b.Fatal(err)
				}
			}
			rawNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		})
		for _, tc := range []struct {
			name string
			opts registry.DecodeOptions
		}{
			{"cds.Type.Decode", registry.DecodeOptions{}},
			{"cds.Type.Decode/OwnsRaw", registry.DecodeOptions{OwnsRaw: true}},
		} {
			b.Run(shape.name+"/"+tc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res, err := cds.Type.Decode(raw, tc.opts)
					if err != nil {
						b.Fatal(err)
					}
					if res.Resource.(*cds.Cluster).EDSServiceName != "eds-1" {
						b.Fatal("wrong cluster")
					}
				}
				if rawNs > 0 {
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rawNs, "x-raw")
				}
			})
		}
	}
}
