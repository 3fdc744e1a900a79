package engine_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// memTransport is an in-memory transport: the benchmark plays the server
// on the other end of one stream, with no gRPC and no sockets, so that
// the figures are the engine's own.
type memTransport struct {
	streams chan *memStream
}

type memStream struct {
	ctx      context.Context
	requests chan []byte // client → server
	replies  chan []byte // server → client
}

func (t *memTransport) Build(bootstrap.ServerConfig, engine.TransportOptions) (engine.Transport, error) {
	return t, nil
}

func (t *memTransport) NewStream(ctx context.Context, _ string) (engine.Stream, error) {
	s := &memStream{ctx: ctx, requests: make(chan []byte, 64), replies: make(chan []byte, 1)}
	select {
	case t.streams <- s:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *memTransport) Close() error { return nil }

func (s *memStream) Send(b []byte) error {
	select {
	case s.requests <- b:
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

func (s *memStream) Recv() ([]byte, error) {
	select {
	case b := <-s.replies:
		return b, nil
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

// request reads the client's next request.
func (s *memStream) request(tb testing.TB) *discoverypb.DiscoveryRequest {
	tb.Helper()
	select {
	case b := <-s.requests:
		req := &discoverypb.DiscoveryRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			tb.Fatal(err)
		}
		return req
	case <-time.After(30 * time.Second):
		tb.Fatal("no request")
		return nil
	}
}

// clusterResources returns n Clusters; those below changed carry salt in
// their EDS service name, so that two salts give two versions.
func clusterResources(n, changed, salt int) []*anypb.Any {
	out := make([]*anypb.Any, n)
	for i := range out {
		eds := "eds-" + strconv.Itoa(i)
		if i < changed {
			eds += "-" + strconv.Itoa(salt)
		}
		a, err := anypb.New(xdstest.Cluster("cluster-"+strconv.Itoa(i), eds))
		if err != nil {
			panic(err)
		}
		out[i] = a
	}
	return out
}

// rawUnmarshal is what any client does at the least: the response, then
// each resource into its message.
func rawUnmarshal(tb testing.TB, b []byte) {
	var r discoverypb.DiscoveryResponse
	if err := proto.Unmarshal(b, &r); err != nil {
		tb.Fatal(err)
	}
	for _, a := range r.GetResources() {
		var c clusterpb.Cluster
		if err := proto.Unmarshal(a.GetValue(), &c); err != nil {
			tb.Fatal(err)
		}
	}
}

// rawNsPerOp measures rawUnmarshal of b, in the same process and run as
// the benchmark it is compared with: the fastest of several batches, as
// the least the work can cost on this machine now.
func rawNsPerOp(tb testing.TB, b []byte) float64 {
	const batches, rounds = 7, 10
	best := time.Duration(1<<63 - 1)
	for j := 0; j < batches; j++ {
		start := time.Now()
		for i := 0; i < rounds; i++ {
			rawUnmarshal(tb, b)
		}
		best = min(best, time.Since(start))
	}
	return float64(best.Nanoseconds()) / rounds
}

// BenchmarkSotWClusters sends responses of 1,000 Clusters, each watched,
// through the engine's whole response path (stream, decode, validation,
// cache, ACK, watcher callbacks) over an in-memory transport. "all"
// changes every cluster in each response; "one" re-sends 1,000 and
// changes one. x-raw is the time per response over proto.Unmarshal of
// the same bytes (response and every resource), measured in the same run.
func BenchmarkSotWClusters(b *testing.B) {
	const n = 1000
	for _, tc := range []struct {
		name    string
		changed int
	}{{"all", n}, {"one", 1}} {
		b.Run(tc.name, func(b *testing.B) {
			tr := &memTransport{streams: make(chan *memStream, 1)}
			e, err := engine.New(engine.Config{
				Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("mem")}, Node: bootstrap.Node{ID: "bench"}},
				Registry:  registry.MustNew(cds.Type),
				Switches:  &features.Switches{},
				Transport: tr,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			var delivered atomic.Int64
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				defer e.Watch(cds.TypeURL, "cluster-"+strconv.Itoa(i), engine.WatcherFuncs{ResourceChanged: func(_ registry.Resource, err error, done func()) {
					if err != nil {
						b.Error(err)
					}
					delivered.Add(1)
					wg.Done()
					done()
				}})()
			}
			st := <-tr.streams
			for names := 0; names < n; {
				names = len(st.request(b).GetResourceNames())
			}
			versions := [2][]byte{}
			for salt := range versions {
				versions[salt], err = proto.Marshal(&discoverypb.DiscoveryResponse{
					VersionInfo: "v", TypeUrl: cds.TypeURL, Nonce: strconv.Itoa(salt),
					Resources: clusterResources(n, tc.changed, salt),
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			respond := func(i int, expect int) {
				wg.Add(expect)
				st.replies <- versions[i%2]
				if ack := st.request(b); ack.GetErrorDetail() != nil {
					b.Fatalf("NACK: %v", ack.GetErrorDetail())
				}
				wg.Wait()
			}
			respond(0, n) // the first delivery of every cluster
			raw := rawNsPerOp(b, versions[0])
			b.SetBytes(int64(len(versions[0])))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				respond(i, tc.changed)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/raw, "x-raw")
			if got, want := delivered.Load(), int64(n+b.N*tc.changed); got != want {
				b.Fatalf("%d deliveries, want %d", got, want)
			}
		})
	}
}
