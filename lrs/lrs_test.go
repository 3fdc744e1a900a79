package lrs_test

import (
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/fakeclock"
	"github.com/xdsengine/xdsengine/lrs"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/xdstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// loadServer is a real LRS server on loopback: it records every request
// and answers each stream's first request with settings (with none if
// settings is nil); respond sends more. A stream ends when the client
// half-closes it.
type loadServer struct {
	lrspb.UnimplementedLoadReportingServiceServer
	settings *lrspb.LoadStatsResponse

	mu      sync.Mutex
	reqs    []*lrspb.LoadStatsRequest
	firsts  []*lrspb.LoadStatsRequest // the first request of each stream
	streams int
	open    int
	// latest is the newest stream: respond sends on it, from the test's
	// goroutine, while the handler reads.
	latest lrspb.LoadReportingService_StreamLoadStatsServer
	sendMu sync.Mutex // one Send at a time
	// afterReport, if set, is started once, in a goroutine of its own,
	// when the next report has been read.
	afterReport func()
}

func (s *loadServer) StreamLoadStats(st lrspb.LoadReportingService_StreamLoadStatsServer) error {
	first, err := st.Recv()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.firsts = append(s.firsts, first)
	s.streams++
	s.open++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.open--
		s.mu.Unlock()
	}()
	s.mu.Lock()
	s.latest = st
	s.mu.Unlock()
	if s.settings != nil {
		if err := s.send(st, s.settings); err != nil {
			return err
		}
	}
	for {
		req, err := st.Recv()
		if err != nil {
			return nil
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		if f := s.afterReport; f != nil {
			s.afterReport = nil
			go f()
		}
		s.mu.Unlock()
	}
}

// respond sends resp on the newest stream, as a server that changes
// what it asks for does.
func (s *loadServer) respond(t *testing.T, resp *lrspb.LoadStatsResponse) {
	t.Helper()
	s.mu.Lock()
	st := s.latest
	s.mu.Unlock()
	if st == nil {
		t.Fatal("respond: no stream")
	}
	if err := s.send(st, resp); err != nil {
		t.Fatalf("respond: %v", err)
	}
}

func (s *loadServer) send(st lrspb.LoadReportingService_StreamLoadStatsServer, resp *lrspb.LoadStatsResponse) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return st.Send(resp)
}

func (s *loadServer) openStreams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// serve starts the service on addr ("127.0.0.1:0" for any port) and
// returns the address and a stop function.
func (s *loadServer) serve(t *testing.T, addr string) (string, func()) {
	t.Helper()
	var l net.Listener
	var err error
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if l, err = net.Listen("tcp", addr); err == nil || time.Since(start) > 5*time.Second {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.WaitForHandlers(true))
	lrspb.RegisterLoadReportingServiceServer(gs, s)
	go gs.Serve(l)
	var once sync.Once
	stop := func() { once.Do(gs.Stop) }
	t.Cleanup(stop)
	return l.Addr().String(), stop
}

// totals sums every report the server has read for cluster.
type totals struct {
	issued, succeeded, errored, dropped uint64
	loadCount                           uint64
	loadSum                             float64
	reports                             int
}

func (s *loadServer) totals(cluster string) totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t totals
	for _, r := range s.reqs {
		for _, cs := range r.GetClusterStats() {
			if cs.GetClusterName() != cluster {
				continue
			}
			t.reports++
			t.dropped += cs.GetTotalDroppedRequests()
			for _, ul := range cs.GetUpstreamLocalityStats() {
				t.issued += ul.GetTotalIssuedRequests()
				t.succeeded += ul.GetTotalSuccessfulRequests()
				t.errored += ul.GetTotalErrorRequests()
				for _, lm := range ul.GetLoadMetricStats() {
					t.loadCount += lm.GetNumRequestsFinishedWithMetric()
					t.loadSum += lm.GetTotalMetricValue()
				}
			}
		}
	}
	return t
}

func settings(interval time.Duration, sendAll bool, clusters ...string) *lrspb.LoadStatsResponse {
	return &lrspb.LoadStatsResponse{LoadReportingInterval: durationpb.New(interval), SendAllClusters: sendAll, Clusters: clusters}
}

// newEngine is an engine whose only server is addr, on the real clock
// with short retries; no ADS stream opens, since nothing is watched.
func newEngine(t *testing.T, addr string) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: "lrs-node"}},
		Registry:  builtin.Registry(),
		Transport: transport.GRPC(xdstest.FastReconnect),
		Backoff:   func(int) time.Duration { return 10 * time.Millisecond },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

var errCall = errors.New("call failed")

