package eds_test

import (
	"fmt"
	"testing"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/eds"
)

// largeAssignment builds 10 localities of 1,000 endpoints each, every
// endpoint weighted, half of them IPv6.
func largeAssignment() *endpointpb.ClusterLoadAssignment {
	m := cla()
	for l := range 10 {
		loc := locality(fmt.Sprintf("zone-%d", l), uint32(l%3), 100)
		for e := range 1000 {
			ip := fmt.Sprintf("10.%d.%d.%d", l, e/250, e%250)
			if e%2 == 1 {
				ip = fmt.Sprintf("2001:db8:%x::%x", l, e)
			}
			lb := lbEndpoint(ip, 8080)
			lb.LoadBalancingWeight = wrapperspb.UInt32(uint32(e%7 + 1))
			loc.LbEndpoints = append(loc.LbEndpoints, lb)
		}
		m.Endpoints = append(m.Endpoints, loc)
	}
	return m
}

// BenchmarkDecode compares a full decode (unmarshal, validation,
// conversion, copy of the bytes) with proto.Unmarshal alone. Run it with
//
//	go test -run '^$' -bench BenchmarkDecode -benchmem ./types/eds/
func BenchmarkDecode(b *testing.B) {
	raw := marshal(b, largeAssignment())
	b.Run("eds.Type.Decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			res, err := eds.Type.Decode(raw, registry.DecodeOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if n := len(res.Resource.(*eds.ClusterLoadAssignment).Localities); n != 10 {
				b.Fatalf("decoded %d localities, want 10", n)
			}
		}
	})
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var m endpointpb.ClusterLoadAssignment
			if err := proto.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
