package csds

import (
	"context"
	"errors"
	"io"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
)

// Server implements envoy.service.status.v3.ClientStatusDiscoveryService
// over a [Source]. It keeps no state of its own: every request dumps the
// source afresh, so a response is never older than the request. It is
// safe for concurrent use.
type Server struct {
	// Embedded by value, as the generated code asks, so that a method
	// added to the service later answers Unimplemented instead of
	// breaking the build.
	statuspb.UnimplementedClientStatusDiscoveryServiceServer

	src Source
}

var _ statuspb.ClientStatusDiscoveryServiceServer = (*Server)(nil)

// NewServer returns a CSDS server that reports src. A nil src panics here,
// at wiring time, rather than on the first request.
func NewServer(src Source) *Server {
	if src == nil {
		panic("csds: NewServer(nil)")
	}
	return &Server{src: src}
}

// FetchClientStatus answers with the source's current ClientConfigs. The
// request's node_matchers are ignored: see the package documentation.
func (s *Server) FetchClientStatus(_ context.Context, _ *statuspb.ClientStatusRequest) (*statuspb.ClientStatusResponse, error) {
	return s.response(), nil
}

// StreamClientStatus answers every request of the stream with the source's
// ClientConfigs at that moment, one response per request, until the client
// half-closes the stream (which ends the RPC with OK) or the stream fails.
// An operator polls a process by sending a request whenever they want a
// fresh dump; nothing is pushed unasked.
func (s *Server) StreamClientStatus(stream statuspb.ClientStatusDiscoveryService_StreamClientStatusServer) error {
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			// Cancellation or a transport error: the status is already
			// the stream's, return it as is.
			return err
		}
		if err := stream.Send(s.response()); err != nil {
			return err
		}
	}
}

// response dumps the source. Nil entries are dropped because protobuf
// refuses to marshal a repeated field holding nil, which would turn one
// faulty custom source into an Internal error for the whole response.
func (s *Server) response() *statuspb.ClientStatusResponse {
	resp := &statuspb.ClientStatusResponse{}
	for _, cc := range s.src.ClientConfigs() {
		if cc != nil {
			resp.Config = append(resp.Config, cc)
		}
	}
	return resp
}

// Register registers the CSDS service for src on s, usually a process's
// admin gRPC server. Like every gRPC registration it must happen before
// s serves, and only once per server.
func Register(s grpc.ServiceRegistrar, src Source) {
	statuspb.RegisterClientStatusDiscoveryServiceServer(s, NewServer(src))
}

// RegisterWithReflection registers the CSDS service as [Register] does and
// gRPC server reflection (v1 and v1alpha) as well, so that general tools
// such as grpcurl can list and call the service without its proto files.
// Call it only on a server that has no reflection service yet: gRPC
// panics on a second registration of a service.
func RegisterWithReflection(s reflection.GRPCServer, src Source) {
	Register(s, src)
	reflection.Register(s)
}
