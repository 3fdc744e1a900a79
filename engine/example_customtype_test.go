package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/config"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// A resource type of the user's own, unknown to the library: a greeting,
// carried as a google.protobuf.Struct under its own type URL.
const greetingTypeURL = "type.googleapis.com/example.greeter.v1.Greeting"

// Greeting is the decoded form a watcher receives.
type Greeting struct {
	Name, Text string
}

var greetingType = registry.ResourceType{
	TypeURL: greetingTypeURL,
	Name:    "Greeting",
	Decoder: registry.DecoderFunc(func(raw []byte, _ registry.DecodeOptions) (registry.DecodeResult, error) {
		var s structpb.Struct
		if err := proto.Unmarshal(raw, &s); err != nil {
			return registry.DecodeResult{}, err
		}
		g := &Greeting{Name: s.Fields["name"].GetStringValue(), Text: s.Fields["text"].GetStringValue()}
		return registry.DecodeResult{Name: g.Name, Resource: g}, nil
	}),
	Validator: registry.ValidatorFunc(func(r registry.Resource, _ registry.DecodeOptions) error {
		if r.(*Greeting).Text == "" {
			return errors.New("text: must not be empty")
		}
		return nil
	}),
}

// Example_customResourceType registers a resource type defined outside
// the library and watches it from a go-control-plane management server.
func Example_customResourceType() {
	// A go-control-plane ADS server on loopback, serving one greeting.
	hello, _ := structpb.NewStruct(map[string]any{"name": "hello", "text": "Hello, xDS!"})
	linear := cache.NewLinearCache(greetingTypeURL, cache.WithInitialResources(map[string]cachetypes.Resource{"hello": hello}))
	addr, stop := serveADS(linear)
	defer stop()

	reg, err := registry.New(greetingType)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: "example"}},
		Registry:  reg,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	got := make(chan *Greeting, 1)
	cancel := engine.Watch(e, greetingTypeURL, "hello", engine.TypedWatcherFuncs[*Greeting]{
		ResourceChanged: func(g *Greeting, err error, done func()) {
			defer done()
			if err != nil {
				log.Fatal(err)
			}
			got <- g
		},
	})
	defer cancel()
	g := <-got
	fmt.Printf("%s: %s\n", g.Name, g.Text)
	// Output: hello: Hello, xDS!
}

// serveADS runs go-control-plane's ADS server over c on a loopback port.
func serveADS(c cache.Cache) (addr string, stop func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gs := grpc.NewServer()
	discoverypb.RegisterAggregatedDiscoveryServiceServer(gs, server.NewServer(ctx, c, nil, config.DeactivateLegacyWildcard()))
	go gs.Serve(lis)
	return lis.Addr().String(), func() { cancel(); gs.Stop() }
}

// dialTo sends every connection to addr, whatever the target says, so an
// example's output can show a stable server name.
func dialTo(addr string) grpc.DialOption {
	return grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	})
}
