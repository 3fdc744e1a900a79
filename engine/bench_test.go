package engine_test

import (
	"strconv"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// bigAssignment is an EDS resource of 10 localities × 1,000 endpoints;
// salt changes one port so that successive versions differ.
func bigAssignment(salt int) *anypb.Any {
	var locs []xdstest.Locality
	for l := 0; l < 10; l++ {
		loc := xdstest.Locality{Zone: "z" + strconv.Itoa(l)}
		for i := 0; i < 1000; i++ {
			port := 1000 + i
			if l == 0 && i == 0 {
				port = 1 + salt%60000
			}
			loc.Endpoints = append(loc.Endpoints, "10."+strconv.Itoa(l)+"."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250)+":"+strconv.Itoa(port))
		}
		locs = append(locs, loc)
	}
	a, err := anypb.New(xdstest.ClusterLoadAssignment("big", locs...))
	if err != nil {
		panic(err)
	}
	return a
}

// BenchmarkEngineEDSResponse measures one EDS response of 10,000
// endpoints through the engine — gRPC on loopback, unwrapping, decoding,
// validation, cache, ACK and the watcher callback — beside a plain
// proto.Unmarshal of the same DiscoveryResponse bytes. "unchanged"
// re-sends identical bytes, which the engine recognizes without decoding.
func BenchmarkEngineEDSResponse(b *testing.B) {
	wire, err := proto.Marshal(scriptedads.Response(eds.TypeURL, "1", bigAssignment(0)))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(wire)))
		for i := 0; i < b.N; i++ {
			rawAssignmentUnmarshal(b, wire)
		}
	})
	for _, changed := range []bool{true, false} {
		name := "engine/unchanged"
		if changed {
			name = "engine/changed"
		}
		b.Run(name, func(b *testing.B) {
			srv := scriptedads.Start(b)
			e := grpcEngine(b, srv.Addr(), registry.MustNew(eds.Type))
			defer e.Close()
			updates := make(chan struct{}, 1)
			e.Watch(eds.TypeURL, "big", engine.WatcherFuncs{ResourceChanged: func(r registry.Resource, err error, done func()) {
				done()
				updates <- struct{}{}
			}})
			st := srv.WaitStream(b)
			st.RecvT(b)
			// Responses are prepared outside the timer; "changed"
			// alternates two versions of the resource.
			versions := [2]*anypb.Any{bigAssignment(0), bigAssignment(1)}
			resps := make([]*discoverypb.DiscoveryResponse, b.N+1)
			for i := range resps {
				v := versions[0]
				if changed {
					v = versions[i%2]
				}
				resps[i] = scriptedads.Response(eds.TypeURL, strconv.Itoa(i+1), v)
			}
			st.SendT(b, resps[0])
			<-updates
			st.RecvT(b)
			raw := newBaseline(5, func() { rawAssignmentUnmarshal(b, wire) })
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				st.SendT(b, resps[i])
				// The ACK marks the end of processing either way.
				if ack := st.RecvT(b); ack.GetVersionInfo() != strconv.Itoa(i+1) {
					b.Fatalf("ACK of %q, want %d", ack.GetVersionInfo(), i+1)
				}
				if changed {
					select {
					case <-updates:
					case <-time.After(10 * time.Second):
						b.Fatal("no update")
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/raw.least(), "x-raw")
		})
	}
}

// grpcEngine is an engine of reg's types whose one server is addr, over
// gRPC on loopback (the engine's own transport), for the benchmarks.
func grpcEngine(tb testing.TB, addr string, reg *registry.Registry) *engine.Engine {
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: "bench"}},
		Registry:  reg,
		Switches:  &features.Switches{},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// BenchmarkGRPCClusters is BenchmarkSotWClusters over gRPC on loopback:
