package relay_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	server "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// The scale harness: an upstream of many clusters whose load can be read
// (streams opened, bytes written), and light ADS clients that decode only
// what an ACK needs, so that thousands of them measure the server they
// are connected to, not their own decoding. The test below and
// BenchmarkScale (bench_scale_test.go) share it.

// changedCluster is the one cluster every change of the scale harness
// changes: its EDS service name alternates between edsA and edsB, which a
// gRPC client notices by reaching the other backend.
const (
	changedCluster = "cluster-00000"
	edsA, edsB     = "eds-a", "eds-b"
)

func clusterName(i int) string { return fmt.Sprintf("cluster-%05d", i) }

// edsOfChange is the EDS service name of changedCluster after change k
// (change 0 is the initial state).
func edsOfChange(k int) string {
	if k%2 == 0 {
		return edsA
	}
	return edsB
}

// scaleUpstream is go-control-plane's server over a LinearCache per type
// (what a control plane serving many clients would run: each version of a
// resource marshalled once), on loopback. It serves a listener "service"
// whose route sends everything to changedCluster, clusters clusters, and
// the endpoints edsA and edsB.
type scaleUpstream struct {
	addr     string
	clusters *cache.LinearCache
	opened   atomic.Int64 // streams, SotW and incremental
	conns    atomic.Int64 // connections accepted
	written  atomic.Int64 // bytes written to all connections
	grpc     *grpc.Server
	cancel   context.CancelFunc
	served   chan struct{}
}

// startScaleUpstream starts the upstream; endpointsA and endpointsB are
// the addresses of edsA and edsB.
func startScaleUpstream(clusters int, endpointA, endpointB string) (*scaleUpstream, error) {
	cl := make(map[string]types.Resource, clusters)
	for i := range clusters {
		cl[clusterName(i)] = xdstest.Cluster(clusterName(i), clusterName(i))
	}
	cl[changedCluster] = xdstest.Cluster(changedCluster, edsOfChange(0))
	caches := map[string]cache.Cache{
		lds.TypeURL: cache.NewLinearCache(lds.TypeURL, cache.WithInitialResources(map[string]types.Resource{
			"service": xdstest.Listener("service", "route")})),
		rds.TypeURL: cache.NewLinearCache(rds.TypeURL, cache.WithInitialResources(map[string]types.Resource{
			"route": xdstest.RouteConfig("route", changedCluster)})),
		cds.TypeURL: cache.NewLinearCache(cds.TypeURL, cache.WithInitialResources(cl)),
		eds.TypeURL: cache.NewLinearCache(eds.TypeURL, cache.WithInitialResources(map[string]types.Resource{
			edsA: xdstest.ClusterLoadAssignment(edsA, xdstest.Locality{Zone: "a", Endpoints: []string{endpointA}}),
			edsB: xdstest.ClusterLoadAssignment(edsB, xdstest.Locality{Zone: "a", Endpoints: []string{endpointB}}),
		})),
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &scaleUpstream{addr: lis.Addr().String(), clusters: caches[cds.TypeURL].(*cache.LinearCache), served: make(chan struct{})}
	mux := &cache.MuxCache{
		Classify:      func(r *cache.Request) string { return r.GetTypeUrl() },
		ClassifyDelta: func(r *cache.DeltaRequest) string { return r.GetTypeUrl() },
		Caches:        caches,
	}
	opened := func(context.Context, int64, string) error { u.opened.Add(1); return nil }
	ctx, cancel := context.WithCancel(context.Background())
	u.cancel = cancel
	xds := server.NewServer(ctx, mux, server.CallbackFuncs{StreamOpenFunc: opened, DeltaStreamOpenFunc: opened})
	u.grpc = grpc.NewServer(grpc.WaitForHandlers(true))
	discoverypb.RegisterAggregatedDiscoveryServiceServer(u.grpc, xds)
	go func() { defer close(u.served); _ = u.grpc.Serve(&countingListener{Listener: lis, u: u}) }()
	return u, nil
}

// change makes change k: changedCluster gets edsOfChange(k).
func (u *scaleUpstream) change(k int) error {
	return u.clusters.UpdateResource(changedCluster, xdstest.Cluster(changedCluster, edsOfChange(k)))
}

func (u *scaleUpstream) close() {
	u.grpc.Stop()
	<-u.served
	u.cancel()
}

// bootstrap is a gRPC bootstrap of a client of the upstream.
func (u *scaleUpstream) bootstrap(nodeID string, delta bool) []byte {
	return scaleBootstrap(u.addr, nodeID, delta)
}

func scaleBootstrap(addr, nodeID string, delta bool) []byte {
	sf := ""
	if delta {
		sf = fmt.Sprintf(`, "server_features": [%q]`, features.NameDeltaXDS)
	}
	return fmt.Appendf(nil, `{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]%s}], "node": {"id": %q, "cluster": "blue"}}`,
		addr, sf, nodeID)
}

type countingListener struct {
	net.Listener
	u *scaleUpstream
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.u.conns.Add(1)
	return &countingConn{Conn: c, written: &l.u.written}, nil
}

type countingConn struct {
	net.Conn
	written *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.written.Add(int64(n))
	return n, err
}

// updateLog keeps when a client saw each change, in nanoseconds of the
// Unix clock (the benchmark's clients are in another process).
type updateLog struct {
	mu    sync.Mutex
	ready chan struct{}
	at    []int64
}

func newUpdateLog() *updateLog { return &updateLog{ready: make(chan struct{})} }

func (l *updateLog) record() {
	now := time.Now().UnixNano()
	l.mu.Lock()
	l.at = append(l.at, now)
	l.mu.Unlock()
}

// updatedSince returns when the client first saw a change at or after
// since (Unix nanoseconds), if it did.
func (l *updateLog) updatedSince(since int64) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, at := range l.at {
		if at >= since {
			return at, true
		}
	}
	return 0, false
}

