package lrs_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/lrs"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// printingLRS is a management server's LRS side that asks for every
// cluster's load once an hour, and prints the first report with calls in
// it: in these examples, the final report a cancel sends.
type printingLRS struct {
	lrspb.UnimplementedLoadReportingServiceServer
	printed chan struct{}
}

func (p *printingLRS) StreamLoadStats(st lrspb.LoadReportingService_StreamLoadStatsServer) error {
	if _, err := st.Recv(); err != nil { // the node
		return err
	}
	if err := st.Send(&lrspb.LoadStatsResponse{SendAllClusters: true, LoadReportingInterval: durationpb.New(time.Hour)}); err != nil {
		return err
	}
	for {
		req, err := st.Recv()
		if err != nil {
			return nil
		}
		for _, cs := range req.GetClusterStats() {
			for _, l := range cs.GetUpstreamLocalityStats() {
				fmt.Printf("%s %s: %d succeeded, %d failed\n", cs.GetClusterName(), l.GetLocality().GetZone(),
					l.GetTotalSuccessfulRequests(), l.GetTotalErrorRequests())
			}
			close(p.printed)
			return nil
		}
	}
}

// ExampleClient_ReportLoad records calls to a cluster's endpoints and
// reports them to the management server, over the engine's configuration
// of that server. The cancel sends the load not yet reported at once.
func ExampleClient_ReportLoad() {
	sink := &printingLRS{printed: make(chan struct{})}
	mgmt, err := xdstest.Start(xdstest.Options{Register: func(s *grpc.Server) { lrspb.RegisterLoadReportingServiceServer(s, sink) }})
	if err != nil {
		log.Fatal(err)
	}
	defer mgmt.Close()
	bs, err := bootstrap.Parse(mgmt.Bootstrap(xdstest.BootstrapOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry()})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	client := lrs.NewClient(e)
	defer client.Close()

	store, cancel := client.ReportLoad(bs.Servers[0], "backend", "backend-eds")
	zone := store.Locality(lrs.Locality{Region: "us-east1", Zone: "us-east1-b"}) // kept: recording is then a few atomic adds
	for _, err := range []error{nil, nil, errors.New("unavailable")} {
		zone.CallStarted()
		zone.CallFinished(err)
	}
	cancel() // done recording: the server gets the load now, not in an hour
	<-sink.printed
	// Output: backend us-east1-b: 2 succeeded, 1 failed
}

// reportLoad makes calls to the cluster of u, whose lrs_server is self,
// and reports them to the server the Cluster came from: u.Server is that
// server's bootstrap entry.
func reportLoad(client *lrs.Client, u engine.TypedUpdate[*cds.Cluster], calls []func() error) {
	store, cancel := client.ReportLoad(u.Server, u.Resource.Name, u.Resource.EDSName())
	defer cancel() // the load not yet reported goes in a final report
	// Keep each locality's counters: recording a call is then a few atomic adds.
	zone := store.Locality(lrs.Locality{Region: "us-east1", Zone: "us-east1-b"})
	for _, call := range calls {
		zone.CallStarted()
		zone.CallFinished(call()) // the call's own outcome; from any goroutine
	}
}

// clusterUpdates is a cds watcher that passes on each update with the
// server it came from (engine.TypedUpdateWatcher).
type clusterUpdates chan engine.TypedUpdate[*cds.Cluster]

func (c clusterUpdates) OnResourceChanged(*cds.Cluster, error, func()) {}
func (c clusterUpdates) OnAmbientError(_ error, done func())           { done() }
func (c clusterUpdates) OnUpdate(u engine.TypedUpdate[*cds.Cluster], done func()) {
	defer done()
	c <- u
}

// ExampleClient_ReportLoad_self reports the load of a Cluster whose
// lrs_server is self to the management server it came from; reportLoad
// is the README's snippet.
func ExampleClient_ReportLoad_self() {
	sink := &printingLRS{printed: make(chan struct{})}
	mgmt, err := xdstest.Start(xdstest.Options{Register: func(s *grpc.Server) { lrspb.RegisterLoadReportingServiceServer(s, sink) }})
	if err != nil {
		log.Fatal(err)
	}
	defer mgmt.Close()
	cluster := xdstest.Cluster("backend", "backend-eds")
	cluster.LrsServer = &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Self{Self: &corepb.SelfConfigSource{}}}
	mgmt.Set(xdstest.R("backend", cluster))
	bs, err := bootstrap.Parse(mgmt.Bootstrap(xdstest.BootstrapOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry()})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	client := lrs.NewClient(e)
	defer client.Close()

	updates := make(clusterUpdates, 1)
	defer cds.Watch(e, "backend", updates)()
	u := <-updates
	if u.Err != nil || !u.Resource.LoadReporting {
		log.Fatalf("cluster backend: %+v, want one with load reporting", u)
	}
	ok := func() error { return nil }
	failed := func() error { return errors.New("unavailable") }
	reportLoad(client, u, []func() error{ok, ok, failed})
	<-sink.printed
	// Output: backend us-east1-b: 2 succeeded, 1 failed
}
