package transport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"sync/atomic"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/config"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// clusterCache is a go-control-plane cache serving a Cluster per name.
func clusterCache(names ...string) cache.Cache {
	res := map[string]cachetypes.Resource{}
	for _, n := range names {
		res[n] = xdstest.Cluster(n, n+"-eds")
	}
	return cache.NewLinearCache(cds.TypeURL, cache.WithInitialResources(res))
}

// firstCluster watches the Cluster name on e and says what its first
// delivery was.
func firstCluster(e *engine.Engine, name string) string {
	got := make(chan string, 1)
	cancel := cds.Watch(e, name, engine.TypedWatcherFuncs[*cds.Cluster]{
		ResourceChanged: func(c *cds.Cluster, err error, done func()) {
			defer done()
			msg := "error: " + fmt.Sprint(err)
			if err == nil {
				msg = "cluster " + c.Name
			}
			select {
			case got <- msg:
			default: // a later update; only the first is wanted
			}
		},
	})
	defer cancel()
	return <-got
}

// serveADS serves c's resources over ADS on loopback.
func serveADS(c cache.Cache) (addr string, stop func()) { return serveADSWith(c) }

// dialTo makes every connection go to addr, whatever the target says.
func dialTo(addr string) grpc.DialOption {
	return grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	})
}

// ExampleGRPC gives the default transport extra dial options.
// The bootstrap names the management server as production would; a
// dialer sends the connection to a server on loopback instead (the
// passthrough scheme keeps gRPC from resolving the name), and a stream
// interceptor sees which RPC the engine opens on it.
func ExampleGRPC() {
	addr, stop := serveADS(clusterCache("a"))
	defer stop()

	streams := make(chan string, 1)
	observe := grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		select {
		case streams <- cc.Target() + " " + method:
		default: // a reconnection; the first stream is enough here
		}
		return streamer(ctx, desc, cc, method, opts...)
	})

	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("passthrough:///xds.internal.example:443")},
			Node:    bootstrap.Node{ID: "example-node"},
		},
		Registry:  registry.MustNew(cds.Type),
		Transport: transport.GRPC(dialTo(addr), observe),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	fmt.Println(firstCluster(e, "a"))
	fmt.Println(<-streams)
	// Output:
	// cluster a
	// passthrough:///xds.internal.example:443 /envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources
}

// apiKey is per-call credentials that send a fixed key.
type apiKey string

func (k apiKey) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"x-api-key": string(k)}, nil
}

func (apiKey) RequireTransportSecurity() bool { return false }

// ExampleGRPCWithCredentials connects with a call credentials
// type of the program's own, "api_key", that the bootstrap names. The
// same set of types parses the bootstrap and builds the transport: plain
// GRPC does not know the type and ignores the entry, as gRPC
// ignores call credentials it does not know, so no key is sent. The
// management server here records the key each ADS stream carries.
func ExampleGRPCWithCredentials() {
	keys := make(chan string, 1)
	addr, stop := serveADSWith(clusterCache("a"), grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		md, _ := metadata.FromIncomingContext(ss.Context())
		select {
		case keys <- fmt.Sprint(md.Get("x-api-key")):
		default:
		}
		return handler(srv, ss)
	}))
	defer stop()

	creds := bootstrap.DefaultCredentials().WithCallCreds(bootstrap.CallCredsType{
		Name: "api_key",
		Build: func(config json.RawMessage) (credentials.PerRPCCredentials, error) {
			var c struct{ Key string }
			err := json.Unmarshal(config, &c)
			return apiKey(c.Key), err
		},
	})
	bs, err := bootstrap.Parser{Credentials: creds}.Parse([]byte(`{
		"xds_servers": [{
			"server_uri": "` + addr + `",
			"channel_creds": [{"type": "insecure"}],
			"call_creds": [{"type": "api_key", "config": {"key": "s3cret"}}]
		}],
		"node": {"id": "example-node"}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tb   transport.Builder
	}{
		{"GRPCWithCredentials(creds)", transport.GRPCWithCredentials(creds)},
		{"GRPC()", transport.GRPC()},
	} {
		e, err := engine.New(engine.Config{Bootstrap: bs, Registry: registry.MustNew(cds.Type), Transport: tc.tb})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(tc.name+":", firstCluster(e, "a"), "| x-api-key seen by the server:", <-keys)
		e.Close()
		select {
		case <-keys: // a later stream of the closed engine, should it have reconnected
		default:
		}
	}
	// Output:
	// GRPCWithCredentials(creds): cluster a | x-api-key seen by the server: [s3cret]
	// GRPC(): cluster a | x-api-key seen by the server: []
}

// serveADSWith is serveADS with options for the gRPC server.
func serveADSWith(c cache.Cache, opts ...grpc.ServerOption) (addr string, stop func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gs := grpc.NewServer(opts...)
	discoverypb.RegisterAggregatedDiscoveryServiceServer(gs, server.NewServer(ctx, c, nil, config.DeactivateLegacyWildcard()))
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = gs.Serve(lis)
	}()
	return lis.Addr().String(), func() {
		cancel()
		gs.Stop()
		<-served
	}
}

// ExampleBuffersSender wraps the gRPC transport to see how the engine
// sends its requests. A wrapper hides the optional methods of what it
// wraps, so it keeps SendBuffers where the stream has it: without it, the
// engine joins each request's buffers into a new message, a copy of the
// names that every ACK repeats.
func ExampleBuffersSender() {
	addr, stop := serveADS(clusterCache("a"))
	defer stop()

	var first firstMessage
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)},
			Node:    bootstrap.Node{ID: "example-node"},
		},
		Registry:  registry.MustNew(cds.Type),
		Transport: recordingBuilder{transport.GRPC(), &first},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	fmt.Println(firstCluster(e, "a"))
	fmt.Println("the first request went in", first.buffers.Load(), "buffers")
	// Output:
	// cluster a
	// the first request went in 2 buffers
}

// firstMessage records how many buffers the first message sent came in.
type firstMessage struct{ buffers atomic.Int64 }

func (f *firstMessage) sent(msg net.Buffers) { f.buffers.CompareAndSwap(0, int64(len(msg))) }

type recordingBuilder struct {
	transport.Builder
	first *firstMessage
}

func (b recordingBuilder) Build(s bootstrap.ServerConfig, opts transport.Options) (transport.Transport, error) {
	t, err := b.Builder.Build(s, opts)
	if err != nil {
		return nil, err
	}
	return recordingTransport{t, b.first}, nil
}

type recordingTransport struct {
	transport.Transport
	first *firstMessage
}

func (t recordingTransport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	st, err := t.Transport.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	rs := recordingStream{st, t.first}
	if bs, ok := st.(transport.BuffersSender); ok {
		return recordingBuffersStream{rs, bs}, nil
	}
	return rs, nil
}

type recordingStream struct {
	transport.Stream
	first *firstMessage
}

func (s recordingStream) Send(msg []byte) error {
	s.first.sent(net.Buffers{msg})
	return s.Stream.Send(msg)
}

// recordingBuffersStream is a recordingStream over a stream that takes
// buffers.
type recordingBuffersStream struct {
	recordingStream
	bs transport.BuffersSender
}

func (s recordingBuffersStream) SendBuffers(msg net.Buffers) error {
	s.first.sent(msg)
	return s.bs.SendBuffers(msg)
}