// lightClient is an ADS client of the clusters as a wildcard, which reads
// of each response only the fields its ACK needs and the names of what an
// incremental response changed: the cost of a client to the server it is
// connected to, without a full client's decoding.
type lightClient struct {
	log    *updateLog
	cancel context.CancelFunc
	done   chan struct{}
	err    error // why the stream ended; read after done
}

// lightFrame is what lightClient reads of a response.
type lightFrame struct {
	version, nonce, typeURL string
	resources               int
	changed                 bool // an incremental response that has changedCluster
}

// lightCodec marshals requests as usual and reads responses as
// lightFrames; the server sees the ordinary proto codec.
type lightCodec struct{ delta bool }

func (lightCodec) Name() string                  { return "proto" }
func (lightCodec) Marshal(v any) ([]byte, error) { return proto.Marshal(v.(proto.Message)) }

func (c lightCodec) Unmarshal(b []byte, v any) error {
	f := v.(*lightFrame)
	*f = lightFrame{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		val, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		// The field numbers are those of DiscoveryResponse and
		// DeltaDiscoveryResponse, which agree on 1, 2, 4 and 5.
		switch num {
		case 1:
			f.version = string(val)
		case 2:
			f.resources++
			if c.delta && !f.changed && resourceName(val) == changedCluster {
				f.changed = true
			}
		case 4:
			f.typeURL = string(val)
		case 5:
			f.nonce = string(val)
		}
	}
	return nil
}

// resourceName is the name (field 3) of an incremental Resource.
func resourceName(b []byte) string {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return ""
		}
		if num == 3 && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b)
			return string(v)
		}
		b = b[n:]
	}
	return ""
}

