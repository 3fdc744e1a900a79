package engine_test

import (
	"bytes"
	"context"
	"math"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// memTransport is an in-memory transport: the benchmark plays the server
// on the other end of one stream, with no gRPC and no sockets, so that
// the figures are the engine's own.
type memTransport struct {
	streams chan *memStream
}

type memStream struct {
	ctx context.Context
	// requests carries each request as the buffers the engine sent it in
	// (SendBuffers): the ACK's names are the encoding it keeps, as over
	// gRPC, which frames the buffers without joining them.
	requests chan net.Buffers // client → server
	replies  chan []byte      // server → client
	// end ends the stream with an error, as the server would.
	end chan error
	// hold: writes from now on are handed over but do not finish before
	// the stream ends.
	hold atomic.Bool
}

func (t *memTransport) Build(bootstrap.ServerConfig, transport.Options) (transport.Transport, error) {
	return t, nil
}

func (t *memTransport) NewStream(ctx context.Context, _ string) (transport.Stream, error) {
	s := &memStream{ctx: ctx, requests: make(chan net.Buffers, 64), replies: make(chan []byte, 1), end: make(chan error, 1)}
	select {
	case t.streams <- s:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *memTransport) Close() error { return nil }

func (s *memStream) Send(b []byte) error { return s.SendBuffers(net.Buffers{b}) }

func (s *memStream) SendBuffers(msg net.Buffers) error {
	held := s.hold.Load()
	select {
	case s.requests <- msg:
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
	if held {
		<-s.ctx.Done()
		return s.ctx.Err()
	}
	return nil
}

func (s *memStream) Recv() ([]byte, error) {
	select {
	case b := <-s.replies:
		return b, nil
	case err := <-s.end:
		return nil, err
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

// request reads the client's next request.
func (s *memStream) request(tb testing.TB) *discoverypb.DiscoveryRequest {
	tb.Helper()
	select {
	case msg := <-s.requests:
		req := &discoverypb.DiscoveryRequest{}
		if err := proto.Unmarshal(bytes.Join(msg, nil), req); err != nil {
			tb.Fatal(err)
		}
		return req
	case <-time.After(30 * time.Second):
		tb.Fatal("no request")
		return nil
	}
}

// ack reads the client's next request and reports whether it is a NACK.
func (s *memStream) ack(tb testing.TB) (nack bool) {
	tb.Helper()
	_, nack = s.scanRequest(tb)
	return nack
}

// requestNamesTag is the tag of a request's names: a SotW request's
// resource_names and a delta request's resource_names_subscribe (3).
const requestNamesTag = 3<<3 | byte(protowire.BytesType)

// scanRequest reads the client's next request and returns how many names
// it subscribes to (field 3, resource_names, or a delta request's
// resource_names_subscribe) and whether it is a SotW NACK, reading only
// its top-level fields: decoding the names of a 100,000-name request is
// the benchmark's cost, not the engine's. The engine sends whole fields
// in each buffer.
func (s *memStream) scanRequest(tb testing.TB) (names int, nack bool) {
	tb.Helper()
	select {
	case msg := <-s.requests:
		for _, b := range msg {
			n, isNACK := scanFields(tb, b)
			names += n
			nack = nack || isNACK
		}
		return names, nack
	case <-time.After(30 * time.Second):
		tb.Fatal("no request")
		return 0, false
	}
}

// scanFields is scanRequest's reading of a buffer of whole fields.
func scanFields(tb testing.TB, b []byte) (names int, nack bool) {
	tb.Helper()
	for len(b) > 0 {
		// A name under 128 bytes, nearly every field of a request, is
		// skipped inline: protowire's two calls per field made the
		// harness's reading of a 1,000-name ACK about a tenth of
		// one/1k's CPU, which is counted as the engine's.
		if b[0] == requestNamesTag && len(b) > 1 && b[1] < 0x80 && int(b[1]) <= len(b)-2 {
			names++
			b = b[2+int(b[1]):]
			continue
		}
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			tb.Fatal("request does not parse")
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			tb.Fatal("request does not parse")
		}
		b = b[n:]
		switch num {
		case 3:
			names++
		case 6: // error_detail
			nack = true
		}
	}
	return names, nack
}

// clusterResources returns n Clusters; those below changed carry salt in
// their EDS service name, so that two salts give two versions.
func clusterResources(n, changed, salt int) []*anypb.Any {
	return shapedClusterResources(n, changed, salt, clusterShape{})
}

// clusterShape is what the benchmarks' Clusters have beyond the usual:
// limits, a connect timeout, a circuit breaker and outlier detection in
// each (cds's BenchmarkDecode's "eds+limits"); xdstp, names of the new
// style (benchClusterName).
type clusterShape struct{ limits, xdstp bool }

// benchAuthority is the authority of the benchmarks' xdstp names, in
// memEngine's bootstrap with the top-level server.
const benchAuthority = "xds.example.com"

// benchClusterName is the name of the benchmarks' i-th Cluster:
// "cluster-<i>", or with xdstp "xdstp://xds.example.com/
// envoy.config.cluster.v3.Cluster/cluster-<i>", as a federated mesh
// (A47) names them.
func benchClusterName(i int, xdstp bool) string {
	if xdstp {
		return "xdstp://" + benchAuthority + "/envoy.config.cluster.v3.Cluster/cluster-" + strconv.Itoa(i)
	}
	return "cluster-" + strconv.Itoa(i)
}

// benchClusterNames is the names of the benchmarks' first n Clusters.
func benchClusterNames(n int, xdstp bool) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = benchClusterName(i, xdstp)
	}
	return names
}

// shapedClusterResources is clusterResources in the shape sh.
func shapedClusterResources(n, changed, salt int, sh clusterShape) []*anypb.Any {
	out := make([]*anypb.Any, n)
	for i := range out {
		eds := "eds-" + strconv.Itoa(i)
		if i < changed {
			eds += "-" + strconv.Itoa(salt)
		}
		c := xdstest.Cluster(benchClusterName(i, sh.xdstp), eds)
		if sh.limits {
			c.ConnectTimeout = durationpb.New(time.Second)
			c.CircuitBreakers = &clusterpb.CircuitBreakers{Thresholds: []*clusterpb.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(100)}}}
			c.OutlierDetection = &clusterpb.OutlierDetection{Interval: durationpb.New(10 * time.Second), MaxEjectionPercent: wrapperspb.UInt32(20)}
		}
		a, err := anypb.New(c)
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

// rawAssignmentUnmarshal is rawUnmarshal for a response whose first
// resource is a ClusterLoadAssignment: the response, then the resource.
func rawAssignmentUnmarshal(tb testing.TB, b []byte) {
	var r discoverypb.DiscoveryResponse
	if err := proto.Unmarshal(b, &r); err != nil {
		tb.Fatal(err)
	}
	var cla endpointpb.ClusterLoadAssignment
	if err := proto.Unmarshal(r.GetResources()[0].GetValue(), &cla); err != nil {
		tb.Fatal(err)
	}
}

// baseline is the work a benchmark's ratios are taken over (x-raw,
// x-envelope), measured in the same process and run: the fastest batch
// of calls, as the least the work costs on this machine now. A benchmark
// measures it before its loop and again after, and keeps the least: a few
// batches taken at one moment land, now and then, all in a stretch when
// the machine or the collector runs slow, and that run's ratios then come
// out low (the envelope of 1,000 Clusters measured 140-264 µs in seven
// runs on one day).
type baseline struct {
	f      func()
	rounds int     // calls per batch
	ns     float64 // the least time per call so far
}

// baselineTime is the least time a measurement of a baseline takes, in
// at least minBaselineBatches batches.
const (
	baselineTime       = 100 * time.Millisecond
	minBaselineBatches = 4
)

func newBaseline(rounds int, f func()) *baseline {
	bl := &baseline{f: f, rounds: rounds, ns: math.Inf(1)}
	bl.measure()
	return bl
}

// least measures the baseline once more and returns the least time per
// call of all its measurements: what ratios are taken over, once the
// benchmark's loop is done.
func (bl *baseline) least() float64 {
	bl.measure()
	return bl.ns
}

func (bl *baseline) measure() {
	start := time.Now()
	for j := 0; j < minBaselineBatches || time.Since(start) < baselineTime; j++ {
		t0 := time.Now()
		for i := 0; i < bl.rounds; i++ {
			bl.f()
		}
		bl.ns = min(bl.ns, float64(time.Since(t0).Nanoseconds())/float64(bl.rounds))
	}
}

// rawBaseline is rawUnmarshal of b.
func rawBaseline(tb testing.TB, b []byte) *baseline {
	return newBaseline(10, func() { rawUnmarshal(tb, b) })
}

// memEngine is an engine on an in-memory transport, for the benchmarks.
// serverFeatures are the server's, such as features.NameDeltaXDS.
func memEngine(tb testing.TB, reg *registry.Registry, serverFeatures ...string) (*engine.Engine, *memTransport) {
	tr := &memTransport{streams: make(chan *memStream, 1)}
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("mem", serverFeatures...)}, Node: bootstrap.Node{ID: "bench"},
			Authorities: map[string]bootstrap.Authority{benchAuthority: {}}},
		Registry:  reg,
		Switches:  &features.Switches{},
		Transport: tr,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return e, tr
}

