package xdstest_test

import (
	"fmt"
	"log"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// Example serves a cluster and reads it back through an engine configured
// from the server's bootstrap.
func Example() {
	srv, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.Set(xdstest.R("backend", &clusterpb.Cluster{
		Name:                 "backend",
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
		EdsClusterConfig: &clusterpb.Cluster_EdsClusterConfig{
			EdsConfig: &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}},
		},
	}))

	bs, err := bootstrap.Parse(srv.Bootstrap(xdstest.BootstrapOptions{NodeID: "example"}))
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry()})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	got := make(chan string, 1)
	defer cds.Watch(e, "backend", engine.TypedWatcherFuncs[*cds.Cluster]{
		ResourceChanged: func(c *cds.Cluster, err error, done func()) {
			defer done()
			if err != nil {
				got <- err.Error()
				return
			}
			got <- c.Name + " uses EDS " + c.EDSName()
		},
	})()
	fmt.Println(<-got)
	// Output: backend uses EDS backend
}

func ExampleServer_Bootstrap() {
	srv, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	bs, err := bootstrap.Parse(srv.Bootstrap(xdstest.BootstrapOptions{ServerFeatures: []string{"fail_on_data_errors"}}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(bs.Node.ID, bs.Servers[0].URI == srv.Addr(), bs.Servers[0].ServerFeatures)
	// Output: xdstest-node true [fail_on_data_errors]
}

// ExampleFastReconnect restarts the server under an engine: with
// FastReconnect the engine's connection is back, and its watcher has the
// new version, well within a second.
func ExampleFastReconnect() {
	srv, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.Set(xdstest.R("backend", xdstest.Cluster("backend", "eds-1")))
	bs, err := bootstrap.Parse(srv.Bootstrap(xdstest.BootstrapOptions{NodeID: "example"}))
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry(),
		Transport: transport.GRPC(xdstest.FastReconnect), Backoff: func(int) time.Duration { return 20 * time.Millisecond }})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	eds := make(chan string, 4)
	defer cds.Watch(e, "backend", engine.TypedWatcherFuncs[*cds.Cluster]{
		ResourceChanged: func(c *cds.Cluster, err error, done func()) {
			defer done()
			if err == nil {
				eds <- c.EDSName()
			}
		},
	})()
	fmt.Println(<-eds)
	srv.Stop()
	srv.Set(xdstest.R("backend", xdstest.Cluster("backend", "eds-2")))
	start := time.Now()
	srv.Restart()
	fmt.Println(<-eds, "| back within a second:", time.Since(start) < time.Second)
	// Output:
	// eds-1
	// eds-2 | back within a second: true
}
