package cds_test

import (
	"testing"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// BenchmarkDecode compares a full decode of an EDS Cluster (unmarshal,
// validation, conversion) with proto.Unmarshal alone: x-raw is the
// decode's time over proto.Unmarshal's, measured in the same run. Run it
// with
//
//	go test -run '^$' -bench BenchmarkDecode -benchmem ./types/cds/
func BenchmarkDecode(b *testing.B) {
	raw := marshal(b, xdstest.Cluster("cluster-1", "eds-1"))
	var rawNs float64
	b.Run("proto.Unmarshal", func(b *testing.B) {
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
		b.Run(tc.name, func(b *testing.B) {
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