// counter is a watcher that counts deliveries and reports errors.
type counter struct {
	tb        testing.TB
	wg        sync.WaitGroup
	delivered atomic.Int64
}

func (c *counter) watcher() engine.ResourceWatcher {
	return engine.WatcherFuncs{ResourceChanged: func(_ registry.Resource, err error, done func()) {
		if err != nil {
			c.tb.Error(err)
		}
		c.delivered.Add(1)
		c.wg.Done()
		done()
	}}
}

// awaitSubscription reads requests until one subscribes to n names, and
// returns how many requests that took.
func (s *memStream) awaitSubscription(tb testing.TB, n int) int {
	requests := 0
	for names := -1; names != n; {
		names, _ = s.scanRequest(tb)
		requests++
	}
	return requests
}

// clusterResponse marshals a CDS response of n clusters.
func clusterResponse(tb testing.TB, n, changed, salt int) []byte {
	return shapedClusterResponse(tb, n, changed, salt, clusterShape{})
}

func shapedClusterResponse(tb testing.TB, n, changed, salt int, sh clusterShape) []byte {
	b, err := proto.Marshal(&discoverypb.DiscoveryResponse{
		VersionInfo: "v" + strconv.Itoa(salt), TypeUrl: cds.TypeURL, Nonce: strconv.Itoa(salt),
		Resources: shapedClusterResources(n, changed, salt, sh),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// envelopeBaseline is proto.Unmarshal of the response envelope b alone
// (the Any values are not opened): the least a client must do to learn
// that nothing changed.
func envelopeBaseline(tb testing.TB, b []byte) *baseline {
	return newBaseline(10, func() {
		var r discoverypb.DiscoveryResponse
		if err := proto.Unmarshal(b, &r); err != nil {
			tb.Fatal(err)
		}
	})
}

// BenchmarkSotWClusters sends responses of n Clusters, each watched,
// through the engine's whole response path (stream, decode, validation,
// cache, ACK, watcher callbacks) over an in-memory transport.
//
//   - all/N: every cluster changes in each response (scenario a, and the
//     scale series at 1k, 10k and 100k);
//   - one/N: the response re-sends N clusters and changes one (scenario c);
//   - all/1k/limits: all/1k with Clusters that also have a connect
//     timeout, a circuit breaker and outlier detection.
//
// x-raw is the time per response over proto.Unmarshal of the same bytes
// (response and every resource), x-envelope over unmarshalling the
// response envelope alone, both measured in the same run; ns/resource is
// the time per cluster in the response, cpu-ns/resource the CPU time
// (the scale series' target compares it at 100k and 1k). The -cpu ratios
// put the process's CPU time per response (every goroutine: the
// engine's, the harness's, the garbage collector's) over the same
// single-threaded baselines.
func BenchmarkSotWClusters(b *testing.B) {
	for _, tc := range []struct {
		name       string
		n, changed int
		shape      clusterShape
	}{
		{"all/1k", 1000, 1000, clusterShape{}},
		{"all/1k/limits", 1000, 1000, clusterShape{limits: true}},
		{"all/1k/xdstp", 1000, 1000, clusterShape{xdstp: true}},
		{"one/1k", 1000, 1, clusterShape{}},
		{"one/1k/xdstp", 1000, 1, clusterShape{xdstp: true}},
		{"all/10k", 10000, 10000, clusterShape{}},
		{"all/100k", 100000, 100000, clusterShape{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e, tr := memEngine(b, registry.MustNew(cds.Type))
			defer e.Close()
			c := &counter{tb: b}
			w := c.watcher()
			for i := 0; i < tc.n; i++ {
				defer e.Watch(cds.TypeURL, benchClusterName(i, tc.shape.xdstp), w)()
			}
			st := <-tr.streams
			st.awaitSubscription(b, tc.n)
			versions := [2][]byte{shapedClusterResponse(b, tc.n, tc.changed, 0, tc.shape), shapedClusterResponse(b, tc.n, tc.changed, 1, tc.shape)}
			respond := func(i int, expect int) {
				c.wg.Add(expect)
				st.replies <- versions[i%2]
				if st.ack(b) {
					b.Fatal("NACK")
				}
				c.wg.Wait()
			}
			respond(0, tc.n) // the first delivery of every cluster
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

// startAndServe starts an engine, watches the clusters called names,
// serves resp once they are subscribed and waits for every delivery. It
// returns the number of requests the burst of watches took, and adds the
// time of each phase to ph if it is not nil.
func startAndServe(tb testing.TB, names []string, resp []byte, ph *coldPhases) (*engine.Engine, *memStream, int) {
	n := len(names)
	cpu0, cpuOK0 := processCPU()
	t0 := time.Now()
	e, tr := memEngine(tb, registry.MustNew(cds.Type))
	c := &counter{tb: tb}
	c.wg.Add(n)
	w := c.watcher()
	for _, name := range names {
		e.Watch(cds.TypeURL, name, w)
	}
	t1 := time.Now()
	cpu1, cpuOK1 := processCPU()
	st := <-tr.streams
	requests := st.awaitSubscription(tb, n)
	t2 := time.Now()
	cpu2, cpuOK2 := processCPU()
	st.replies <- resp
	c.wg.Wait()
	t3 := time.Now()
	cpu3, cpuOK3 := processCPU()
	if ph != nil {
		ph.watch += t1.Sub(t0)
		ph.request += t2.Sub(t1)
		ph.deliver += t3.Sub(t2)
		ph.watchCPU += cpu1 - cpu0
		ph.requestCPU += cpu2 - cpu1
		ph.deliverCPU += cpu3 - cpu2
		ph.noCPU = ph.noCPU || !cpuOK0 || !cpuOK1 || !cpuOK2 || !cpuOK3
	}
	return e, st, requests
}

// coldPhases is where a cold start's time goes: the engine's creation
// and the Watch calls; from the last call's return until the server has
// a request with every name; from the response until the last delivery.
// watchCPU, requestCPU and deliverCPU are the process's CPU time during
// each: the first is the Watch calls and what runs meanwhile (the send
// loop building requests, the collector), the second what the send loop
// still had to build, the last the response's handling, which
// BenchmarkSotWClusters/all/1k measures alone. noCPU says the process's
// CPU time could not be read.
type coldPhases struct {
	watch, request, deliver          time.Duration
	watchCPU, requestCPU, deliverCPU time.Duration
	noCPU                            bool
}

// BenchmarkSotWColdStart starts an engine, watches 1,000 clusters, serves
// them once they are subscribed, and waits for every delivery: the cost of
// starting up, with requests/op the requests the burst of watches took,
// and the time of its phases (coldPhases) per op. cpu-ns/op is the
// process's CPU time per cold start, to compare with that of
// BenchmarkSotWClusters/all/1k (its cpu-ns/resource times 1,000), which
// is the target's (a); watch-cpu-ns/op, request-cpu-ns/op and
// deliver-cpu-ns/op are its parts in each phase (coldPhases).
func BenchmarkSotWColdStart(b *testing.B) { benchColdStart(b, false) }

// BenchmarkSotWColdStartXDSTP is BenchmarkSotWColdStart with names of the
// new style (benchClusterName), to compare with
// BenchmarkSotWClusters/all/1k/xdstp.
func BenchmarkSotWColdStartXDSTP(b *testing.B) { benchColdStart(b, true) }

func benchColdStart(b *testing.B, xdstp bool) {
	const n = 1000
	resp := shapedClusterResponse(b, n, 0, 0, clusterShape{xdstp: xdstp})
	raw := rawBaseline(b, resp)
	// The names are the application's, made before it watches them: their
	// making is not the engine's start-up.
	names := benchClusterNames(n, xdstp)
	requests := 0
	var ph coldPhases
	var cpu time.Duration // the CPU of the timed parts: Close is not
	cpuOK := true
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu0, ok0 := processCPU()
		e, _, r := startAndServe(b, names, resp, &ph)
		cpu1, ok1 := processCPU()
		cpu += cpu1 - cpu0
		cpuOK = cpuOK && ok0 && ok1
		requests += r
		b.StopTimer()
		e.Close()
		b.StartTimer()
	}
	b.StopTimer()
	reportColdStarts(b, raw, requests, cpu, cpuOK)
	perOp := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(perOp(ph.watch), "watch-ns/op")
	b.ReportMetric(perOp(ph.request), "request-ns/op")
	b.ReportMetric(perOp(ph.deliver), "deliver-ns/op")
	if !ph.noCPU {
		b.ReportMetric(perOp(ph.watchCPU), "watch-cpu-ns/op")
		b.ReportMetric(perOp(ph.requestCPU), "request-cpu-ns/op")
		b.ReportMetric(perOp(ph.deliverCPU), "deliver-cpu-ns/op")
	}
}

// BenchmarkSotWColdStartFloor times, for the cold start's 1,000 names,
// only what caching them by name takes (engine.ColdStartFloor): an entry
// of the cache's type and its slot in a map grown from empty per name,
// and one encoded request naming them all. No lock, watcher, stream,
// subscription or timer. Its cpu-ns/op over all/1k's cpu-ns/resource
// times 1,000 is the least any cold start built on such a cache can add
// to scenario (a): the cold start's target (1.3 × (a)) leaves 0.3 ×.
func BenchmarkSotWColdStartFloor(b *testing.B) {
	names := benchClusterNames(1000, false)
	b.ReportAllocs()
	cpu0, ok0 := processCPU()
	for i := 0; i < b.N; i++ {
		if engine.ColdStartFloor(cds.TypeURL, names) == 0 {
			b.Fatal("empty request")
		}
	}
	cpu1, ok1 := processCPU()
	if ok0 && ok1 {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// reportResponses reports the ratios of a benchmark of b.N responses of
// n resources each, whose process CPU time was cpu (cpuOK: it could be
// read), against the baselines raw and envelope (nil: none), measured
// once more first.
func reportResponses(b *testing.B, n int, raw, envelope *baseline, cpu time.Duration, cpuOK bool) {
	rawNs := raw.least()
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perOp/rawNs, "x-raw")
	b.ReportMetric(perOp/float64(n), "ns/resource")
	cpuPerOp := float64(cpu.Nanoseconds()) / float64(b.N)
	if cpuOK {
		b.ReportMetric(cpuPerOp/rawNs, "x-raw-cpu")
		b.ReportMetric(cpuPerOp/float64(n), "cpu-ns/resource")
	}
	if envelope != nil {
		envelopeNs := envelope.least()
		b.ReportMetric(perOp/envelopeNs, "x-envelope")
		if cpuOK {
			b.ReportMetric(cpuPerOp/envelopeNs, "x-envelope-cpu")
		}
	}
}

// reportColdStarts reports what b.N cold starts took: requests in all,
// and the process's CPU time cpu (cpuOK: it could be read), against raw
// (the response's unmarshalling), measured once more first.
func reportColdStarts(b *testing.B, raw *baseline, requests int, cpu time.Duration, cpuOK bool) {
	rawNs := raw.least()
	perOp := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
	b.ReportMetric(perOp(b.Elapsed())/rawNs, "x-raw")
	if cpuOK {
		b.ReportMetric(perOp(cpu)/rawNs, "x-raw-cpu")
		b.ReportMetric(perOp(cpu), "cpu-ns/op")
	}
}

// BenchmarkSotWHeapPerCluster caches 10,000, then 100,000, watched
// clusters and reports the live heap they add, per cluster: the engine's
// entry, the decoded cds.Cluster, the cached bytes, the watcher's
// registration, the stream's subscription and decode memo.
func BenchmarkSotWHeapPerCluster(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(strconv.Itoa(n/1000)+"k", func(b *testing.B) {
			resp := clusterResponse(b, n, 0, 0)
			var perCluster float64
			for i := 0; i < b.N; i++ {
				before := idleHeap()
				// Made after the heap's first reading: the cache keeps each
				// watch's name, so it counts as the cluster's.
				names := benchClusterNames(n, false)
				e, st, _ := startAndServe(b, names, resp, nil)
				st.request(b) // the ACK: the response has been applied
				perCluster = float64(idleHeap()-before) / float64(n)
				runtime.KeepAlive(e)
				e.Close()
			}
			b.ReportMetric(perCluster, "B/cluster")
		})
	}
}

// idleHeap returns the live heap without what the handling of a response
// still held: the least of a few readings a millisecond apart (the
// receiving goroutine lets go of a response's working memory once its ACK
// is written), each after two collections (the working memory of a
// response above 8,192 resources goes to a sync.Pool, whose contents
// outlive one).
func idleHeap() uint64 {
	least := uint64(math.MaxUint64)
	for range 5 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		least = min(least, m.HeapAlloc)
		time.Sleep(time.Millisecond)
	}
	return least
}

// BenchmarkSotWWatchDuringPush measures how long a Watch call takes while
// responses of 10,000 changed clusters keep arriving: p50-ns and p99-ns
// are over every Watch (and its cancel) made during the pushes. A Watch
// waits for the engine's lock, which a response holds only while it is
// applied (decoding happens outside it).
func BenchmarkSotWWatchDuringPush(b *testing.B) { benchWatchDuringPush(b, false) }

// BenchmarkDeltaWatchDuringPush is BenchmarkSotWWatchDuringPush over
// incremental xDS: each push sends the 10,000 clusters, changed.
func BenchmarkDeltaWatchDuringPush(b *testing.B) { benchWatchDuringPush(b, true) }

func benchWatchDuringPush(b *testing.B, delta bool) {
	const n = 10000
	var fs []string
	if delta {
		fs = []string{features.NameDeltaXDS}
	}
	e, tr := memEngine(b, registry.MustNew(cds.Type), fs...)
	defer e.Close()
	c := &counter{tb: b}
	w := c.watcher()
	for i := 0; i < n; i++ {
		defer e.Watch(cds.TypeURL, "cluster-"+strconv.Itoa(i), w)()
	}
	st := <-tr.streams
	var versions [2][]byte
	if delta {
		for names := 0; names < n; {
			names += len(st.deltaRequest(b).GetResourceNamesSubscribe())
		}
		versions = [2][]byte{deltaClusterResponse(b, n, n, n, 0), deltaClusterResponse(b, n, n, n, 1)}
	} else {
		st.awaitSubscription(b, n)
		versions = [2][]byte{clusterResponse(b, n, n, 0), clusterResponse(b, n, n, 1)}
	}
	c.wg.Add(n)
	st.replies <- versions[0]
	c.wg.Wait()

	// The server side: push one version after the other, each once the
	// last is delivered, as a control plane whose configuration keeps
	// changing does, whatever the requests say (they are read and
	// dropped, so that the pushes do not depend on when the client's
	// writer sends them). busy is how long pushes were under way, from
	// the reply to its last delivery.
	stop := make(chan struct{})
	pushed, drained := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case <-stop:
				return
			case <-st.requests:
			}
		}
	}()
	var busy time.Duration
	go func() {
		defer close(pushed)
		for i := 1; ; i++ {
			c.wg.Add(n)
			select {
			case st.replies <- versions[i%2]:
			case <-stop:
				c.wg.Add(-n)
				return
			}
			start := time.Now()
			c.wg.Wait()
			busy += time.Since(start)
		}
	}()
	noop := engine.WatcherFuncs{}
	var durations []time.Duration
	b.ResetTimer()
	benchStart := time.Now()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		cancel := e.Watch(cds.TypeURL, "extra-"+strconv.Itoa(i%100), noop)
		cancel()
		durations = append(durations, time.Since(start))
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	close(stop)
	<-pushed
	<-drained
	elapsed := time.Since(benchStart)
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds()), "p50-ns")
	// Of fewer than 100 calls, the 99th percentile is the slowest call:
	// scripts/bench-table.sh runs this benchmark with -benchtime 3000x.
	b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds()), "p99-ns")
	// The share of the time pushes were under way: the calls above were
	// made during pushes, not between them.
	b.ReportMetric(float64(busy)/float64(elapsed), "push-busy")
}

