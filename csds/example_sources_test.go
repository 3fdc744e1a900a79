package csds_test

import (
	"fmt"
	"log"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/csds"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// exampleConfig is the configuration of an engine of target, with node
// ID node, on the management server cp.
func exampleConfig(cp *xdstest.Server, node, target string) engine.Config {
	return engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(cp.Addr())},
			Node:    bootstrap.Node{ID: node},
		},
		Registry: builtin.Registry(),
		Target:   target,
	}
}

// watchListener watches the listener name on src until its first update
// has arrived, so that what CSDS reports next is deterministic, and
// returns the cancel of the watch.
func watchListener(src engine.Source, name string) (cancel func()) {
	arrived := make(chan struct{})
	first := true
	cancel = lds.Watch(src, name, engine.TypedWatcherFuncs[*lds.Listener]{
		ResourceChanged: func(_ *lds.Listener, _ error, done func()) {
			defer done()
			if first { // callbacks of one watch never run concurrently
				first = false
				close(arrived)
			}
		},
	})
	<-arrived
	return cancel
}

// printConfigs prints what a CSDS source reports: one line per xDS client,
// then one per resource.
func printConfigs(configs []*statuspb.ClientConfig) {
	if len(configs) == 0 {
		fmt.Println("(no xDS client)")
	}
	for _, cc := range configs {
		fmt.Printf("%s (node %s)\n", cc.GetClientScope(), cc.GetNode().GetId())
		for _, r := range cc.GetGenericXdsConfigs() {
			fmt.Printf("  %s %s version=%q\n", r.GetName(), r.GetClientStatus(), r.GetVersionInfo())
		}
	}
}

// ExampleForEngine reports the one engine of a process that serves a
// single data plane target. The source reads the engine afresh each time
// it is asked; once the engine is closed, it keeps reporting the cache the
// engine had then (ForPool suits engines that come and go).
func ExampleForEngine() {
	cp, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	cp.Set(xdstest.R("listener.example", xdstest.Listener("listener.example", "route.example")))

	e, err := engine.New(exampleConfig(cp, "node-1", "xds:///listener.example"))
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	src := csds.ForEngine(e) // usually: csds.Register(admin, csds.ForEngine(e))

	printConfigs(src.ClientConfigs()) // nothing watched yet
	defer watchListener(e, "listener.example")()
	printConfigs(src.ClientConfigs())

	// The server moves to version 2.
	updated := make(chan struct{})
	cancel := lds.Watch(e, "listener.example", engine.TypedWatcherFuncs[*lds.Listener]{
		ResourceChanged: func(l *lds.Listener, _ error, done func()) {
			defer done()
			if l != nil && l.RouteConfigName == "route-2.example" {
				close(updated)
			}
		},
	})
	cp.Set(xdstest.R("listener.example", xdstest.Listener("listener.example", "route-2.example")))
	<-updated
	cancel()
	e.Close()
	printConfigs(src.ClientConfigs())
	// Output:
	// xds:///listener.example (node node-1)
	// xds:///listener.example (node node-1)
	//   listener.example ACKED version="1"
	// xds:///listener.example (node node-1)
	//   listener.example ACKED version="2"
}

// ExampleForPool reports every engine of a pool, one per data plane
// target, sorted by target, each with its own resources. An engine is
// reported from the first Get of its target until its last user releases
// it.
func ExampleForPool() {
	cp, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	cp.Set(
		xdstest.R("a.example", xdstest.Listener("a.example", "route.example")),
		xdstest.R("b.example", xdstest.Listener("b.example", "route.example")),
	)

	pool, err := engine.NewPool(exampleConfig(cp, "node-1", "")) // the pool sets each engine's Target
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	src := csds.ForPool(pool)
	printConfigs(src.ClientConfigs())

	release := map[string]func(){}
	for _, name := range []string{"b.example", "a.example"} {
		e, rel, err := pool.Get("xds:///" + name)
		if err != nil {
			log.Fatal(err)
		}
		defer watchListener(e, name)()
		release[name] = rel
	}
	printConfigs(src.ClientConfigs())

	release["b.example"]() // b's last user: its engine closes
	printConfigs(src.ClientConfigs())
	release["a.example"]()
	// Output:
	// (no xDS client)
	// xds:///a.example (node node-1)
	//   a.example ACKED version="1"
	// xds:///b.example (node node-1)
	//   b.example ACKED version="1"
	// xds:///a.example (node node-1)
	//   a.example ACKED version="1"
}

// ExampleSourceFunc reports two pools at once: a process in two meshes
// has one pool per mesh, each with its own bootstrap, and one admin
// server. A SourceFunc may also filter or reorder what it reports.
func ExampleSourceFunc() {
	cp, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	cp.Set(xdstest.R("listener.example", xdstest.Listener("listener.example", "route.example")))

	var pools []*engine.Pool
	for _, node := range []string{"mesh-a-node", "mesh-b-node"} {
		p, err := engine.NewPool(exampleConfig(cp, node, ""))
		if err != nil {
			log.Fatal(err)
		}
		defer p.Close()
		e, release, err := p.Get("xds:///listener.example")
		if err != nil {
			log.Fatal(err)
		}
		defer release()
		defer watchListener(e, "listener.example")()
		pools = append(pools, p)
	}

	src := csds.SourceFunc(func() []*statuspb.ClientConfig {
		var all []*statuspb.ClientConfig
		for _, p := range pools {
			all = append(all, p.Dump()...)
		}
		return all
	}) // then: csds.Register(admin, src)
	printConfigs(src.ClientConfigs())
	// Output:
	// xds:///listener.example (node mesh-a-node)
	//   listener.example ACKED version="1"
	// xds:///listener.example (node mesh-b-node)
	//   listener.example ACKED version="1"
}
