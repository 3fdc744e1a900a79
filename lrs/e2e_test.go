package lrs_test

import (
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/grpc"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/tcpproxy"
	"github.com/xdsengine/xdsengine/lrs"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// TestReportToSelf: a Cluster whose lrs_server is self, from a real
// management server that also serves LRS, has its load reported to that
// server over the engine's own configuration and its own connection: one
// TCP connection carries both ADS and LRS, as gRPC keeps it (a TCP proxy
// in front of the server counts them).
func TestReportToSelf(t *testing.T) {
	loads := &loadServer{settings: settings(10*time.Millisecond, true)}
	mgmt := xdstest.NewServer(t, xdstest.Options{Register: func(s *grpc.Server) { lrspb.RegisterLoadReportingServiceServer(s, loads) }})
	c := xdstest.Cluster("backend", "backend-eds")
	c.LrsServer = &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Self{Self: &corepb.SelfConfigSource{}}}
	mgmt.Set(xdstest.R("backend", c))
	proxy := tcpproxy.Start(t, mgmt.Addr())
	bs := &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(proxy.Addr())}, Node: bootstrap.Node{ID: "lrs-node"}}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry(), Transport: transport.GRPC(xdstest.FastReconnect)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	client := lrs.NewClient(e)
	defer client.Close()

	updates := make(clusterUpdates, 1)
	defer cds.Watch(e, "backend", updates)()
	u := <-updates
	if u.Err != nil || !u.Resource.LoadReporting {
		t.Fatalf("got %+v, want the cluster, with load reporting", u)
	}
	store, cancel := client.ReportLoad(u.Server, u.Resource.Name, u.Resource.EDSName())
	defer cancel()
	for range 100 {
		store.CallStarted(lrs.Locality{Zone: "z"})
		store.CallFinished(lrs.Locality{Zone: "z"}, nil)
	}
	waitFor(t, "the management server to receive the load", func() bool { return loads.totals("backend").succeeded == 100 })
	if n := proxy.Conns(); n != 1 {
		t.Fatalf("%d connections to the management server, want 1 for ADS and LRS", n)
	}
}
