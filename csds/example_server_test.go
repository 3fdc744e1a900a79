package csds_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"slices"
	"time"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/csds"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/xdstest"
)

// ExampleNewServer calls the CSDS service in process, without gRPC: a
// program that writes its xDS state to its log before it exits, or shows
// it on a debug page, asks the server as an operator's client would and
// gets the same response.
func ExampleNewServer() {
	cp, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	cp.Set(xdstest.R("listener.example", xdstest.Listener("listener.example", "route.example")))

	e, err := engine.New(exampleConfig(cp, "node-1", "xds:///listener.example"))
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	defer watchListener(e, "listener.example")()

	srv := csds.NewServer(csds.ForEngine(e))
	resp, err := srv.FetchClientStatus(context.Background(), &statuspb.ClientStatusRequest{})
	if err != nil {
		log.Fatal(err)
	}
	printConfigs(resp.GetConfig())
	// Output:
	// xds:///listener.example (node node-1)
	//   listener.example ACKED version="1"
}

// ExampleRegisterWithReflection registers CSDS and gRPC server reflection
// on an admin server, and then asks it what a tool such as grpcurl asks
// first: which services it serves, and the proto file that defines CSDS,
// from which the tool learns its methods and messages.
func ExampleRegisterWithReflection() {
	pool, err := engine.NewPool(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("xds.example:443")}, Node: bootstrap.Node{ID: "node-1"}},
		Registry:  builtin.Registry(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	admin := grpc.NewServer()
	csds.RegisterWithReflection(admin, csds.ForPool(pool))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = admin.Serve(lis)
	}()
	defer func() {
		admin.Stop()
		<-served
	}()

	// The tool's side.
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		log.Fatal(err)
	}
	ask := func(req *reflectionpb.ServerReflectionRequest) *reflectionpb.ServerReflectionResponse {
		if err := stream.Send(req); err != nil {
			log.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			log.Fatal(err)
		}
		return resp
	}

	var services []string
	for _, s := range ask(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}).GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	slices.Sort(services)
	for _, s := range services {
		fmt.Println("service:", s)
	}

	files := ask(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{
			FileContainingSymbol: "envoy.service.status.v3.ClientStatusDiscoveryService",
		},
	}).GetFileDescriptorResponse().GetFileDescriptorProto()
	for _, raw := range files {
		fd := &descriptorpb.FileDescriptorProto{}
		if err := proto.Unmarshal(raw, fd); err != nil {
			log.Fatal(err)
		}
		for _, svc := range fd.GetService() {
			if svc.GetName() != "ClientStatusDiscoveryService" {
				continue
			}
			fmt.Println("defined in:", fd.GetName())
			for _, m := range svc.GetMethod() {
				fmt.Println("  method:", m.GetName())
			}
		}
	}
	// Output:
	// service: envoy.service.status.v3.ClientStatusDiscoveryService
	// service: grpc.reflection.v1.ServerReflection
	// service: grpc.reflection.v1alpha.ServerReflection
	// defined in: envoy/service/status/v3/csds.proto
	//   method: StreamClientStatus
	//   method: FetchClientStatus
}