// startLightClient opens an ADS stream to addr subscribing to every
// cluster, SotW or incremental. Its log is ready once it was sent want
// clusters, and records every later response (SotW) or every later
// response that has changedCluster (incremental).
func startLightClient(addr, nodeID string, delta bool, want int) (*lightClient, error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	method := discoverypb.AggregatedDiscoveryService_StreamAggregatedResources_FullMethodName
	if delta {
		method = discoverypb.AggregatedDiscoveryService_DeltaAggregatedResources_FullMethodName
	}
	st, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(lightCodec{delta: delta}))
	if err == nil {
		nd := &corepb.Node{Id: nodeID, Cluster: "blue"}
		if delta {
			err = st.SendMsg(&discoverypb.DeltaDiscoveryRequest{Node: nd, TypeUrl: cds.TypeURL, ResourceNamesSubscribe: []string{"*"}})
		} else {
			err = st.SendMsg(&discoverypb.DiscoveryRequest{Node: nd, TypeUrl: cds.TypeURL, ResourceNames: []string{"*"}})
		}
	}
	if err != nil {
		cancel()
		cc.Close()
		return nil, err
	}
	c := &lightClient{log: newUpdateLog(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer cc.Close()
		c.err = c.run(st, delta, want)
	}()
	return c, nil
}

func (c *lightClient) run(st grpc.ClientStream, delta bool, want int) error {
	got, ready := 0, false
	for {
		var f lightFrame
		if err := st.RecvMsg(&f); err != nil {
			return err
		}
		// The change is seen when it is read; the ACK follows.
		switch {
		case !ready:
			// An incremental client may be sent its first clusters in
			// more than one response; a SotW response has them all.
			if delta {
				got += f.resources
			} else {
				got = f.resources
			}
			if got >= want {
				ready = true
				close(c.log.ready)
			}
		case !delta || f.changed:
			c.log.record()
		}
		var err error
		if delta {
			err = st.SendMsg(&discoverypb.DeltaDiscoveryRequest{TypeUrl: f.typeURL, ResponseNonce: f.nonce})
		} else {
			err = st.SendMsg(&discoverypb.DiscoveryRequest{TypeUrl: f.typeURL, ResourceNames: []string{"*"}, VersionInfo: f.version, ResponseNonce: f.nonce})
		}
		if err != nil {
			return err
		}
	}
}

// close ends the stream and waits for its goroutine.
func (c *lightClient) close() {
	c.cancel()
	<-c.done
}

// waitReady waits until every log is ready.
func waitReady(ctx context.Context, logs []*updateLog) error {
	for i, l := range logs {
		select {
		case <-l.ready:
		case <-ctx.Done():
			return fmt.Errorf("client %d of %d has not got its clusters: %w", i, len(logs), ctx.Err())
		}
	}
	return nil
}

// waitUpdated waits until every log saw a change made at since (Unix
// nanoseconds), and returns when each saw it, sorted.
func waitUpdated(ctx context.Context, logs []*updateLog, since int64) ([]int64, error) {
	at := make([]int64, 0, len(logs))
	for i, l := range logs {
		for {
			t, ok := l.updatedSince(since)
			if ok {
				at = append(at, t)
				break
			}
			select {
			case <-time.After(time.Millisecond):
			case <-ctx.Done():
				return nil, fmt.Errorf("client %d of %d has not seen the change: %w", i, len(logs), ctx.Err())
			}
		}
	}
	slices.Sort(at)
	return at, nil
}

