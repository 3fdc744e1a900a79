//go:build unix

package relay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/xds"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/helperproc"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
)

// BenchmarkScale measures the relay at scale: one upstream
// (go-control-plane's server over LinearCaches, 10,000 clusters), one
// relay, N clients, and the same clients connected directly to a fresh
// upstream in the same run. The clients run in a child process (this test
// binary again, see swarmEnv), so that this process's CPU and heap are
// the upstream's and the relay's alone. Each case makes scaleChanges
// changes of one cluster and reports, for the relay and directly:
// upstream streams and bytes per change, the time from the change to the
// last client updated (p50 and p99 over the changes, and over every client
// and change), this process's CPU per change, and its heap and goroutine
// stacks per client stream beyond the first client's (the shared cache).
//
//	go test -run '^$' -bench BenchmarkScale -benchtime 1x -timeout 30m ./relay/
func BenchmarkScale(b *testing.B) {
	for _, tc := range []scaleCase{
		{name: "delta/light=1000", delta: true, light: 1000, changes: 10},
		// A tenth of the clusters: the fan-out's cost is clients × clusters.
		{name: "delta/light=1000/clusters=1000", delta: true, light: 1000, clusters: 1000, changes: 10},
		{name: "delta/light=300", delta: true, light: 300, changes: 10},
		{name: "delta/light=150", delta: true, light: 150, changes: 20},
		{name: "delta/light=100", delta: true, light: 100, changes: 20},
		{name: "sotw/light=50", light: 50, changes: 10},
		{name: "sotw/light=100", light: 100, changes: 10},
		{name: "sotw/light=200", light: 200, changes: 10},
		{name: "delta/engines=20+grpcgo=5", delta: true, engines: 20, grpcgo: 5, changes: 10},
		{name: "sotw/engines=20+grpcgo=5", engines: 20, grpcgo: 5, changes: 10},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				for _, viaRelay := range []bool{false, true} {
					m, err := runScale(tc, viaRelay)
					if err != nil {
						b.Fatal(err)
					}
					m.report(b, viaRelay)
				}
			}
		})
	}
}

type scaleCase struct {
	name                   string
	delta                  bool // the clients' protocol, and the relay's upstream one
	light, engines, grpcgo int
	clusters               int // 10,000 if 0
	changes                int
}

// scaleFigures are one run's measurements.
type scaleFigures struct {
	clients              int
	upstreamStreams      int64
	upstreamConns        int64
	upstreamBytesChange  float64 // per change
	lastP50, lastP99     time.Duration
	clientP50, clientP99 time.Duration // over every client and change
	kindLast             map[string]time.Duration
	cpuPerChange         time.Duration
	bytesPerStream       float64 // heap and stacks
	// bytesPerStreamAfter is the same after the changes (light and
	// engine clients only): what a stream keeps once it was sent some.
	bytesPerStreamAfter float64
}

func (m scaleFigures) report(b *testing.B, viaRelay bool) {
	p := "direct-"
	if viaRelay {
		p = "relay-"
	}
	b.ReportMetric(float64(m.upstreamStreams), p+"upstream-streams")
	b.ReportMetric(m.upstreamBytesChange/1e3, p+"upstream-KB/change")
	b.ReportMetric(float64(m.lastP50.Microseconds())/1e3, p+"last-p50-ms")
	b.ReportMetric(float64(m.lastP99.Microseconds())/1e3, p+"last-p99-ms")
	b.ReportMetric(float64(m.cpuPerChange.Microseconds())/1e3, p+"cpu-ms/change")
	b.ReportMetric(m.bytesPerStream/1e3, p+"KB/stream")
	if m.bytesPerStreamAfter > 0 {
		b.ReportMetric(m.bytesPerStreamAfter/1e3, p+"KB/stream-after-changes")
	}
	kinds := ""
	for _, k := range slices.Sorted(mapsKeys(m.kindLast)) {
		kinds += fmt.Sprintf(" last-%s-p99=%v", k, m.kindLast[k].Round(time.Millisecond))
	}
	b.Logf("%s%d clients: upstream %d conns %d streams %.1f KB/change; last client p50 %v p99 %v; any client p50 %v p99 %v;%s cpu %v/change; %.1f KB/stream (%.1f after the changes)",
		p, m.clients, m.upstreamConns, m.upstreamStreams, m.upstreamBytesChange/1e3, m.lastP50.Round(time.Millisecond), m.lastP99.Round(time.Millisecond),
		m.clientP50.Round(time.Millisecond), m.clientP99.Round(time.Millisecond), kinds, m.cpuPerChange.Round(100*time.Microsecond), m.bytesPerStream/1e3,
		m.bytesPerStreamAfter/1e3)
}