// the scripted ADS server in the same process sends each response as
// prepared bytes and reads each ACK. all/1k is scenario (a), one/1k
// scenario (c), all/10k and all/100k the scale series; x-raw and
// x-envelope are measured in the same run, as there. The process's CPU
// time (the -cpu ratios, cpu-ns/resource) includes the server's: its gRPC
// send of each response and its decoding of each ACK, which names every
// cluster.
func BenchmarkGRPCClusters(b *testing.B) {
	for _, tc := range []struct {
		name       string
		n, changed int
	}{
		{"all/1k", 1000, 1000},
		{"one/1k", 1000, 1},
		{"all/10k", 10_000, 10_000},
		{"all/100k", 100_000, 100_000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := scriptedads.Start(b)
			e := grpcEngine(b, srv.Addr(), registry.MustNew(cds.Type))
			defer e.Close()
			c := &counter{tb: b}
			w := c.watcher()
			for i := 0; i < tc.n; i++ {
				defer e.Watch(cds.TypeURL, "cluster-"+strconv.Itoa(i), w)()
			}
			st := srv.WaitStream(b)
			for names := 0; names != tc.n; {
				names = len(st.RecvT(b).GetResourceNames())
			}
			versions := [2][]byte{clusterResponse(b, tc.n, tc.changed, 0), clusterResponse(b, tc.n, tc.changed, 1)}
			respond := func(i, expect int) {
				c.wg.Add(expect)
				st.SendRawT(b, versions[i%2])
				if ack := st.RecvT(b); ack.GetErrorDetail() != nil {
					b.Fatalf("NACK: %v", ack.GetErrorDetail())
				}
				c.wg.Wait()
			}
			respond(0, tc.n)
			raw, envelope := rawBaseline(b, versions[0]), envelopeBaseline(b, versions[0])
			b.SetBytes(int64(len(versions[0])))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, cpuOK := processCPU()
			for i := 1; i <= b.N; i++ {
				respond(i, tc.changed)
			}
			cpu1, _ := processCPU()
			b.StopTimer()
			reportResponses(b, tc.n, raw, envelope, cpu1-cpu0, cpuOK)
			if got, want := c.delivered.Load(), int64(tc.n+b.N*tc.changed); got != want {
				b.Fatalf("%d deliveries, want %d", got, want)
			}
		})
	}
}

// BenchmarkGRPCColdStart is BenchmarkSotWColdStart over gRPC on loopback:
// each cold start is a new engine, which dials the scripted ADS server
// (one for the whole benchmark) and opens a stream, 1,000 watches, the
// response once a request names every cluster, and every delivery.
// Close is not timed. cpu-ns/op is the process's CPU time per cold
// start, the server's included (its gRPC, and its decoding of every
// request).
func BenchmarkGRPCColdStart(b *testing.B) {
	const n = 1000
	resp := clusterResponse(b, n, 0, 0)
	raw := rawBaseline(b, resp)
	srv := scriptedads.Start(b)
	clusterNames := benchClusterNames(n, false) // as BenchmarkSotWColdStart's
	requests := 0
	var cpu time.Duration
	cpuOK := true
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu0, ok0 := processCPU()
		e := grpcEngine(b, srv.Addr(), registry.MustNew(cds.Type))
		c := &counter{tb: b}
		c.wg.Add(n)
		w := c.watcher()
		for _, name := range clusterNames {
			e.Watch(cds.TypeURL, name, w)
		}
		st := srv.WaitStream(b)
		for names := 0; names != n; requests++ {
			names = len(st.RecvT(b).GetResourceNames())
		}
		st.SendRawT(b, resp)
		c.wg.Wait()
		cpu1, ok1 := processCPU()
		cpu += cpu1 - cpu0
		cpuOK = cpuOK && ok0 && ok1
		b.StopTimer()
		// The ACK, read so that the server, which keeps every stream,
		// does not keep it too.
		if ack := st.RecvT(b); ack.GetErrorDetail() != nil {
			b.Fatalf("NACK: %v", ack.GetErrorDetail())
		}
		e.Close()
		b.StartTimer()
	}
	b.StopTimer()
	reportColdStarts(b, raw, requests, cpu, cpuOK)
}
