package lrs_test

import (
	"testing"
	"time"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/fakeclock"
	"github.com/xdsengine/xdsengine/lrs"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/xdstest"
)

// fakeClockEngine is an engine whose only server is addr, on a fake
// clock that starts at t0; its retries wait 10ms of that clock.
func fakeClockEngine(t *testing.T, addr string) (*engine.Engine, *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New(t0)
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: "lrs-node"}},
		Registry:  builtin.Registry(),
		Transport: transport.GRPC(xdstest.FastReconnect),
		Clock:     clock,
		Backoff:   func(int) time.Duration { return 10 * time.Millisecond },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, clock
}

var t0 = time.Unix(1_700_000_000, 0)

// clusterReports returns, in order, every ClusterStats the server has
// read for cluster.
func (s *loadServer) clusterReports(cluster string) []*endpointpb.ClusterStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*endpointpb.ClusterStats
	for _, r := range s.reqs {
		for _, cs := range r.GetClusterStats() {
			if cs.GetClusterName() == cluster {
				out = append(out, cs)
			}
		}
	}
	return out
}

// succeed records n successful calls.
func succeed(st *lrs.Store, n int) {
	for range n {
		st.CallStarted(lrs.Locality{Zone: "z"})
		st.CallFinished(lrs.Locality{Zone: "z"}, nil)
	}
}

// wantReport checks a cluster's report: its successful calls and the
// interval it covers.
func wantReport(t *testing.T, cs *endpointpb.ClusterStats, succeeded uint64, interval time.Duration) {
	t.Helper()
	var got uint64
	for _, ul := range cs.GetUpstreamLocalityStats() {
		got += ul.GetTotalSuccessfulRequests()
	}
	if got != succeeded || cs.GetLoadReportInterval().AsDuration() != interval {
		t.Errorf("cluster %s: %d succeeded over %v, want %d over %v", cs.GetClusterName(), got,
			cs.GetLoadReportInterval().AsDuration(), succeeded, interval)
	}
}

// TestEveryResponseStartsAPeriod: a LoadStatsResponse on an open stream
// restarts the period at once with its interval and clusters (Envoy's
// load_stats_reporter.cc, lrs.proto's load_reporting_interval). A cluster
// the server already asked for keeps what it recorded since its last
// report; one new to the list is billed only from that response on:
// what it recorded before is dropped, as Envoy drops it.
func TestEveryResponseStartsAPeriod(t *testing.T) {
	srv := &loadServer{settings: settings(10*time.Second, false, "a")}
	addr, _ := srv.serve(t, "127.0.0.1:0")
	e, clock := fakeClockEngine(t, addr)
	c := lrs.NewClient(e)
	defer c.Close()
	a, cancelA := c.ReportLoad(bootstrap.InsecureServer(addr), "a", "")
	defer cancelA()
	b, cancelB := c.ReportLoad(bootstrap.InsecureServer(addr), "b", "")
	defer cancelB()
	clock.WaitForTimer(t, 10*time.Second) // the first response is in effect

	succeed(a, 1)
	succeed(b, 1) // b is not asked for: never reported
	clock.Advance(4 * time.Second)
	srv.respond(t, settings(3*time.Second, false, "a", "b"))
	clock.WaitForTimer(t, 3*time.Second) // not the old timer's 6s left
	succeed(a, 1)
	succeed(b, 2)
	clock.Advance(3 * time.Second)
	waitFor(t, "the report of a and b", func() bool {
		return len(srv.clusterReports("a")) == 1 && len(srv.clusterReports("b")) == 1
	})
	wantReport(t, srv.clusterReports("a")[0], 2, 7*time.Second) // since the stream began
	wantReport(t, srv.clusterReports("b")[0], 2, 3*time.Second) // since the response that listed it

	// send_all_clusters, then a list again: each takes effect at once.
	succeed(a, 1)
	srv.respond(t, &lrspb.LoadStatsResponse{SendAllClusters: true, LoadReportingInterval: durationpb.New(5 * time.Second)})
	clock.WaitForTimer(t, 5*time.Second)
	clock.Advance(time.Second)
	srv.respond(t, settings(6*time.Second, false, "b"))
	clock.WaitForTimer(t, 6*time.Second)
	succeed(b, 1)
	clock.Advance(6 * time.Second)
	waitFor(t, "the second report of b", func() bool { return len(srv.clusterReports("b")) == 2 })
	wantReport(t, srv.clusterReports("b")[1], 1, 7*time.Second) // listed all along: since its last report
	if n := len(srv.clusterReports("a")); n != 1 {
		t.Errorf("a reported %d times, want once: the last response does not list it", n)
	}
}

// TestIntervalRules: a load_reporting_interval that is unset, zero or
// negative means DefaultInterval; a later valid one takes effect at once.
func TestIntervalRules(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval *durationpb.Duration
	}{
		{"unset", nil},
		{"zero", durationpb.New(0)},
		{"negative", durationpb.New(-5 * time.Second)},
		{"invalid", &durationpb.Duration{Seconds: 1, Nanos: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &loadServer{settings: &lrspb.LoadStatsResponse{SendAllClusters: true, LoadReportingInterval: tc.interval}}
			addr, _ := srv.serve(t, "127.0.0.1:0")
			e, clock := fakeClockEngine(t, addr)
			c := lrs.NewClient(e)
			defer c.Close()
			st, cancel := c.ReportLoad(bootstrap.InsecureServer(addr), "a", "")
			defer cancel()
			clock.WaitForTimer(t, lrs.DefaultInterval)
			succeed(st, 1)
			clock.Advance(time.Second)
			srv.respond(t, &lrspb.LoadStatsResponse{SendAllClusters: true, LoadReportingInterval: durationpb.New(2 * time.Second)})
			clock.WaitForTimer(t, 2*time.Second)
			clock.Advance(2 * time.Second)
			waitFor(t, "the report", func() bool { return len(srv.clusterReports("a")) == 1 })
			wantReport(t, srv.clusterReports("a")[0], 1, 3*time.Second)
		})
	}
}