func mapsKeys(m map[string]time.Duration) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// runScale runs one case, its clients connected to the relay or directly
// to the upstream.
func runScale(tc scaleCase, viaRelay bool) (scaleFigures, error) {
	clusters := tc.clusters
	if clusters == 0 {
		clusters = 10000
	}
	want := strconv.Itoa(clusters)
	sw, backends, err := startSwarm()
	if err != nil {
		return scaleFigures{}, err
	}
	defer sw.Close()
	up, err := startScaleUpstream(clusters, backends[0], backends[1])
	if err != nil {
		return scaleFigures{}, err
	}
	defer up.close()
	addr := up.addr
	if viaRelay {
		r, err := relaytest.Start(relaytest.Config(up.bootstrap("relay", tc.delta)), relaytest.Options{
			ServerOptions: []grpc.ServerOption{grpc.WaitForHandlers(true)}})
		if err != nil {
			return scaleFigures{}, err
		}
		defer r.Close()
		// The clients go first, so that the relay's streams end before
		// it is closed.
		defer sw.Close()
		addr = r.Addr()
	}
	d := "0"
	if tc.delta {
		d = "1"
	}
	// The first client builds what is shared (the relay's engine and
	// caches); what each further stream costs is measured from there.
	first := "light"
	if tc.light == 0 {
		first = "engines"
	}
	if _, err := sw.Do(first, "1", addr, d, want); err != nil {
		return scaleFigures{}, err
	}
	base := heapAndStacks()
	streams := 1
	for kind, n := range map[string]int{"light": tc.light, "engines": tc.engines} {
		if kind == first {
			n--
		}
		for n > 0 {
			batch := min(n, 100)
			if _, err := sw.Do(kind, strconv.Itoa(batch), addr, d, want); err != nil {
				return scaleFigures{}, err
			}
			n -= batch
			streams += batch
		}
	}
	m := scaleFigures{clients: tc.light + tc.engines + tc.grpcgo, kindLast: map[string]time.Duration{}}
	if streams > 1 {
		m.bytesPerStream = float64(heapAndStacks()-base) / float64(streams-1)
		if err := writeHeapProfile(viaRelay); err != nil {
			return scaleFigures{}, err
		}
	}
	if tc.grpcgo > 0 {
		if _, err := sw.Do("grpcgo", strconv.Itoa(tc.grpcgo), addr); err != nil {
			return scaleFigures{}, err
		}
	}
	bytes0, cpu0 := up.written.Load(), processCPU()
	var last, every []time.Duration
	for k := 1; k <= tc.changes; k++ {
		since := time.Now().UnixNano()
		if err := up.change(k); err != nil {
			return scaleFigures{}, err
		}
		reply, err := sw.Do("wait", strconv.FormatInt(since, 10))
		if err != nil {
			return scaleFigures{}, fmt.Errorf("change %d: %w", k, err)
		}
		// reply: kind=t,t,t... for each kind, Unix nanoseconds sorted.
		var all []int64
		for _, field := range reply {
			kind, ts, _ := strings.Cut(field, "=")
			for _, s := range strings.Split(ts, ",") {
				t, _ := strconv.ParseInt(s, 10, 64)
				all = append(all, t)
				if lat := time.Duration(t - since); lat > m.kindLast[kind] {
					m.kindLast[kind] = lat
				}
			}
		}
		slices.Sort(all)
		last = append(last, time.Duration(all[len(all)-1]-since))
		for _, t := range all {
			every = append(every, time.Duration(t-since))
		}
		// Let the ACKs settle before the next change.
		time.Sleep(50 * time.Millisecond)
	}
	m.cpuPerChange = (processCPU() - cpu0) / time.Duration(tc.changes)
	if streams > 1 && tc.grpcgo == 0 {
		m.bytesPerStreamAfter = float64(heapAndStacks()-base) / float64(streams-1)
	}
	m.upstreamBytesChange = float64(up.written.Load()-bytes0) / float64(tc.changes)
	m.upstreamStreams, m.upstreamConns = up.opened.Load(), up.conns.Load()
	m.lastP50, m.lastP99 = quantile(last, 0.5), quantile(last, 0.99)
	m.clientP50, m.clientP99 = quantile(every, 0.5), quantile(every, 0.99)
	return m, nil
}

