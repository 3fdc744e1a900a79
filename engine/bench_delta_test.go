package engine_test

import (
	"strconv"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
)

// deltaRequest reads the client's next incremental request.
func (s *memStream) deltaRequest(tb testing.TB) *discoverypb.DeltaDiscoveryRequest {
	tb.Helper()
	select {
	case b := <-s.requests:
		req := &discoverypb.DeltaDiscoveryRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			tb.Fatal(err)
		}
		return req
	case <-time.After(30 * time.Second):
		tb.Fatal("no request")
		return nil
	}
}

// deltaClusterResponse marshals an incremental CDS response of the first
// count of n clusters as clusterResources builds them (the first changed
// of them changed by salt), each at the version salt.
func deltaClusterResponse(tb testing.TB, n, count, changed, salt int) []byte {
	resp := &discoverypb.DeltaDiscoveryResponse{SystemVersionInfo: "v" + strconv.Itoa(salt), TypeUrl: cds.TypeURL, Nonce: strconv.Itoa(salt)}
	for i, a := range clusterResources(n, changed, salt)[:count] {
		resp.Resources = append(resp.Resources, &discoverypb.Resource{Name: "cluster-" + strconv.Itoa(i), Version: strconv.Itoa(salt), Resource: a})
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// benchSide is one engine of BenchmarkDeltaOneChanged and its server side.
type benchSide struct {
	e        *engine.Engine
	st       *memStream
	c        *counter
	delta    bool
	versions [2][]byte // the update, alternately
	elapsed  time.Duration
}

func newBenchSide(b *testing.B, n int, delta bool) *benchSide {
	var fs []string
	if delta {
		fs = []string{features.NameDeltaXDS}
	}
	e, tr := memEngine(b, registry.MustNew(cds.Type), fs...)
	s := &benchSide{e: e, c: &counter{tb: b}, delta: delta}
	w := s.c.watcher()
	for i := 0; i < n; i++ {
		e.Watch(cds.TypeURL, "cluster-"+strconv.Itoa(i), w)
	}
	s.st = <-tr.streams
	var first []byte
	if delta {
		for names := 0; names < n; {
			names += len(s.st.deltaRequest(b).GetResourceNamesSubscribe())
		}
		first = deltaClusterResponse(b, n, n, 1, 2)
		s.versions = [2][]byte{deltaClusterResponse(b, n, 1, 1, 0), deltaClusterResponse(b, n, 1, 1, 1)}
	} else {
		s.st.awaitSubscription(b, n)
		first = clusterResponse(b, n, 1, 2)
		s.versions = [2][]byte{clusterResponse(b, n, 1, 0), clusterResponse(b, n, 1, 1)}
	}
	s.serve(b, first, n)
	return s
}

// serve sends resp, reads the ACK and waits for want deliveries.
func (s *benchSide) serve(b *testing.B, resp []byte, want int) {
	s.c.wg.Add(want)
	s.st.replies <- resp
	if s.delta {
		if ack := s.st.deltaRequest(b); ack.GetErrorDetail() != nil {
			b.Fatalf("NACK: %v", ack.GetErrorDetail())
		}
	} else if ack := s.st.request(b); ack.GetErrorDetail() != nil {
		b.Fatalf("NACK: %v", ack.GetErrorDetail())
	}
	s.c.wg.Wait()
}

// BenchmarkDeltaOneChanged: 10,000 clusters watched, one changed per
// update, served State of the World (the whole type again) and
// incrementally (the one cluster) to two engines, alternately in the same
// run, each update delivered to its watcher. delta-ns and sotw-ns are the
// time per update of each, x-sotw-cpu their ratio, x-sotw-bytes the ratio
// of the bytes received per update.
func BenchmarkDeltaOneChanged(b *testing.B) {
	const n = 10000
	sotw, delta := newBenchSide(b, n, false), newBenchSide(b, n, true)
	defer sotw.e.Close()
	defer delta.e.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		for _, s := range []*benchSide{sotw, delta} {
			start := time.Now()
			s.serve(b, s.versions[i%2], 1)
			s.elapsed += time.Since(start)
		}
	}
	b.StopTimer()
	d := float64(delta.elapsed.Nanoseconds()) / float64(b.N)
	so := float64(sotw.elapsed.Nanoseconds()) / float64(b.N)
	b.ReportMetric(d, "delta-ns")
	b.ReportMetric(so, "sotw-ns")
	b.ReportMetric(d/so, "x-sotw-cpu")
	b.ReportMetric(float64(len(delta.versions[0]))/float64(len(sotw.versions[0])), "x-sotw-bytes")
}
