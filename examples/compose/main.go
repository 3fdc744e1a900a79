package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func main() {
	log.SetFlags(0)
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()

	// Two management servers with disjoint resources.
	srvA, err := xdstest.Start(xdstest.Options{Name: "A"})
	if err != nil {
		return err
	}
	defer srvA.Close()
	srvA.Set(
		xdstest.R("shop.example.com", xdstest.Listener("shop.example.com", "shop-routes")),
		xdstest.R("shop-routes", xdstest.RouteConfig("shop-routes", "backend")),
		xdstest.R("backend-endpoints", xdstest.ClusterLoadAssignment("backend-endpoints",
			xdstest.Locality{Zone: "a", Endpoints: []string{"10.0.0.1:8080", "10.0.0.2:8080"}})),
		xdstest.R("backend-canary-endpoints", xdstest.ClusterLoadAssignment("backend-canary-endpoints",
			xdstest.Locality{Zone: "b", Endpoints: []string{"10.0.1.1:8080"}})),
	)
	srvB, err := xdstest.Start(xdstest.Options{Name: "B"})
	if err != nil {
		return err
	}
	defer srvB.Close()
	srvB.Set(xdstest.R("backend", xdstest.Cluster("backend", "backend-endpoints")))

	// One engine per server. Each is a complete xDS client with its own
	// ADS stream, cache and error handling.
	reg := builtin.Registry()
	engA, err := newEngine(srvA.Addr(), reg)
	if err != nil {
		return err
	}
	defer engA.Close()
	engB, err := newEngine(srvB.Addr(), reg)
	if err != nil {
		return err
	}
	defer engB.Close()

	// The Mux is the one Source the rest of the program sees. Each engine
	// is wrapped to note which server delivered each resource, since a
	// resource does not say where it came from.
	origins := &originMap{m: map[registry.Ref]string{}}
	fromA, fromB := origins.tag("A", engA), origins.tag("B", engB)
	mux := &engine.Mux{Types: reg, Route: func(typeURL, _ string) engine.Source {
		if typeURL == cds.TypeURL {
			return fromB
		}
		return fromA
	}}
	fmt.Fprintln(out, "mux: Cluster → engine on server B, everything else → engine on server A")

	// Watch the graph. The callback runs on the graph's own goroutine; it
	// hands each graph to run, which prints it.
	type update struct {
		g   *graph.Graph
		err error
	}
	updates := make(chan update)
	stop := make(chan struct{})
	defer close(stop) // unblocks a callback still trying to deliver
	root := registry.Ref{TypeURL: lds.TypeURL, Name: "shop.example.com"}
	cancelGraph := graph.Watch(mux, root, graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
		done()
		select {
		case updates <- update{g, err}:
		case <-stop:
		}
	}))
	defer cancelGraph()
	next := func(title string) error {
		fmt.Fprintf(out, "\n%s\n", title)
		select {
		case u := <-updates:
			if u.err != nil {
				return fmt.Errorf("graph: %w", u.err)
			}
			printGraph(out, reg, origins, u.g)
			return nil
		case <-ctx.Done():
			return fmt.Errorf("waiting for the graph: %w", ctx.Err())
		}
	}

	if err := next("graph (server, resource):"); err != nil {
		return err
	}
	// The servers' side of the story: which types each was asked for.
	fmt.Fprintf(out, "server A was asked for: %s\n", strings.Join(askedFor(reg, srvA), ", "))
	fmt.Fprintf(out, "server B was asked for: %s\n", strings.Join(askedFor(reg, srvB), ", "))

	// A change on B alone: the cluster moves to the canary endpoints. The
	// graph subscribes to the new ClusterLoadAssignment on A, drops the
	// old one, and delivers once the new one has arrived.
	srvB.Update(cds.TypeURL, xdstest.R("backend", xdstest.Cluster("backend", "backend-canary-endpoints")))
	if err := next("server B: cluster backend now uses EDS backend-canary-endpoints\ngraph (server, resource):"); err != nil {
		return err
	}

	// B goes down. Its engine keeps the cached cluster and reports an
	// ambient error (gRFC A88); the graph stays complete, and the error
	// shows on the node that came from B only.
	srvB.Stop()
	return next("server B: down\ngraph (server, resource):")
}

// askedFor returns the names of the types srv received requests for.
func askedFor(reg *registry.Registry, srv *xdstest.Server) []string {
	var names []string
	for _, req := range srv.Requests() {
		t, _ := reg.Lookup(req.GetTypeUrl())
		if !slices.Contains(names, t.ShortName()) {
			names = append(names, t.ShortName())
		}
	}
	slices.Sort(names)
	return names
}

func newEngine(addr string, reg *registry.Registry) (*engine.Engine, error) {
	return engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)},
			Node:    bootstrap.Node{ID: "compose-example"},
		},
		Registry: reg,
	})
}

// originMap records which server each resource last came from.
type originMap struct {
	mu sync.Mutex
	m  map[registry.Ref]string
}

// tag wraps src: every resource it delivers is recorded as coming from
// server before the watcher sees it: engine.NewSource makes a Source of a
// registry and a function, so wrapping one takes a few lines.

func (o *originMap) tag(server string, src engine.Source) engine.Source {
	return engine.NewSource(src.Registry(), func(typeURL, name string, w engine.ResourceWatcher) func() {
		ref := registry.Ref{TypeURL: typeURL, Name: name}
		return src.Watch(typeURL, name, engine.WatcherFuncs{
			ResourceChanged: func(r registry.Resource, err error, done func()) {
				if err == nil {
					o.mu.Lock()
					o.m[ref] = server
					o.mu.Unlock()
				}
				w.OnResourceChanged(r, err, done)
			},
			AmbientError: w.OnAmbientError,
		})
	})
}

func (o *originMap) of(ref registry.Ref) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[ref]
}

// printGraph prints the graph as an indented tree, one resource a line:
// the server it came from, its type and name, and a summary; an ambient
// error follows its resource.
func printGraph(out io.Writer, reg *registry.Registry, origins *originMap, g *graph.Graph) {
	g.Walk(func(depth int, n *graph.Node) {
		indent := strings.Repeat("  ", depth)
		t, _ := reg.Lookup(n.Ref.TypeURL)
		fmt.Fprintf(out, "  %s  %s%s %s: %v\n", origins.of(n.Ref), indent, t.ShortName(), n.Ref.Name, n.Resource)
		if n.Ambient != nil {
			// Code and kind only: the full message names the server's
			// address, which changes from run to run.
			fmt.Fprintf(out, "     %s  ! ambient error: %v, %v\n", indent, status.Code(n.Ambient), engine.KindOf(n.Ambient))
		}
	})
}
