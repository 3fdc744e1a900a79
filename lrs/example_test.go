package lrs_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/lrs"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/xdstest"
)

// printingLRS is a management server's LRS side that prints the first
// report with calls in it.
type printingLRS struct {
	lrspb.UnimplementedLoadReportingServiceServer
	printed chan struct{}
}

func (p *printingLRS) StreamLoadStats(st lrspb.LoadReportingService_StreamLoadStatsServer) error {
	if _, err := st.Recv(); err != nil { // the node
		return err
	}
	if err := st.Send(&lrspb.LoadStatsResponse{SendAllClusters: true, LoadReportingInterval: durationpb.New(20 * time.Millisecond)}); err != nil {
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
// of that server.
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
	defer cancel()
	zone := store.Locality(lrs.Locality{Region: "us-east1", Zone: "us-east1-b"}) // kept: recording is then a few atomic adds
	for _, err := range []error{nil, nil, errors.New("unavailable")} {
		zone.CallStarted()
		zone.CallFinished(err)
	}
	<-sink.printed
	// Output: backend us-east1-b: 2 succeeded, 1 failed
}
