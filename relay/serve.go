package relay

import (
	"context"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	extensionpb "github.com/envoyproxy/go-control-plane/envoy/service/extension/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	runtimepb "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	secretpb "github.com/envoyproxy/go-control-plane/envoy/service/secret/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
)

// Register serves the relay on s with go-control-plane's server
// (server.NewServer) until ctx ends: the aggregated discovery service
// (ADS), State of the World and incremental, and the per-type services
// (LDS, RDS, SRDS, VHDS, CDS, EDS, SDS, RTDS, ECDS) for clients that use
// them. callbacks may be nil. Legacy wildcard stays on, as Envoy expects
// (a first request naming nothing subscribes to every resource of the
// type); gRPC clients never send one.
func (r *Relay) Register(ctx context.Context, s grpc.ServiceRegistrar, callbacks server.Callbacks) server.Server {
	xs := server.NewServer(ctx, r, callbacks)
	discoverypb.RegisterAggregatedDiscoveryServiceServer(s, xs)
	listenerpb.RegisterListenerDiscoveryServiceServer(s, xs)
	routepb.RegisterRouteDiscoveryServiceServer(s, xs)
	routepb.RegisterScopedRoutesDiscoveryServiceServer(s, xs)
	routepb.RegisterVirtualHostDiscoveryServiceServer(s, xs)
	clusterpb.RegisterClusterDiscoveryServiceServer(s, xs)
	endpointpb.RegisterEndpointDiscoveryServiceServer(s, xs)
	secretpb.RegisterSecretDiscoveryServiceServer(s, xs)
	runtimepb.RegisterRuntimeDiscoveryServiceServer(s, xs)
	extensionpb.RegisterExtensionConfigDiscoveryServiceServer(s, xs)
	return xs
}
