package engine_test

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// deltaRequest reads the client's next incremental request.
func (s *memStream) deltaRequest(tb testing.TB) *discoverypb.DeltaDiscoveryRequest {
	tb.Helper()
	select {
	case msg := <-s.requests:
		req := &discoverypb.DeltaDiscoveryRequest{}
		if err := proto.Unmarshal(bytes.Join(msg, nil), req); err != nil {
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
	// wall and cpu are the time each update took, summed: wall from the
	// response's hand-over to the last delivery, cpu the process's CPU
	// time over the same span.
	wall, cpu time.Duration
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

// serve sends resp and waits for its answer and want deliveries; it adds
// the time they took to wall and cpu. The answer is checked to be an ACK
// only after the clocks are read, so that the harness's reading of it (a
// SotW ACK names all 10,000 clusters) is not counted as the engine's.
func (s *benchSide) serve(b *testing.B, resp []byte, want int) {
	s.c.wg.Add(want)
	cpu0, _ := processCPU()
	start := time.Now()
	s.st.replies <- resp
	var answer net.Buffers
	select {
	case answer = <-s.st.requests:
	case <-time.After(30 * time.Second):
		b.Fatal("no answer")
	}
	s.c.wg.Wait()
	cpu1, _ := processCPU()
	s.wall += time.Since(start)
	s.cpu += cpu1 - cpu0
	var err error
	var detail interface{ GetMessage() string }
	if s.delta {
		req := &discoverypb.DeltaDiscoveryRequest{}
		err = proto.Unmarshal(bytes.Join(answer, nil), req)
		detail = req.GetErrorDetail()
	} else {
		req := &discoverypb.DiscoveryRequest{}
		err = proto.Unmarshal(bytes.Join(answer, nil), req)
		detail = req.GetErrorDetail()
	}
	if err != nil || detail.GetMessage() != "" {
		b.Fatalf("answer: %v, NACK %q; want an ACK", err, detail.GetMessage())
	}
}

// BenchmarkDeltaOneChanged: 10,000 clusters watched, one changed per
// update, served State of the World (the whole type again) to one engine
// and then incrementally (the one cluster) to another, in the same run,
// each update delivered to its watcher. Each engine runs alone, after a
// collection, so that the collector's work on one's heap, paid in CPU
// time, is not charged to the other. delta-ns and sotw-ns are the wall
// time per update of each; x-sotw-cpu is the ratio of their CPU time
// (the process's, getrusage), x-sotw-bytes the ratio of the bytes
// received per update.
func BenchmarkDeltaOneChanged(b *testing.B) {
	const n = 10000
	if _, ok := processCPU(); !ok {
		b.Skip("no CPU clock on this platform")
	}
	b.ReportAllocs()
	var sides [2]*benchSide
	for k, delta := range []bool{false, true} {
		b.StopTimer()
		s := newBenchSide(b, n, delta)
		s.wall, s.cpu = 0, 0
		runtime.GC()
		b.StartTimer()
		for i := 1; i <= b.N; i++ {
			s.serve(b, s.versions[i%2], 1)
		}
		b.StopTimer()
		s.e.Close()
		sides[k] = s
	}
	sotw, delta := sides[0], sides[1]
	b.ReportMetric(float64(delta.wall.Nanoseconds())/float64(b.N), "delta-ns")
	b.ReportMetric(float64(sotw.wall.Nanoseconds())/float64(b.N), "sotw-ns")
	b.ReportMetric(float64(delta.cpu)/float64(sotw.cpu), "x-sotw-cpu")
	b.ReportMetric(float64(len(delta.versions[0]))/float64(len(sotw.versions[0])), "x-sotw-bytes")
}

// deltaMemberResponse marshals an incremental response of n LbEndpoint
// members of the glob collection benchGlob, each at the version salt and
// with a port that salt changes.
func deltaMemberResponse(tb testing.TB, n, salt int) []byte {
	resp := &discoverypb.DeltaDiscoveryResponse{SystemVersionInfo: "v" + strconv.Itoa(salt), TypeUrl: leds.EndpointTypeURL, Nonce: strconv.Itoa(salt)}
	for i := range n {
		a, err := anypb.New(xdstest.LbEndpoint(fmt.Sprintf("10.%d.%d.%d:%d", i>>16, i>>8&0xff, i&0xff, 8000+salt)))
		if err != nil {
			tb.Fatal(err)
		}
		resp.Resources = append(resp.Resources, &discoverypb.Resource{
			Name: strings.TrimSuffix(benchGlob, "*") + "ep-" + strconv.Itoa(i), Version: strconv.Itoa(salt), Resource: a})
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// benchGlob is the glob collection of BenchmarkDeltaGlobMembers (LEDS,
// xRFC TP1).
const benchGlob = "xdstp://" + benchAuthority + "/envoy.config.endpoint.v3.LbEndpoint/backend/z1/*"

// BenchmarkDeltaGlobMembers: a watched LEDS glob collection whose 1,000
// members an incremental server sends again, each changed, in every
// response; the collection is delivered once per response. x-raw is over
// proto.Unmarshal of the response and of each LbEndpoint in it.
func BenchmarkDeltaGlobMembers(b *testing.B) {
	const n = 1000
	e, tr := memEngine(b, registry.MustNew(leds.EndpointType), features.NameDeltaXDS)
	defer e.Close()
	c := &counter{tb: b}
	defer e.Watch(leds.EndpointTypeURL, benchGlob, c.watcher())()
	st := <-tr.streams
	st.deltaRequest(b)
	versions := [2][]byte{deltaMemberResponse(b, n, 0), deltaMemberResponse(b, n, 1)}
	serve := func(resp []byte) {
		c.wg.Add(1)
		st.replies <- resp
		if ack := st.deltaRequest(b); ack.GetErrorDetail() != nil {
			b.Fatalf("NACK: %v", ack.GetErrorDetail())
		}
		c.wg.Wait()
	}
	serve(versions[1])
	raw := newBaseline(10, func() {
		var r discoverypb.DeltaDiscoveryResponse
		if err := proto.Unmarshal(versions[0], &r); err != nil {
			b.Fatal(err)
		}
		for _, res := range r.GetResources() {
			var ep endpointpb.LbEndpoint
			if err := proto.Unmarshal(res.GetResource().GetValue(), &ep); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuOK := processCPU()
	for i := range b.N {
		serve(versions[i%2])
	}
	cpu1, _ := processCPU()
	b.StopTimer()
	reportResponses(b, n, raw, nil, cpu1-cpu0, cpuOK)
}
