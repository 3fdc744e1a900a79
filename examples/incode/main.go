package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/lds"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := resolve(ctx, "example.com")
	if err != nil {
		log.Fatalf("cannot resolve: %v (code %s)", err, status.Code(err))
	}
	fmt.Print(g) // listener → route configuration → clusters → endpoints
}

// resolve follows a listener to its endpoints, from the management server
// that the bootstrap in the environment names. It returns the first
// resolution or the first error, whose gRPC status code says why
// (Unavailable: the server cannot be reached; NotFound: a resource does
// not exist; InvalidArgument: one was rejected), or DeadlineExceeded when
// ctx ends first.
func resolve(ctx context.Context, listener string) (*graph.Graph, error) {
	bs, err := bootstrap.FromEnv() // GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG
	if err != nil {
		return nil, err
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry(), Target: "xds:///" + listener})
	if err != nil {
		return nil, err
	}
	defer e.Close()

	type outcome struct {
		g   *graph.Graph
		err error
	}
	first := make(chan outcome, 1)
	root := registry.Ref{TypeURL: lds.TypeURL, Name: listener}
	cancel := graph.Watch(e, root, graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
		defer done() // flow control: the next response is read once every watcher is done
		select {
		case first <- outcome{g, err}: // later outcomes, one per change, are not needed here
		default:
		}
	}))
	defer cancel()

	select {
	case o := <-first:
		return o.g, o.err
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}
