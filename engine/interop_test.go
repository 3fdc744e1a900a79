package engine_test

import (
	"testing"
	"time"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/gcpmatrix"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/xdstest"
)

// TestInterop is the interop matrix for the engine: go-control-plane's
// server over its SnapshotCache, LinearCache and a MuxCache, State of
// the World and incremental, each subscription shape (package
// gcpmatrix). Each cell checks that every resource arrives (and a
// wildcard's complete signal), that requests stay bounded once settled,
// and that the engine is Connected within 2 s of the server's return
// after an outage.
func TestInterop(t *testing.T) {
	var cases []gcpmatrix.Case
	for _, cell := range gcpmatrix.Cells() {
		cases = append(cases, gcpmatrix.Case{Name: cell.Name("engine"), Run: func(c *gcpmatrix.C) { interopEngine(c, cell) }})
	}
	gcpmatrix.Run(t, cases)
}

func interopEngine(c *gcpmatrix.C, cell gcpmatrix.Cell) {
	srv, err := gcpmatrix.Start(cell.Kind)
	if err != nil {
		c.Errorf("server: %v", err)
		return
	}
	c.Cleanup(srv.Close)
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(srv.Addr(), cell.Protocol.Features...)},
			Node:    bootstrap.Node{ID: "interop-engine"},
		},
		Registry: builtin.Registry(),
		// Short retries, gRPC's and the engine's: the health check's 2 s
		// run from the server's return, and the reconnection is not what
		// it measures.
		Transport: transport.GRPC(xdstest.FastReconnect),
		Backoff:   func(int) time.Duration { return 20 * time.Millisecond },
		Switches:  &features.Switches{},
	})
	if err != nil {
		c.Errorf("engine.New: %v", err)
		return
	}
	c.Cleanup(func() { e.Close() })
	self := []gcpmatrix.Client{{Name: "engine", Engine: e}}
	gcpmatrix.Check(c, cell, srv, gcpmatrix.Subject{
		ByName:    self,
		Wildcards: func() []gcpmatrix.Client { return self },
		Health: func() (bool, error) {
			a := e.Authorities()[0] // the old-style authority: the bootstrap's server
			return a.Connected, a.Err
		},
	})
}