// quantile is the nearest-rank quantile q of ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// heapAndStacks is the live heap and goroutine stacks after a collection.
func heapAndStacks() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc + ms.StackInuse)
}

// heapProfileEnv names a file for a heap profile of the relay with all
// its clients, to see what a stream costs:
//
//	XDSENGINE_RELAY_SCALE_HEAPPROFILE=/tmp/heap.out go test -run '^$' -bench 'BenchmarkScale/delta/light=100$' -benchtime 1x ./relay/
//	go tool pprof -sample_index inuse_space -top /tmp/heap.out
const heapProfileEnv = "XDSENGINE_RELAY_SCALE_HEAPPROFILE"

func writeHeapProfile(viaRelay bool) error {
	path := os.Getenv(heapProfileEnv)
	if path == "" || !viaRelay {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.WriteHeapProfile(f)
}

// processCPU is the CPU time, user and system, the process used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// swarmEnv makes the test binary a swarm of clients (runSwarm) instead of
// running tests: BenchmarkScale starts it so.
const swarmEnv = "XDSENGINE_RELAY_SCALE_SWARM"

func init() {
	if os.Getenv(swarmEnv) == "1" {
		if err := runSwarm(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "swarm:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// startSwarm starts the child process of clients and returns it with
// the addresses of its two backends.
func startSwarm() (*helperproc.Process, [2]string, error) {
	p, backends, err := helperproc.Start(swarmEnv + "=1")
	if err != nil {
		return nil, [2]string{}, err
	}
	if len(backends) != 2 {
		p.Close()
		return nil, [2]string{}, fmt.Errorf("the swarm's backends: %q", backends)
	}
	return p, [2]string(backends), nil
}

// runSwarm is the child: it serves two backends (health service names
// "one" and "two", edsA's and edsB's endpoints), prints their addresses,
// then runs commands, one a line, replying "ok ..." or an error:
//
//	light N ADDR DELTA C    N light clients of every cluster (C), once ready
//	engines N ADDR DELTA C  N engines watching every cluster (C), once ready
//	grpcgo N ADDR         N grpc-go channels of xds:///service, once an RPC works
//	wait SINCE            once every client saw a change made at SINCE
//	                      (Unix ns): KIND=T,T,... when each saw it
func runSwarm(in io.Reader, out io.Writer) error {
	var closers []func()
	defer func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}()
	var addrs []string
	for _, name := range []string{"one", "two"} {
		addr, stop, err := serveBackend(name)
		if err != nil {
			return err
		}
		closers = append(closers, stop)
		addrs = append(addrs, addr)
	}
	logs := map[string][]*updateLog{}
	next := 0
	return helperproc.Serve(in, out, addrs, func(f []string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		switch f[0] {
		case "light", "engines", "grpcgo":
			n, _ := strconv.Atoi(f[1])
			var started []*updateLog
			for range n {
				next++
				l, stop, err := startSwarmClient(f, next)
				if err != nil {
					return "", err
				}
				closers = append(closers, stop)
				started = append(started, l)
			}
			logs[f[0]] = append(logs[f[0]], started...)
			return "", waitReady(ctx, started)
		case "wait":
			since, _ := strconv.ParseInt(f[1], 10, 64)
			var fields []string
			for _, kind := range slices.Sorted(func(yield func(string) bool) {
				for k := range logs {
					if !yield(k) {
						return
					}
				}
			}) {
				at, err := waitUpdated(ctx, logs[kind], since)
				if err != nil {
					return "", fmt.Errorf("%s: %w", kind, err)
				}
				ts := make([]string, len(at))
				for i, t := range at {
					ts[i] = strconv.FormatInt(t, 10)
				}
				fields = append(fields, kind+"="+strings.Join(ts, ","))
			}
			return strings.Join(fields, " "), nil
		}
		return "", fmt.Errorf("unknown command %q", f[0])
	})
}

func startSwarmClient(f []string, i int) (*updateLog, func(), error) {
	if len(f) < 3 || (f[0] != "grpcgo" && len(f) < 5) {
		return nil, nil, errors.New("want: KIND N ADDR [DELTA CLUSTERS]")
	}
	delta := len(f) > 3 && f[3] == "1"
	clusters := 0
	if len(f) > 4 {
		clusters, _ = strconv.Atoi(f[4])
	}
	id := fmt.Sprintf("%s-%d", f[0], i)
	switch f[0] {
	case "light":
		c, err := startLightClient(f[2], id, delta, clusters)
		if err != nil {
			return nil, nil, err
		}
		return c.log, c.close, nil
	case "engines":
		return startEngineClient(scaleBootstrap(f[2], id, delta), clusters)
	default:
		return startGRPCClient(scaleBootstrap(f[2], id, false))
	}
}

// engineClient is a WildcardWatcher of the clusters: ready once it holds
// every cluster, then logging each change of changedCluster.
type engineClient struct {
	log   *updateLog
	want  int
	mu    sync.Mutex
	count int
}

func (c *engineClient) OnResourceChanged(name string, r registry.Resource, err error, done func()) {
	defer done()
	if err != nil || name == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count < c.want {
		if c.count++; c.count == c.want {
			close(c.log.ready)
		}
		return
	}
	if name == changedCluster {
		c.log.record()
	}
}

func (c *engineClient) OnAmbientError(_ string, _ error, done func()) { done() }

func startEngineClient(bs []byte, want int) (*updateLog, func(), error) {
	parsed, err := bootstrap.Parse(bs)
	if err != nil {
		return nil, nil, err
	}
	sw := features.Switches{}
	e, err := engine.New(engine.Config{Bootstrap: parsed, Registry: builtin.Registry(), Transport: transport.GRPC(relaytest.FastDial), Switches: &sw})
	if err != nil {
		return nil, nil, err
	}
	c := &engineClient{log: newUpdateLog(), want: want}
	cancel := e.WatchAll(cds.TypeURL, c)
	return c.log, func() { cancel(); e.Close() }, nil
}

// startGRPCClient is a grpc-go channel of xds:///service, polling every
// 5 ms which backend its RPCs reach: ready at its first RPC, then logging
// each switch of backend (each change of changedCluster's endpoints).
func startGRPCClient(bs []byte) (*updateLog, func(), error) {
	resolver, err := xds.NewXDSResolverWithConfigForTesting(bs)
	if err != nil {
		return nil, nil, err
	}
	cc, err := grpc.NewClient("xds:///service", grpc.WithResolvers(resolver), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	l := newUpdateLog()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		hc := healthpb.NewHealthClient(cc)
		lastOne, ready := false, false
		for ctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			_, err := hc.Check(rctx, &healthpb.HealthCheckRequest{Service: "one"})
			rcancel()
			// Backend two knows no service "one": NOT_FOUND.
			one, reached := err == nil, err == nil || status.Code(err) == codes.NotFound
			switch {
			case !reached:
			case !ready:
				ready, lastOne = true, one
				close(l.ready)
			case one != lastOne:
				lastOne = one
				l.record()
			}
			select {
			case <-time.After(5 * time.Millisecond):
			case <-ctx.Done():
			}
		}
	}()
	return l, func() { cancel(); <-done; cc.Close() }, nil
}
