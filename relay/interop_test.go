package relay_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/gcpmatrix"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
)

// TestInterop is the interop matrix for the relay: its upstream is
// go-control-plane's server over its SnapshotCache, LinearCache and a
// MuxCache, State of the World and incremental (package gcpmatrix); the
// subscription shapes are made by downstream engines, one of each
// protocol per role: clients by name, then new clients by wildcard. Each
// cell checks that every resource reaches every downstream client (and
// a wildcard's complete signal), that the relay's requests upstream stay
// bounded once settled, and that Status says Connected within 2 s of the
// upstream's return after an outage.
func TestInterop(t *testing.T) {
	var cases []gcpmatrix.Case
	for _, cell := range gcpmatrix.Cells() {
		cases = append(cases, gcpmatrix.Case{Name: cell.Name("relay"), Run: func(c *gcpmatrix.C) { interopRelay(c, cell) }})
	}
	gcpmatrix.Run(t, cases)
}

func interopRelay(c *gcpmatrix.C, cell gcpmatrix.Cell) {
	srv, err := gcpmatrix.Start(cell.Kind)
	if err != nil {
		c.Errorf("server: %v", err)
		return
	}
	c.Cleanup(srv.Close)
	r, err := relaytest.Start(relay.Config{Upstream: engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(srv.Addr(), cell.Protocol.Features...)},
			Node:    bootstrap.Node{ID: "relay"},
		},
		Registry: builtin.Registry(),
		// Short retries, gRPC's and the engine's: the health check's 2 s
		// run from the upstream's return, and the reconnection is not
		// what it measures.
		Transport: transport.GRPC(relaytest.FastDial),
		Backoff:   func(int) time.Duration { return 20 * time.Millisecond },
		Switches:  &features.Switches{},
	}}, relaytest.Options{})
	if err != nil {
		c.Errorf("relay: %v", err)
		return
	}
	c.Cleanup(r.Close)
	// Every client is of one key (cluster "blue"): they share the relay's
	// one engine, whose upstream subscriptions the shapes make.
	client := func(name string, delta bool) []gcpmatrix.Client {
		bs, err := bootstrap.Parse(r.Bootstrap(relaytest.BootstrapOptions{NodeID: name, Cluster: "blue", Delta: delta}))
		if err != nil {
			c.Errorf("client %s: %v", name, err)
			return nil
		}
		e, err := engine.New(engine.Config{
			Bootstrap: bs,
			Registry:  builtin.Registry(),
			Transport: transport.GRPC(relaytest.FastDial),
			Backoff:   func(int) time.Duration { return 20 * time.Millisecond },
			Switches:  &features.Switches{},
		})
		if err != nil {
			c.Errorf("client %s: %v", name, err)
			return nil
		}
		c.Cleanup(func() { e.Close() })
		return []gcpmatrix.Client{{Name: name, Engine: e}}
	}
	gcpmatrix.Check(c, cell, srv, gcpmatrix.Subject{
		ByName: append(client("sotw-by-name", false), client("delta-by-name", true)...),
		Wildcards: func() []gcpmatrix.Client {
			return append(client("sotw-wildcard", false), client("delta-wildcard", true)...)
		},
		Health: func() (bool, error) {
			st := r.Relay().Status()
			if len(st) != 1 {
				return false, fmt.Errorf("%d aggregation keys, want 1", len(st))
			}
			return st[0].Connected, st[0].Err
		},
	})
}
