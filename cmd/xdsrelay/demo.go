package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// The demo configuration: a listener that gRPC clients resolve
// (xds:///demo.example.com), down to the endpoints of three backends on
// loopback, each a gRPC server whose health service reports "demo"
// SERVING. The endpoints served change every --demo-interval (one
// backend, two, three, one...), so that clients of the relay see updates
// flow.
const (
	demoListener  = "demo.example.com"
	demoRoute     = "demo-route"
	demoCluster   = "demo-cluster"
	demoEndpoints = "demo-endpoints"
	demoBackends  = 3
)

func demoAssignment(backends []string, n int) xdstest.Resource {
	return xdstest.R(demoEndpoints, xdstest.ClusterLoadAssignment(demoEndpoints, xdstest.Locality{Zone: "zone-a", Endpoints: backends[:n]}))
}

// startBackends starts the demo's backends; stop ends them.
func startBackends() (addrs []string, stop func(), err error) {
	var servers []*grpc.Server
	stop = func() {
		for _, s := range servers {
			s.Stop()
		}
	}
	for range demoBackends {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			stop()
			return nil, nil, err
		}
		s := grpc.NewServer()
		hs := health.NewServer()
		hs.SetServingStatus("demo", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(s, hs)
		go s.Serve(lis)
		servers = append(servers, s)
		addrs = append(addrs, lis.Addr().String())
	}
	return addrs, stop, nil
}

// startDemo starts go-control-plane's server on loopback with the demo
// configuration, and returns the relay's bootstrap of it.
func startDemo(ctx context.Context, interval time.Duration, log *slog.Logger) (*bootstrap.Bootstrap, func(), error) {
	backends, stopBackends, err := startBackends()
	if err != nil {
		return nil, nil, err
	}
	up, err := xdstest.Start(xdstest.Options{Name: "demo upstream", Logf: func(format string, args ...any) {
		log.Info("xdsrelay: " + fmt.Sprintf(format, args...))
	}})
	if err != nil {
		stopBackends()
		return nil, nil, err
	}
	up.Set(
		xdstest.R(demoListener, xdstest.Listener(demoListener, demoRoute)),
		xdstest.R(demoRoute, xdstest.RouteConfig(demoRoute, demoCluster)),
		xdstest.R(demoCluster, xdstest.Cluster(demoCluster, demoEndpoints)),
		demoAssignment(backends, 1),
	)
	bs, err := bootstrap.Parse(up.Bootstrap(xdstest.BootstrapOptions{NodeID: "xdsrelay"}))
	if err != nil {
		up.Close()
		stopBackends()
		return nil, nil, err
	}
	log.Info("xdsrelay: demo backends", "addrs", backends)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for n := 2; ; n = n%demoBackends + 1 {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			up.Update(eds.TypeURL, demoAssignment(backends, n))
		}
	}()
	return bs, func() { close(stop); <-done; up.Close(); stopBackends() }, nil
}
