package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// failOnNACK is the feature. Only its Name is required; implementing
// features.ErrorPolicy hooks it into the engine's keep-or-drop decision.
//
// gRPC's own fail_on_data_errors drops on every data error (NACKs,
// LDS/CDS deletions, NOT_FOUND from the server); this one only on NACKs:
// for a client that would rather fail than keep running on a
// configuration its server has already replaced, but that keeps a
// resource the server deletes.
type failOnNACK struct{}

const failOnNACKName = "example.com/fail_on_nack"

// Name is the string that turns the feature on in a bootstrap's
// server_features.
func (failOnNACK) Name() string { return failOnNACKName }

// ErrorAction sees the decision so far (def: Keep, unless a feature listed
// earlier changed it) and returns its own. It runs with the engine's lock
// held, so it only looks at the event.
func (failOnNACK) ErrorAction(ev features.ErrorEvent, def features.Action) features.Action {
	if ev.Reason == features.ReasonNACK {
		return features.Drop
	}
	return def
}

var _ features.ErrorPolicy = failOnNACK{}

func main() {
	log.SetFlags(0)
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// bootstrap is gRPC's xDS bootstrap file, as a deployment would write it,
// with the server's address, its server_features and the node ID to fill
// in.
const bootstrapTemplate = `{
  "xds_servers": [{
    "server_uri": %q,
    "channel_creds": [{"type": "insecure"}],
    "server_features": %s
  }],
  "node": {"id": %q}
}`

// event is one watcher callback, passed to run's goroutine, which prints
// it, so the output keeps its order.
type event struct {
	cluster *cds.Cluster
	err     error
	ambient bool
}

// client is one engine with one watch on the Cluster "backend".
type client struct {
	name   string
	bs     *bootstrap.Bootstrap
	e      *engine.Engine
	events chan event
	cancel func()
}

func newClient(name, serverAddr string, serverFeatures ...string) (*client, error) {
	list, err := json.Marshal(serverFeatures)
	if err != nil {
		return nil, err
	}
	bs, err := bootstrap.Parse(fmt.Appendf(nil, bootstrapTemplate, serverAddr, list, name))
	if err != nil {
		return nil, err
	}
	e, err := engine.New(engine.Config{
		Bootstrap: bs,
		Registry:  builtin.Registry(),
		// Both clients know the feature; only a bootstrap that names it
		// turns it on.
		Features: []features.ServerFeature{failOnNACK{}},
	})
	if err != nil {
		return nil, err
	}
	c := &client{name: name, bs: bs, e: e, events: make(chan event, 8)}
	c.cancel = cds.Watch(e, "backend", engine.TypedWatcherFuncs[*cds.Cluster]{
		ResourceChanged: func(cl *cds.Cluster, err error, done func()) {
			c.events <- event{cluster: cl, err: err}
			done()
		},
		AmbientError: func(err error, done func()) {
			c.events <- event{err: err, ambient: true}
			done()
		},
	})
	return c, nil
}

func (c *client) close() {
	c.cancel()
	c.e.Close()
}

// show waits for the client's next callback and prints it. It returns
// the callback's error, if any.
func (c *client) show(ctx context.Context, out io.Writer) (watcherErr, err error) {
	var ev event
	select {
	case ev = <-c.events:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: waiting for the watcher: %w", c.name, ctx.Err())
	}
	switch {
	case ev.ambient && ev.err == nil:
		fmt.Fprintf(out, "  %-13s OnAmbientError(nil): the problem is over, keeps the cluster\n", c.name)
	case ev.ambient:
		fmt.Fprintf(out, "  %-13s OnAmbientError(%s): keeps the cluster\n", c.name, describe(ev.err))
	case ev.err != nil:
		fmt.Fprintf(out, "  %-13s OnResourceChanged(%s): stops using the cluster\n", c.name, describe(ev.err))
	default:
		fmt.Fprintf(out, "  %-13s OnResourceChanged(cluster: %v)\n", c.name, ev.cluster)
	}
	return ev.err, nil
}

// csds prints what the client's cache holds for the cluster, from the
// engine's CSDS dump.
func (c *client) csds(out io.Writer) {
	for _, x := range c.e.Dump().GetGenericXdsConfigs() {
		cached := "no cached cluster"
		if x.GetXdsConfig() != nil {
			cached = "cached version " + x.GetVersionInfo()
		}
		fmt.Fprintf(out, "  %-13s %s %s: %s\n", c.name, x.GetName(), x.GetClientStatus(), cached)
	}
}

// describe renders a watcher's error briefly: its gRPC code and kind.
func describe(err error) string {
	return fmt.Sprintf("%v, %v", status.Code(err), engine.KindOf(err))
}

func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()

	srv, err := xdstest.Start(xdstest.Options{Name: "xds"})
	if err != nil {
		return err
	}
	defer srv.Close()
	good := xdstest.Cluster("backend", "backend-endpoints")
	srv.Set(xdstest.R("backend", good))

	// "xds_v3" is in both lists because real bootstrap files have it; the
	// engine ignores names it does not know, as the format requires.
	plain, err := newClient("default", srv.Addr(), "xds_v3")
	if err != nil {
		return err
	}
	defer plain.close()
	strict, err := newClient("fail-on-nack", srv.Addr(), "xds_v3", failOnNACKName)
	if err != nil {
		return err
	}
	defer strict.close()
	clients := []*client{plain, strict}
	fmt.Fprintln(out, "bootstrap server_features:")
	for _, c := range clients {
		fmt.Fprintf(out, "  %-13s %q\n", c.name, c.bs.Servers[0].ServerFeatures)
	}

	step := func(title string) error {
		fmt.Fprintf(out, "\n%s\n", title)
		var cause error
		for _, c := range clients {
			werr, err := c.show(ctx, out)
			if err != nil {
				return err
			}
			// Every error a watcher gets is an *engine.Error; its full
			// message also names the server and the node ID.
			var xe *engine.Error
			if errors.As(werr, &xe) {
				cause = xe.Err
			}
		}
		if cause != nil {
			fmt.Fprintf(out, "  the error:    %v\n", cause)
		}
		return nil
	}

	if err := step("server: version 1, a valid cluster"); err != nil {
		return err
	}

	// MAGLEV is a load balancing policy gRPC does not support: the Cluster
	// type's validator rejects it, and both clients NACK version 2.
	bad := xdstest.Cluster("backend", "backend-endpoints")
	bad.LbPolicy = clusterpb.Cluster_MAGLEV
	srv.Update(cds.TypeURL, xdstest.R("backend", bad))
	if err := step("server: version 2, lb_policy MAGLEV (invalid)"); err != nil {
		return err
	}
	fmt.Fprintln(out, "CSDS:")
	for _, c := range clients {
		c.csds(out)
	}

	// The server fixes its mistake by sending version 1's cluster again.
	// The default client still holds it, so only its ambient error clears;
	// the other gets the cluster back.
	srv.Update(cds.TypeURL, xdstest.R("backend", good))
	if err := step("server: version 3, the valid cluster again"); err != nil {
		return err
	}
	fmt.Fprintln(out, "CSDS:")
	for _, c := range clients {
		c.csds(out)
	}
	return nil
}