// TestScale: fifty light clients (SotW and incremental), an xdsengine
// engine and grpc-go's xDS client behind one relay share one upstream
// stream, and every one of them gets a change of one cluster of a
// thousand; the upstream sends the relay as much per change with fifty
// clients as with one. The same light clients connected directly open
// fifty streams and cost the upstream fifty times the bytes.
func TestScale(t *testing.T) {
	const clusters, light = 1000, 50
	one, two := backend(t, "one"), backend(t, "two")
	up, err := startScaleUpstream(clusters, one, two)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(up.close)
	r := relaytest.NewServer(t, relaytest.Config(up.bootstrap("relay", true)), relaytest.Options{})
	ctx := ctxFor(t)

	startLight := func(addr string, from, n int) []*updateLog {
		var logs []*updateLog
		for i := from; i < from+n; i++ {
			c, err := startLightClient(addr, fmt.Sprintf("light-%d", i), i%2 == 0, clusters)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.close)
			logs = append(logs, c.log)
		}
		if err := waitReady(ctx, logs); err != nil {
			t.Fatal(err)
		}
		return logs
	}
	// change makes change k and returns the bytes the upstream wrote
	// until every light client saw it.
	change := func(k int, logs []*updateLog) int64 {
		t.Helper()
		before, since := up.written.Load(), time.Now().UnixNano()
		if err := up.change(k); err != nil {
			t.Fatal(err)
		}
		if _, err := waitUpdated(ctx, logs, since); err != nil {
			t.Fatal(err)
		}
		return up.written.Load() - before
	}

	logs := startLight(r.Addr(), 0, 1)
	withOne := change(1, logs)
	logs = append(logs, startLight(r.Addr(), 1, light-1)...)
	e := client(t, r, relaytest.BootstrapOptions{NodeID: "engine", Cluster: "blue", Delta: true})
	eng := watch(t, e, cds.TypeURL, changedCluster)
	eng.waitFor(t, "the engine's cluster", edsName(edsOfChange(1)))
	// The engine holds both endpoints upstream, so that grpc-go's
	// following the change adds nothing to what the change costs there.
	for _, name := range []string{edsA, edsB} {
		watch(t, e, eds.TypeURL, name).waitFor(t, name, func(r registry.Resource, _ error) bool { return r != nil })
	}
	cc := grpcGoClient(t, r)
	waitUntil(t, "grpc-go's RPCs to reach backend two (eds-b)", reaches(cc, "two"))

	withAll := change(2, logs)
	eng.waitFor(t, "the engine's changed cluster", edsName(edsOfChange(2)))
	waitUntil(t, "grpc-go's RPCs to follow the change to backend one (eds-a)", reaches(cc, "one"))
	if n := up.opened.Load(); n != 1 {
		t.Errorf("upstream streams opened = %d for %d light clients, an engine and grpc-go behind one relay, want 1", n, light)
	}
	if withAll > 2*withOne {
		t.Errorf("the upstream wrote %d bytes for a change with %d clients behind the relay, %d with one: want the same", withAll, light+2, withOne)
	}
	t.Logf("through the relay: 1 upstream stream, %d upstream bytes per change with 1 client, %d with %d", withOne, withAll, light+2)

	// The same light clients, directly.
	direct, err := startScaleUpstream(clusters, one, two)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.close)
	logs = startLight(direct.addr, 0, light)
	before, since := direct.written.Load(), time.Now().UnixNano()
	if err := direct.change(1); err != nil {
		t.Fatal(err)
	}
	if _, err := waitUpdated(ctx, logs, since); err != nil {
		t.Fatal(err)
	}
	directBytes := direct.written.Load() - before
	if n := direct.opened.Load(); n != light {
		t.Errorf("upstream streams opened = %d for %d light clients connected directly, want %d", n, light, light)
	}
	// Half the direct clients are incremental, sent what the relay is
	// sent; the other half are sent every cluster.
	if directBytes < int64(light/4)*withAll {
		t.Errorf("the upstream wrote %d bytes for a change to %d direct clients, %d for the relay: want over %d times more", directBytes, light, withAll, light/4)
	}
	t.Logf("directly: %d upstream streams, %d upstream bytes per change", direct.opened.Load(), directBytes)
}

// reaches is a condition: an RPC of cc reaches the backend called name.
func reaches(cc *grpc.ClientConn, name string) func() bool {
	hc := healthpb.NewHealthClient(cc)
	return func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
	}
}
