package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func main() {
	delta := flag.Bool("delta", false, "speak incremental (delta) xDS to the management servers (server feature "+features.NameDeltaXDS+")")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout, *delta); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

const (
	listenerName = "quickstart.example"
	// Endpoint collections live under their own authority, so that they
	// can fall back on reachability alone (A95).
	collectionZ1 = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpointCollection/backend/z1"
	collectionZ2 = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpointCollection/backend/z2"
)

// configuration is what a management server serves: a listener routed
// to cluster "backend", whose two localities' endpoints are LEDS
// collections.
func configuration(z1, z2 []string) []xdstest.Resource {
	return []xdstest.Resource{
		xdstest.R(listenerName, xdstest.Listener(listenerName, "route-1")),
		xdstest.R("route-1", xdstest.RouteConfig("route-1", "backend")),
		xdstest.R("backend", xdstest.Cluster("backend", "backend-endpoints")),
		xdstest.R("backend-endpoints", xdstest.ClusterLoadAssignment("backend-endpoints",
			xdstest.Locality{Zone: "z1", Collection: collectionZ1},
			xdstest.Locality{Zone: "z2", Collection: collectionZ2})),
		xdstest.Wrapped(collectionZ1, xdstest.Collection(z1...)),
		xdstest.Wrapped(collectionZ2, xdstest.Collection(z2...)),
	}
}

// run tells the story; delta makes the client speak incremental xDS to
// both servers.
func run(ctx context.Context, out io.Writer, delta bool) error {
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "[%5.2fs] "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}

	// 1. Two management servers: the fallback knows other endpoints, so
	// it is visible which one the data comes from.
	primary, err := xdstest.Start(xdstest.Options{Name: "primary"})
	if err != nil {
		return err
	}
	defer primary.Close()
	fallback, err := xdstest.Start(xdstest.Options{Name: "fallback"})
	if err != nil {
		return err
	}
	defer fallback.Close()
	primary.Set(configuration([]string{"10.0.1.1:8080"}, []string{"10.0.2.1:8080", "10.0.2.2:8080"})...)
	fallback.Set(configuration([]string{"10.9.1.1:8080"}, []string{"10.9.2.1:8080"})...)
	say("management servers: primary %s, fallback %s", primary.Addr(), fallback.Addr())

	// 2. The bootstrap file, in gRPC's format, found through
	// GRPC_XDS_BOOTSTRAP as a real client would find it.
	dir, err := os.MkdirTemp("", "xdsengine-quickstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bootstrap.json")
	if err := os.WriteFile(path, []byte(bootstrapJSON(primary.Addr(), fallback.Addr(), delta)), 0o600); err != nil {
		return err
	}
	os.Setenv(bootstrap.EnvFile, path)
	bs, err := bootstrap.FromEnv()
	if err != nil {
		return err
	}
	protocol := "State of the World"
	if delta {
		protocol = "incremental (delta)"
	}
	say("bootstrap %s: %d servers speaking %s xDS, authority endpoints.example falls back on reachability only", path, len(bs.Servers), protocol)

	reg := builtin.Registry()
	e, err := engine.New(engine.Config{
		Bootstrap: bs,
		Registry:  reg,
		Switches:  &features.Switches{},
		Target:    "xds:///" + listenerName,
		// A demo retries fast; the defaults follow gRPC's 1 s backoff.
		Backoff: func(int) time.Duration { return 200 * time.Millisecond },
		Transport: transport.GRPC(grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.2, MaxDelay: 300 * time.Millisecond},
		})),
	})
	if err != nil {
		return err
	}
	defer e.Close()

	// 3. Resolve the listener and everything it depends on.
	graphs := make(chan *graph.Graph, 16)
	errs := make(chan error, 16)
	cancel := graph.Watch(e, registry.Ref{TypeURL: lds.TypeURL, Name: listenerName},
		graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
			defer done()
			if err != nil {
				errs <- err
				return
			}
			graphs <- g
		}))
	defer cancel()
	await := func(what string, want func(*graph.Graph) bool) (*graph.Graph, error) {
		for {
			select {
			case g := <-graphs:
				if want(g) {
					return g, nil
				}
			case err := <-errs:
				say("graph error: %v", err)
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
			}
		}
	}
	withEndpoints := func(want ...string) func(*graph.Graph) bool {
		return func(g *graph.Graph) bool { return slices.Equal(endpoints(g), want) }
	}

	g, err := await("the first resolution", func(*graph.Graph) bool { return true })
	if err != nil {
		return err
	}
	say("resolved %s", chain(reg, g))
	say("the whole graph:\n%s", indent(g.String()))

	// 4. An update on the primary: one endpoint more in z2, and nothing
	// else changes.
	primary.Update(leds.TypeURL, xdstest.Wrapped(collectionZ1, xdstest.Collection("10.0.1.1:8080")),
		xdstest.Wrapped(collectionZ2, xdstest.Collection("10.0.2.1:8080", "10.0.2.2:8080", "10.0.2.3:8080")))
	if g, err = await("the update", withEndpoints("10.0.1.1:8080", "10.0.2.1:8080", "10.0.2.2:8080", "10.0.2.3:8080")); err != nil {
		return err
	}
	say("update pushed to the primary; endpoints now %v", endpoints(g))

	// 5. The primary goes down. Listener, route, cluster and assignment
	// stay in use from the cache (A71: nothing is missing), with the
	// outage as an ambient error; the endpoint collections' authority
	// falls back at once (A95).
	down := time.Now()
	primary.Stop()
	say("primary stopped")
	if g, err = await("fallback endpoints", withEndpoints("10.9.1.1:8080", "10.9.2.1:8080")); err != nil {
		return err
	}
	say("outage: %s", g.ResolutionNote(backend))
	say("fallback took over the endpoints after %v: %v; listener, route and cluster stay in use from the cache",
		time.Since(down).Round(time.Millisecond), endpoints(g))

	// 6. The primary returns: its first response makes it active again
	// and the fallback stream is closed (A71).
	back := time.Now()
	primary.Restart()
	if g, err = await("the primary's endpoints", withEndpoints("10.0.1.1:8080", "10.0.2.1:8080", "10.0.2.2:8080", "10.0.2.3:8080")); err != nil {
		return err
	}
	say("primary is back after %v: endpoints %v", time.Since(back).Round(time.Millisecond), endpoints(g))
	for fallback.OpenStreams() > 0 {
		select {
		case <-ctx.Done():
			return errors.New("the fallback stream was not closed")
		case <-time.After(10 * time.Millisecond):
		}
	}
	say("fallback stream closed; CSDS (client_scope %s):", e.Dump().GetClientScope())
	for _, c := range e.Dump().GetGenericXdsConfigs() {
		fmt.Fprintf(out, "         %-28s %-8s version %-3s %s\n", reg.ShortName(c.GetTypeUrl()), c.GetClientStatus(), c.GetVersionInfo(), c.GetName())
	}
	say("done")
	return nil
}