// BenchmarkSotWWatchToRequest measures how long a Watch of a new name on
// an open, idle stream takes to reach the server as a request: the
// latency a single watch pays for the batching of bursts.
func BenchmarkSotWWatchToRequest(b *testing.B) {
	e, tr := memEngine(b, registry.MustNew(cds.Type))
	defer e.Close()
	noop := engine.WatcherFuncs{}
	defer e.Watch(cds.TypeURL, "first", noop)()
	st := <-tr.streams
	st.awaitSubscription(b, 1)
	var durations []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		cancel := e.Watch(cds.TypeURL, "extra", noop)
		st.awaitSubscription(b, 2)
		durations = append(durations, time.Since(start))
		b.StopTimer()
		cancel()
		st.awaitSubscription(b, 1)
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkSotWEDS sends one ClusterLoadAssignment of 10,000 endpoints
// through the engine's whole response path over the in-memory transport
// (scenario b; BenchmarkEngineEDSResponse is the same over gRPC on
// loopback). "changed" alternates two versions; "unchanged" re-sends the
// same bytes. x-raw is over proto.Unmarshal of the response and the
// resource, measured in the same run.
func BenchmarkSotWEDS(b *testing.B) {
	for _, changed := range []bool{true, false} {
		name := "unchanged"
		if changed {
			name = "changed"
		}
		b.Run(name, func(b *testing.B) {
			e, tr := memEngine(b, registry.MustNew(eds.Type))
			defer e.Close()
			updates := make(chan struct{}, 1)
			defer e.Watch(eds.TypeURL, "big", engine.WatcherFuncs{ResourceChanged: func(_ registry.Resource, err error, done func()) {
				if err != nil {
					b.Error(err)
				}
				done()
				updates <- struct{}{}
			}})()
			st := <-tr.streams
			st.awaitSubscription(b, 1)
			// Two responses: two versions of the resource when changed,
			// the same bytes under two versions and nonces when not.
			var versions [2][]byte
			for i := range versions {
				salt := 0
				if changed {
					salt = i
				}
				v, err := proto.Marshal(&discoverypb.DiscoveryResponse{
					VersionInfo: strconv.Itoa(i), TypeUrl: eds.TypeURL, Nonce: strconv.Itoa(i),
					Resources: []*anypb.Any{bigAssignment(salt)},
				})
				if err != nil {
					b.Fatal(err)
				}
				versions[i] = v
			}
			st.replies <- versions[0]
			st.ack(b)
			<-updates
			raw := newBaseline(5, func() { rawAssignmentUnmarshal(b, versions[0]) })
			b.SetBytes(int64(len(versions[0])))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				st.replies <- versions[i%2]
				if st.ack(b) {
					b.Fatal("NACK")
				}
				if changed {
					<-updates
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/raw.least(), "x-raw")
		})
	}
}
