package csds_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/csds"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// ExampleRegister serves the CSDS of an engine on an admin gRPC server and
// reads it back with a gRPC client. The engine watches a listener the
// management server has and one it lacks.
func ExampleRegister() {
	// A management server with one listener.
	cp, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	cp.Set(xdstest.R("listener.example", xdstest.Listener("listener.example", "route.example")))

	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(cp.Addr())},
			Node:    bootstrap.Node{ID: "csds-example"},
		},
		Registry: builtin.Registry(),
		Target:   "xds:///listener.example",
		// Shorter than the default 15 s, so that the missing listener is
		// declared missing soon.
		ResourceTimeout: 500 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	// Each watch is waited for, so the output is deterministic: the
	// listener arrives, then the missing one times out.
	settled := make(chan struct{}, 1)
	watcher := engine.TypedWatcherFuncs[*lds.Listener]{
		ResourceChanged: func(_ *lds.Listener, _ error, done func()) {
			defer done()
			select {
			case settled <- struct{}{}:
			default: // a later update; the example waits for the first only
			}
		},
	}
	defer lds.Watch(e, "listener.example", watcher)()
	<-settled
	defer lds.Watch(e, "missing.example", watcher)()
	<-settled

	// The admin server: CSDS, plus reflection for tools such as grpcurl.
	admin := grpc.NewServer()
	csds.RegisterWithReflection(admin, csds.ForEngine(e))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go admin.Serve(lis)
	defer admin.Stop()

	// An operator's client.
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := statuspb.NewClientStatusDiscoveryServiceClient(conn).FetchClientStatus(ctx, &statuspb.ClientStatusRequest{})
	if err != nil {
		log.Fatal(err)
	}
	for _, cc := range resp.GetConfig() {
		fmt.Println("client_scope:", cc.GetClientScope())
		fmt.Println("node:", cc.GetNode().GetId())
		for _, r := range cc.GetGenericXdsConfigs() {
			fmt.Printf("  %s %s version=%q\n", r.GetName(), r.GetClientStatus(), r.GetVersionInfo())
		}
	}
	// Output:
	// client_scope: xds:///listener.example
	// node: csds-example
	//   listener.example ACKED version="1"
	//   missing.example DOES_NOT_EXIST version=""
}