var backend = registry.Ref{TypeURL: cds.TypeURL, Name: "backend"}

// chain says what was resolved: the first resource at each depth, from
// the listener down, then the endpoints.
func chain(reg *registry.Registry, g *graph.Graph) string {
	var steps []string
	g.Walk(func(depth int, n *graph.Node) {
		if depth == len(steps) && n.Ref.TypeURL != eds.TypeURL {
			steps = append(steps, reg.ShortName(n.Ref.TypeURL)+" "+n.Ref.Name)
		}
	})
	return strings.Join(steps, " → ") + fmt.Sprintf(" → endpoints %v", endpoints(g))
}

// endpoints lists the addresses of the resolved assignment, locality by
// locality.
func endpoints(g *graph.Graph) []string {
	n := g.Node(registry.Ref{TypeURL: eds.TypeURL, Name: "backend-endpoints"})
	if n == nil {
		return nil
	}
	var out []string
	for _, l := range n.Resource.(*eds.ClusterLoadAssignment).Localities {
		for _, ep := range l.Endpoints {
			out = append(out, ep.Address.String())
		}
	}
	return out
}

// bootstrapJSON is the bootstrap file; with delta, every server has the
// server feature that selects incremental xDS (gRPC clients ignore it).
func bootstrapJSON(primary, fallback string, delta bool) string {
	list := "[]"
	if delta {
		list = fmt.Sprintf("[%q]", features.NameDeltaXDS)
	}
	return fmt.Sprintf(`{
  "xds_servers": [
    {"server_uri": %[1]q, "channel_creds": [{"type": "insecure"}], "server_features": %[3]s},
    {"server_uri": %[2]q, "channel_creds": [{"type": "insecure"}], "server_features": %[3]s}
  ],
  "node": {"id": "quickstart-node", "cluster": "quickstart"},
  "authorities": {
    "endpoints.example": {
      "xds_servers": [
        {"server_uri": %[1]q, "channel_creds": [{"type": "insecure"}], "server_features": %[3]s},
        {"server_uri": %[2]q, "channel_creds": [{"type": "insecure"}], "server_features": %[3]s}
      ],
      "fallback_on_reachability_only": true
    }
  }
}`, primary, fallback, list)
}

func indent(s string) string {
	return "         " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n         ")
}