// TestFirstRequestAndInterval: the node, with the LRS client feature, is
// in the first request; reports follow at the interval the server asks
// for, each with the interval it covers.
func TestFirstRequestAndInterval(t *testing.T) {
	const interval = 50 * time.Millisecond
	srv := &loadServer{settings: settings(interval, true)}
	addr, _ := srv.serve(t, "127.0.0.1:0")
	e := newEngine(t, addr)
	c := lrs.NewClient(e)
	defer c.Close()
	store, cancel := c.ReportLoad(bootstrap.InsecureServer(addr), "cluster-a", "eds-a")
	defer cancel()
	loc := lrs.Locality{Region: "r", Zone: "z"}
	start := time.Now()
	for i := 0; i < 5; i++ {
		store.CallStarted(loc)
		store.CallFinished(loc, nil)
		time.Sleep(interval)
	}
	waitFor(t, "3 reports", func() bool { return srv.totals("cluster-a").reports >= 3 })
	srv.mu.Lock()
	first := srv.firsts[0]
	reqs := slices.Clone(srv.reqs)
	srv.mu.Unlock()
	if first.GetNode().GetId() != "lrs-node" || !slices.Contains(first.GetNode().GetClientFeatures(), lrs.ClientFeature) {
		t.Fatalf("first request node %v, want id lrs-node with %s", first.GetNode(), lrs.ClientFeature)
	}
	if len(first.GetClusterStats()) != 0 {
		t.Error("the first request carries stats")
	}
	for _, r := range reqs {
		if r.GetNode() != nil {
			t.Error("a report carries the node again")
		}
		for _, cs := range r.GetClusterStats() {
			if cs.GetClusterServiceName() != "eds-a" {
				t.Errorf("cluster_service_name %q, want eds-a", cs.GetClusterServiceName())
			}
			if d := cs.GetLoadReportInterval().AsDuration(); d < interval*8/10 || d > 10*interval {
				t.Errorf("load_report_interval %v, want about %v", d, interval)
			}
		}
	}
	elapsed := time.Since(start)
	if n := len(reqs); n > int(elapsed/interval)+2 {
		t.Errorf("%d reports in %v at a %v interval", n, elapsed, interval)
	}
}

// TestTotalsUnderConcurrency: what many goroutines record is what the
// server receives, summed over the reports.
func TestTotalsUnderConcurrency(t *testing.T) {
	srv := &loadServer{settings: settings(10*time.Millisecond, true)}
	addr, _ := srv.serve(t, "127.0.0.1:0")
	c := lrs.NewClient(newEngine(t, addr))
	defer c.Close()
	store, cancel := c.ReportLoad(bootstrap.InsecureServer(addr), "cluster-a", "")
	defer cancel()
	const goroutines, calls = 8, 5000
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loc := store.Locality(lrs.Locality{Zone: []string{"z1", "z2"}[g%2]})
			for i := 0; i < calls; i++ {
				loc.CallStarted()
				var err error
				if i%10 == 0 {
					err = errCall
				}
				loc.CallServerLoad("cpu", 0.5)
				loc.CallFinished(err)
				if i%100 == 0 {
					store.CallDropped("throttle")
				}
			}
		}()
	}
	wg.Wait()
	want := totals{issued: goroutines * calls, succeeded: goroutines * calls * 9 / 10, errored: goroutines * calls / 10,
		dropped: goroutines * calls / 100, loadCount: goroutines * calls, loadSum: goroutines * calls * 0.5}
	waitFor(t, "the totals", func() bool {
		got := srv.totals("cluster-a")
		got.reports = 0
		return got == want
	})
	if got := srv.totals("cluster-a"); got.reports < 1 {
		t.Fatal("no report")
	}
}

