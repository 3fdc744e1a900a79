package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/csds"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "`host:port` the CSDS admin server listens on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr string) error {
	cp, err := xdstest.Start(xdstest.Options{Logf: log.Printf})
	if err != nil {
		return err
	}
	defer cp.Close()
	cp.Set(
		xdstest.R("listener.example", xdstest.Listener("listener.example", "route.example")),
		xdstest.R("route.example", xdstest.RouteConfig("route.example", "cluster.example")),
		xdstest.R("cluster.example", xdstest.Cluster("cluster.example", "endpoints.example")),
		xdstest.R("endpoints.example", xdstest.ClusterLoadAssignment("endpoints.example",
			xdstest.Locality{Zone: "zone-a", Endpoints: []string{"127.0.0.1:8080", "127.0.0.1:8081"}})),
	)

	reg := builtin.Registry()
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(cp.Addr())},
			Node:    bootstrap.Node{ID: "csdsdemo"},
		},
		Registry: reg,
		Target:   "xds:///listener.example",
		// Shorter than the default 15 s, so the missing listener is
		// reported DOES_NOT_EXIST before "ready".
		ResourceTimeout: time.Second,
	})
	if err != nil {
		return err
	}
	defer e.Close()

	// The graph watch subscribes to every resource of the tree; the
	// second watch is for a listener the server lacks.
	graphDone := make(chan error, 1)
	cancelGraph := graph.Watch(e, registry.Ref{TypeURL: lds.TypeURL, Name: "listener.example"},
		graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
			defer done()
			select {
			case graphDone <- err:
			default:
			}
		}))
	defer cancelGraph()
	missingDone := make(chan error, 1)
	cancelMissing := lds.Watch(e, "missing.example", engine.TypedWatcherFuncs[*lds.Listener]{
		ResourceChanged: func(_ *lds.Listener, err error, done func()) {
			defer done()
			select {
			case missingDone <- err:
			default:
			}
		},
	})
	defer cancelMissing()
	for _, ch := range []chan error{graphDone, missingDone} {
		select {
		case err := <-ch:
			if err != nil {
				log.Printf("watch: %v", err)
			}
		case <-time.After(30 * time.Second):
			return errors.New("watches did not settle within 30 s")
		case <-ctx.Done():
			return nil
		}
	}

	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	admin := grpc.NewServer()
	csds.RegisterWithReflection(admin, csds.ForEngine(e))
	served := make(chan error, 1)
	go func() { served <- admin.Serve(lis) }()
	fmt.Printf("ready: CSDS on %s\n", lis.Addr())

	select {
	case <-ctx.Done():
		admin.GracefulStop()
		<-served
		return nil
	case err := <-served:
		return err
	}
}
