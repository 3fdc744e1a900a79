package engine_test

import (
	"fmt"
	"log"
	"strings"

	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// ExampleConfig_maxResponseBytes shows what a watcher learns when the
// server sends a response larger than the engine accepts: the error names
// the size and the setting, with code RESOURCE_EXHAUSTED, and the engine
// retries with backoff. The default, DefaultMaxResponseBytes, is 128 MiB.
func ExampleConfig_maxResponseBytes() {
	big, _ := structpb.NewStruct(map[string]any{"name": "big", "text": strings.Repeat("x", 4096)})
	addr, stop := serveADS(cache.NewLinearCache(greetingTypeURL,
		cache.WithInitialResources(map[string]cachetypes.Resource{"big": big})))
	defer stop()
	e, err := engine.New(engine.Config{
		Bootstrap:        &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: "example-node"}},
		Registry:         registry.MustNew(greetingType),
		MaxResponseBytes: 1024,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	errs := make(chan error, 1)
	cancel := e.Watch(greetingTypeURL, "big", engine.WatcherFuncs{
		ResourceChanged: func(_ registry.Resource, err error, done func()) {
			defer done()
			select {
			case errs <- err:
			default:
			}
		},
	})
	defer cancel()
	err = <-errs
	fmt.Println(status.Code(err), engine.KindOf(err))
	fmt.Println(strings.Contains(err.Error(), "exceeds the receive limit of 1024 bytes (engine.Config.MaxResponseBytes)"))
	// Output:
	// ResourceExhausted response too large
	// true
}
