package engine_test

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
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// greetingCache is a go-control-plane cache serving one greeting per name.
func greetingCache(names ...string) cache.Cache {
	res := map[string]cachetypes.Resource{}
	for _, n := range names {
		s, err := structpb.NewStruct(map[string]any{"name": n, "text": "hi from " + n})
		if err != nil {
			log.Fatal(err)
		}
		res[n] = s
	}
	return cache.NewLinearCache(greetingTypeURL, cache.WithInitialResources(res))
}

// firstGreeting watches name on e and returns the text of the first
// greeting delivered, or the error.
func firstGreeting(e *engine.Engine, name string) string {
	got := make(chan string, 1)
	cancel := engine.Watch(e, greetingTypeURL, name, engine.TypedWatcherFuncs[*Greeting]{
		ResourceChanged: func(g *Greeting, err error, done func()) {
			defer done()
			msg := "error: " + fmt.Sprint(err)
			if err == nil {
				msg = g.Text
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

// ExampleGRPCTransport gives the default transport extra dial options.
// The bootstrap names the management server as production would; a
// dialer sends the connection to a server on loopback instead (the
// passthrough scheme keeps gRPC from resolving the name), and a stream
// interceptor sees which RPC the engine opens on it.
func ExampleGRPCTransport() {
	addr, stop := serveADS(greetingCache("a"))
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
		Registry:  registry.MustNew(greetingType),
		Transport: engine.GRPCTransport(dialTo(addr), observe),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	fmt.Println(firstGreeting(e, "a"))
	fmt.Println(<-streams)
	// Output:
	// hi from a
	// passthrough:///xds.internal.example:443 /envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources
}

// apiKey is per-call credentials that send a fixed key.
type apiKey string

func (k apiKey) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"x-api-key": string(k)}, nil
}

func (apiKey) RequireTransportSecurity() bool { return false }

// ExampleGRPCTransportWithCredentials connects with a call credentials
// type of the program's own, "api_key", that the bootstrap names. The
// same set of types parses the bootstrap and builds the transport: plain
// GRPCTransport does not know the type and ignores the entry, as gRPC
// ignores call credentials it does not know, so no key is sent. The
// management server here records the key each ADS stream carries.
func ExampleGRPCTransportWithCredentials() {
	keys := make(chan string, 1)
	addr, stop := serveADSWith(greetingCache("a"), grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
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
	for _, transport := range []struct {
		name string
		tb   engine.TransportBuilder
	}{
		{"GRPCTransportWithCredentials(creds)", engine.GRPCTransportWithCredentials(creds)},
		{"GRPCTransport()", engine.GRPCTransport()},
	} {
		e, err := engine.New(engine.Config{Bootstrap: bs, Registry: registry.MustNew(greetingType), Transport: transport.tb})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(transport.name+":", firstGreeting(e, "a"), "| x-api-key seen by the server:", <-keys)
		e.Close()
		select {
		case <-keys: // a later stream of the closed engine, should it have reconnected
		default:
		}
	}
	// Output:
	// GRPCTransportWithCredentials(creds): hi from a | x-api-key seen by the server: [s3cret]
	// GRPCTransport(): hi from a | x-api-key seen by the server: []
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
	addr, stop := serveADS(greetingCache("a"))
	defer stop()

	var first firstMessage
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)},
			Node:    bootstrap.Node{ID: "example-node"},
		},
		Registry:  registry.MustNew(greetingType),
		Transport: recordingBuilder{engine.GRPCTransport(), &first},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	fmt.Println(firstGreeting(e, "a"))
	fmt.Println("the first request went in", first.buffers.Load(), "buffers")
	// Output:
	// hi from a
	// the first request went in 2 buffers
}

// firstMessage records how many buffers the first message sent came in.
type firstMessage struct{ buffers atomic.Int64 }

func (f *firstMessage) sent(msg net.Buffers) { f.buffers.CompareAndSwap(0, int64(len(msg))) }

type recordingBuilder struct {
	engine.TransportBuilder
	first *firstMessage
}

func (b recordingBuilder) Build(s bootstrap.ServerConfig, opts engine.TransportOptions) (engine.Transport, error) {
	t, err := b.TransportBuilder.Build(s, opts)
	if err != nil {
		return nil, err
	}
	return recordingTransport{t, b.first}, nil
}

type recordingTransport struct {
	engine.Transport
	first *firstMessage
}

func (t recordingTransport) NewStream(ctx context.Context, method string) (engine.Stream, error) {
	st, err := t.Transport.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	rs := recordingStream{st, t.first}
	if bs, ok := st.(engine.BuffersSender); ok {
		return recordingBuffersStream{rs, bs}, nil
	}
	return rs, nil
}

type recordingStream struct {
	engine.Stream
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
	bs engine.BuffersSender
}

func (s recordingBuffersStream) SendBuffers(msg net.Buffers) error {
	s.first.sent(msg)
	return s.bs.SendBuffers(msg)
}
