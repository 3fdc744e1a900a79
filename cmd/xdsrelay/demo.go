package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// The demo configuration: a listener that gRPC clients resolve
// (xds:///demo.example.com), down to endpoints that change every
// --demo-interval, so that a client of the relay sees updates flow.
const (
	demoListener  = "demo.example.com"
	demoRoute     = "demo-route"
	demoCluster   = "demo-cluster"
	demoEndpoints = "demo-endpoints"
)

func demoAssignment(n int) xdstest.Resource {
	var eps []string
	for i := range n {
		eps = append(eps, fmt.Sprintf("10.0.0.%d:8080", i+1))
	}
	return xdstest.R(demoEndpoints, xdstest.ClusterLoadAssignment(demoEndpoints, xdstest.Locality{Zone: "zone-a", Endpoints: eps}))
}

// startDemo starts go-control-plane's server on loopback with the demo
// configuration, and returns the relay's bootstrap of it.
func startDemo(ctx context.Context, interval time.Duration, log *slog.Logger) (*bootstrap.Bootstrap, func(), error) {
	up, err := xdstest.Start(xdstest.Options{Name: "demo upstream", Logf: func(format string, args ...any) {
		log.Info("xdsrelay: " + fmt.Sprintf(format, args...))
	}})
	if err != nil {
		return nil, nil, err
	}
	up.Set(
		xdstest.R(demoListener, xdstest.Listener(demoListener, demoRoute)),
		xdstest.R(demoRoute, xdstest.RouteConfig(demoRoute, demoCluster)),
		xdstest.R(demoCluster, xdstest.Cluster(demoCluster, demoEndpoints)),
		demoAssignment(1),
	)
	bs, err := bootstrap.Parse(up.Bootstrap(xdstest.BootstrapOptions{NodeID: "xdsrelay"}))
	if err != nil {
		up.Close()
		return nil, nil, err
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for n := 2; ; n = n%3 + 1 {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			up.Update(eds.TypeURL, demoAssignment(n))
		}
	}()
	return bs, func() { close(stop); <-done; up.Close() }, nil
}
