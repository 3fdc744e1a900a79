package engine_test

import (
	"fmt"
	"log"
	"time"

	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
)

// greetingServer serves greetings named by names from a go-control-plane
// server and returns an engine configured for it.
func greetingEngine(names ...string) (*engine.Engine, func()) {
	return greetingEngineOver(bootstrap.InsecureServer, names...)
}

// greetingEngineOver is greetingEngine with the server's configuration
// made by server from its address.
func greetingEngineOver(server func(addr string, features ...string) bootstrap.ServerConfig, names ...string) (*engine.Engine, func()) {
	res := map[string]cachetypes.Resource{}
	for _, n := range names {
		s, _ := structpb.NewStruct(map[string]any{"name": n, "text": "hi from " + n})
		res[n] = s
	}
	addr, stop := serveADS(cache.NewLinearCache(greetingTypeURL, cache.WithInitialResources(res)))
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{server(addr)}, Node: bootstrap.Node{ID: "example-node"}},
		Registry:  registry.MustNew(greetingType),
		Target:    "xds:///example",
	})
	if err != nil {
		log.Fatal(err)
	}
	return e, func() { e.Close(); stop() }
}

func ExampleNew() {
	bs, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "localhost:18000", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "n1"}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: registry.MustNew(greetingType)})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close() // no server is contacted until something is watched
	fmt.Println(e.NodeID(), e.Registry().TypeURLs())
	// Output: n1 [type.googleapis.com/example.greeter.v1.Greeting]
}

func ExampleEngine_Watch() {
	e, stop := greetingEngine("a")
	defer stop()
	updates := make(chan string, 1)
	cancel := e.Watch(greetingTypeURL, "a", engine.WatcherFuncs{
		ResourceChanged: func(r registry.Resource, err error, done func()) {
			defer done()
			if err != nil {
				updates <- "error: " + err.Error()
				return
			}
			updates <- r.(*Greeting).Text
		},
	})
	defer cancel()
	fmt.Println(<-updates)
	// Output: hi from a
}

func ExampleEngine_Dump() {
	e, stop := greetingEngine("a")
	defer stop()
	ready := make(chan struct{})
	e.Watch(greetingTypeURL, "a", engine.WatcherFuncs{ResourceChanged: func(_ registry.Resource, _ error, done func()) {
		done()
		close(ready)
	}})
	e.Watch(greetingTypeURL, "missing", engine.WatcherFuncs{})
	<-ready
	cc := e.Dump()
	fmt.Println("client_scope:", cc.GetClientScope())
	for _, g := range cc.GetGenericXdsConfigs() {
		fmt.Println(g.GetName(), g.GetClientStatus(), g.GetXdsConfig() != nil)
	}
	// Output:
	// client_scope: xds:///example
	// a ACKED true
	// missing REQUESTED false
}

// ExampleNew_delta speaks incremental xDS to a server: in a bootstrap
// file, the server feature "delta_xds"; in Go, ServerConfig.Delta.
// Watchers see the same as over State of the World; CSDS shows each
// resource's own version.
func ExampleNew_delta() {
	e, stop := greetingEngineOver(func(addr string, _ ...string) bootstrap.ServerConfig {
		s := bootstrap.InsecureServer(addr, features.NameDeltaXDS) // or: s.Delta = true
		return s
	}, "a")
	defer stop()
	got := make(chan string, 1)
	cancel := e.Watch(greetingTypeURL, "a", engine.WatcherFuncs{
		ResourceChanged: func(r registry.Resource, err error, done func()) {
			defer done()
			if err == nil {
				got <- r.(*Greeting).Text
			}
		},
	})
	defer cancel()
	fmt.Println(<-got)
	fmt.Println(e.ResourceStatus(greetingTypeURL, "a").GetVersionInfo() != "")
	// Output:
	// hi from a
	// true
}

// ExampleWatch shows the typed form of Watch.
func ExampleWatch() {
	e, stop := greetingEngine("a")
	defer stop()
	got := make(chan *Greeting, 1)
	cancel := engine.Watch(e, greetingTypeURL, "a", engine.TypedWatcherFuncs[*Greeting]{
		ResourceChanged: func(g *Greeting, err error, done func()) {
			defer done()
			if err == nil {
				got <- g
			}
		},
	})
	defer cancel()
	fmt.Println((<-got).Name)
	// Output: a
}

// ExampleMux routes watches to two engines on two management servers.
func ExampleMux() {
	left, stopLeft := greetingEngine("l1")
	defer stopLeft()
	right, stopRight := greetingEngine("r1")
	defer stopRight()
	src := &engine.Mux{Types: left.Registry(), Route: func(typeURL, name string) engine.Source {
		if name[0] == 'l' {
			return left
		}
		return right
	}}
	got := make(chan string, 2)
	w := engine.WatcherFuncs{ResourceChanged: func(r registry.Resource, err error, done func()) {
		defer done()
		got <- r.(*Greeting).Text
	}}
	src.Watch(greetingTypeURL, "l1", w)
	fmt.Println(<-got)
	src.Watch(greetingTypeURL, "r1", w)
	fmt.Println(<-got)
	// Output:
	// hi from l1
	// hi from r1
}

// ExampleWatcherFuncs shows the error a watcher sees when a resource never
// arrives: it carries a gRPC status code and ends with the node ID.
func ExampleWatcherFuncs() {
	e, stop := greetingEngineWithTimeout(100 * time.Millisecond)
	defer stop()
	errs := make(chan error, 1)
	e.Watch(greetingTypeURL, "nobody-serves-this", engine.WatcherFuncs{
		ResourceChanged: func(_ registry.Resource, err error, done func()) {
			defer done()
			errs <- err
		},
	})
	err := <-errs
	fmt.Println(status.Code(err), engine.KindOf(err))
	fmt.Println(err)
	// Output:
	// NotFound does not exist
	// Greeting resource "nobody-serves-this": resource does not exist (not received within 100ms) (xDS server passthrough:///xds.example.com) (node ID: example-node)
}

func greetingEngineWithTimeout(d time.Duration) (*engine.Engine, func()) {
	addr, stop := serveADS(cache.NewLinearCache(greetingTypeURL))
	e, err := engine.New(engine.Config{
		Bootstrap:       &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{{URI: "passthrough:///xds.example.com", ChannelCreds: []bootstrap.ChannelCreds{{Type: "insecure"}}}}, Node: bootstrap.Node{ID: "example-node"}},
		Registry:        registry.MustNew(greetingType),
		ResourceTimeout: d,
		Transport:       transport.GRPC(dialTo(addr)),
	})
	if err != nil {
		log.Fatal(err)
	}
	return e, func() { e.Close(); stop() }
}
