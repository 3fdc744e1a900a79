package passthrough_test

import (
	"fmt"
	"runtime"
	"testing"

	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/passthrough"
)

// meshRoutes is istiod's port-80 routes for a mesh of n services.
func meshRoutes(n int) *routepb.RouteConfiguration {
	rc := routes80()
	vh := rc.VirtualHosts[0]
	rc.VirtualHosts = rc.VirtualHosts[1:]
	for i := range n {
		svc := fmt.Sprintf("svc%04d.default.svc.cluster.local", i)
		v := proto.Clone(vh).(*routepb.VirtualHost)
		v.Name, v.Domains = svc+":80", []string{svc, svc + ":80"}
		v.Routes[0].GetRoute().ClusterSpecifier = &routepb.RouteAction_Cluster{Cluster: "outbound|80||" + svc}
		rc.VirtualHosts = append(rc.VirtualHosts, v)
	}
	return rc
}

var benchResources = []struct {
	name    string
	typeURL string
	msg     proto.Message
}{
	{"Listener/virtualInbound", passthrough.ListenerTypeURL, virtualInbound()},
	{"Listener/gateway", passthrough.ListenerTypeURL, gatewayListener()},
	{"Cluster/EDS-mTLS", passthrough.ClusterTypeURL, outboundCluster()},
	{"Cluster/STATIC", passthrough.ClusterTypeURL, inboundCluster()},
	{"ClusterLoadAssignment", passthrough.ClusterLoadAssignmentTypeURL, reviewsAssignment()},
	{"RouteConfiguration/1000-hosts", passthrough.RouteConfigurationTypeURL, meshRoutes(1000)},
}

// BenchmarkDecode decodes and validates istiod-shaped resources, with
// each Validation, beside proto.Unmarshal alone, which is what validation
// and the dependency walk add to. retained-B/op is what a decoded
// resource keeps alive (bytes and message), measured over 1,000 of them.
func BenchmarkDecode(b *testing.B) {
	for _, r := range benchResources {
		raw, err := proto.Marshal(r.msg)
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range []passthrough.Validation{passthrough.Structural, passthrough.PGV} {
			rt, _ := passthrough.Options{Validation: v}.Registry().Lookup(r.typeURL)
			b.Run(r.name+"/passthrough-"+v.String(), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(raw)))
				for b.Loop() {
					if _, err := rt.Decode(raw, registry.DecodeOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(retained(b, rt, raw), "retained-B/op")
			})
		}
		b.Run(r.name+"/unmarshal-only", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if err := proto.Unmarshal(raw, r.msg.ProtoReflect().New().Interface()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// retained returns the heap a decoded resource keeps, on average over
// 1,000 decodings of raw held at once.
func retained(b *testing.B, rt registry.ResourceType, raw []byte) float64 {
	const n = 1000
	keep := make([]registry.Resource, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		res, err := rt.Decode(raw, registry.DecodeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		keep[i] = res.Resource
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return float64(after.HeapAlloc-before.HeapAlloc) / n
}
