package lrs_test

import (
	"net"
	"testing"
	"time"

	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/lrs"
)

// TestCancelKeepsUnreportedLoad: a store's cancel, while others still
// report to the server, keeps what it recorded for the next report; the
// store is gone after it.
func TestCancelKeepsUnreportedLoad(t *testing.T) {
	srv := &loadServer{settings: settings(10*time.Second, true)}
	addr, _ := srv.serve(t, "127.0.0.1:0")
	e, clock := fakeClockEngine(t, addr)
	c := lrs.NewClient(e)
	defer c.Close()
	a, cancelA := c.ReportLoad(bootstrap.InsecureServer(addr), "a", "")
	b, cancelB := c.ReportLoad(bootstrap.InsecureServer(addr), "b", "")
	defer cancelB()
	clock.WaitForTimer(t, 10*time.Second)

	succeed(a, 3)
	cancelA()
	succeed(b, 1)
	clock.Advance(10 * time.Second)
	waitFor(t, "the report", func() bool { return len(srv.clusterReports("b")) == 1 })
	if got := srv.clusterReports("a"); len(got) != 1 {
		t.Fatalf("a reported %d times after its cancel, want once", len(got))
	}
	wantReport(t, srv.clusterReports("a")[0], 3, 10*time.Second)

	succeed(b, 1)
	clock.WaitForTimer(t, 10*time.Second)
	clock.Advance(10 * time.Second)
	waitFor(t, "the second report", func() bool { return len(srv.clusterReports("b")) == 2 })
	if n := len(srv.clusterReports("a")); n != 1 {
		t.Errorf("a reported %d times, want once: a cancelled store ends with its last report", n)
	}
}

// TestFinalReport: the last cancel of a server's stores, or Close, sends
// what was recorded since the last report before the stream ends, at
// once, and waits for no interval; before the server's first response,
// it waits for that response to know what to report.
func TestFinalReport(t *testing.T) {
	for _, tc := range []struct {
		name string
		// late: the server's first response comes after the cancel.
		late bool
		// closeClient ends with Close rather than the store's cancel.
		closeClient bool
	}{
		{name: "cancel"},
		{name: "Close", closeClient: true},
		{name: "cancel before the first response", late: true},
		{name: "Close before the first response", late: true, closeClient: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &loadServer{settings: settings(10*time.Second, true)}
			if tc.late {
				srv.settings = nil
			}
			addr, _ := srv.serve(t, "127.0.0.1:0")
			e, clock := fakeClockEngine(t, addr)
			c := lrs.NewClient(e)
			defer c.Close()
			st, cancel := c.ReportLoad(bootstrap.InsecureServer(addr), "a", "")
			defer cancel()
			if tc.late {
				waitFor(t, "the stream", func() bool { return srv.openStreams() == 1 })
			} else {
				clock.WaitForTimer(t, 10*time.Second)
			}
			succeed(st, 5)

			closed := make(chan struct{})
			go func() {
				defer close(closed)
				if tc.closeClient {
					c.Close()
				} else {
					cancel()
				}
			}()
			if tc.late {
				time.Sleep(20 * time.Millisecond) // the final report is pending
				srv.respond(t, &lrspb.LoadStatsResponse{SendAllClusters: true, LoadReportingInterval: durationpb.New(time.Hour)})
			}
			<-closed
			if tc.closeClient {
				// Close has waited for the stream to end: the server has
				// read the report by now.
				if got := srv.totals("a"); got.succeeded != 5 {
					t.Fatalf("after Close the server has %d calls, want 5", got.succeeded)
				}
			}
			waitFor(t, "the final report", func() bool { return srv.totals("a").succeeded == 5 })
			waitFor(t, "the stream to end", func() bool { return srv.openStreams() == 0 })
			if got := srv.clusterReports("a"); len(got) != 1 || got[0].GetLoadReportInterval().AsDuration() != 0 {
				t.Errorf("reports %v, want one covering the 0s the fake clock has moved", got)
			}
		})
	}
}

// TestFinalReportIsBounded: when the final report cannot be delivered,
// the stream ends FinalReportTimeout (on the engine's clock) after the
// last cancel, and Close returns then.
func TestFinalReportIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"server that never responds", func(t *testing.T) string {
			addr, _ := (&loadServer{}).serve(t, "127.0.0.1:0")
			return addr
		}},
		{"server down", func(t *testing.T) string {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
			return l.Addr().String()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.addr(t)
			e, clock := fakeClockEngine(t, addr)
			c := lrs.NewClient(e)
			st, cancel := c.ReportLoad(bootstrap.InsecureServer(addr), "a", "")
			succeed(st, 1)
			cancel()
			closed := make(chan struct{})
			go func() {
				defer close(closed)
				c.Close()
			}()
			clock.WaitForTimer(t, lrs.FinalReportTimeout)
			select {
			case <-closed:
				t.Fatal("Close returned before the final report's timeout")
			case <-time.After(50 * time.Millisecond):
			}
			clock.Advance(lrs.FinalReportTimeout)
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				t.Fatal("Close still waits after the final report's timeout")
			}
		})
	}
}