// TestServerRestart: load recorded while the server is down goes in the
// first reports after it is back; nothing is lost or counted twice.
func TestServerRestart(t *testing.T) {
	srv := &loadServer{settings: settings(10*time.Millisecond, true)}
	addr, stop := srv.serve(t, "127.0.0.1:0")
	c := lrs.NewClient(newEngine(t, addr))
	defer c.Close()
	store, cancel := c.ReportLoad(bootstrap.InsecureServer(addr), "cluster-a", "")
	defer cancel()
	loc := store.Locality(lrs.Locality{Zone: "z"})
	recorded := uint64(0)
	record := func(n int) {
		for i := 0; i < n; i++ {
			loc.CallStarted()
			loc.CallFinished(nil)
			recorded++
			if i%50 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}
	record(500)
	waitFor(t, "a report", func() bool { return srv.totals("cluster-a").succeeded > 0 })
	// Stopped right after the server has read a report (the client
	// reports only load, so some is recorded), long before the next is
	// due: a report the client had sent when the connection went and the
	// server had not read would be lost with it, which the client cannot
	// know (gRPC had taken it), and the test would wait for it.
	stopped := make(chan struct{})
	srv.mu.Lock()
	srv.afterReport = func() { stop(); close(stopped) }
	srv.mu.Unlock()
	record(50)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("no report to stop the server after")
	}
	record(500) // while down
	if got := srv.totals("cluster-a").succeeded; got > recorded {
		t.Fatalf("server counted %d, more than the %d recorded", got, recorded)
	}
	_, stop2 := srv.serve(t, addr)
	defer stop2()
	record(500)
	waitFor(t, "every call reported", func() bool { return srv.totals("cluster-a").succeeded >= recorded })
	time.Sleep(50 * time.Millisecond) // a few more intervals: nothing more may arrive
	if got := srv.totals("cluster-a"); got.succeeded != recorded || got.issued != recorded {
		t.Fatalf("server counted %d succeeded, %d issued; recorded %d", got.succeeded, got.issued, recorded)
	}
	srv.mu.Lock()
	streams := srv.streams
	srv.mu.Unlock()
	if streams < 2 {
		t.Fatalf("%d streams, want a new one after the restart", streams)
	}
}

// TestClustersListed: without send_all_clusters, only the clusters the
// server lists are reported.
func TestClustersListed(t *testing.T) {
	srv := &loadServer{settings: settings(10*time.Millisecond, false, "wanted")}
	addr, _ := srv.serve(t, "127.0.0.1:0")
	c := lrs.NewClient(newEngine(t, addr))
	defer c.Close()
	wanted, cancel1 := c.ReportLoad(bootstrap.InsecureServer(addr), "wanted", "")
	defer cancel1()
	other, cancel2 := c.ReportLoad(bootstrap.InsecureServer(addr), "other", "")
	defer cancel2()
	for _, s := range []*lrs.Store{wanted, other} {
		s.CallStarted(lrs.Locality{})
		s.CallFinished(lrs.Locality{}, nil)
	}
	waitFor(t, "a report of wanted", func() bool { return srv.totals("wanted").succeeded == 1 })
	time.Sleep(30 * time.Millisecond)
	if got := srv.totals("other"); got.reports != 0 {
		t.Fatalf("cluster other reported %d times, want never", got.reports)
	}
}

// TestCancelEndsStream: the stream to a server ends with the last cancel
// of its stores.
func TestCancelEndsStream(t *testing.T) {
	srv := &loadServer{settings: settings(time.Hour, true)}
	addr, _ := srv.serve(t, "127.0.0.1:0")
	c := lrs.NewClient(newEngine(t, addr))
	defer c.Close()
	_, cancel1 := c.ReportLoad(bootstrap.InsecureServer(addr), "a", "")
	_, cancel2 := c.ReportLoad(bootstrap.InsecureServer(addr), "b", "")
	open := srv.openStreams
	waitFor(t, "the stream", func() bool { return open() == 1 })
	cancel1()
	cancel1()
	time.Sleep(20 * time.Millisecond)
	if open() != 1 {
		t.Fatal("the stream ended while a store still reports")
	}
	cancel2()
	waitFor(t, "the stream to end", func() bool { return open() == 0 })
}

// TestIntervalOnEngineClock: reports run on the engine's clock, so a
// fake one drives them; each covers exactly the interval since the last.
func TestIntervalOnEngineClock(t *testing.T) {
	srv := &loadServer{settings: settings(10*time.Second, true)}
	addr, _ := srv.serve(t, "127.0.0.1:0")
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: "lrs-node"}},
		Registry:  builtin.Registry(),
		Transport: transport.GRPC(xdstest.FastReconnect),
		Clock:     clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := lrs.NewClient(e)
	defer c.Close()
	store, cancel := c.ReportLoad(bootstrap.InsecureServer(addr), "a", "")
	defer cancel()
	for round := 1; round <= 3; round++ {
		store.CallStarted(lrs.Locality{})
		store.CallFinished(lrs.Locality{}, nil)
		clock.WaitForTimer(t, 10*time.Second)
		clock.Advance(10 * time.Second)
		waitFor(t, "the report", func() bool { return srv.totals("a").reports == round })
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, r := range srv.reqs {
		if d := r.GetClusterStats()[0].GetLoadReportInterval().AsDuration(); d != 10*time.Second {
			t.Errorf("report %d covers %v, want exactly 10s of the engine's clock", i, d)
		}
	}
}
