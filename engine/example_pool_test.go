package engine_test

import (
	"fmt"
	"log"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/types/builtin"
)

// ExampleNewPool shares one engine per data plane target (gRFC A71).
func ExampleNewPool() {
	pool, err := engine.NewPool(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("xds.example:443")}, Node: bootstrap.Node{ID: "n1"}},
		Registry:  builtin.Registry(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	a, releaseA, _ := pool.Get("xds:///a.example")
	a2, releaseA2, _ := pool.Get("xds:///a.example")
	_, releaseB, _ := pool.Get("xds:///b.example")
	fmt.Println(a == a2, pool.Targets())
	releaseA()
	releaseA2() // the last user of a.example: its engine closes
	fmt.Println(pool.Targets())
	releaseB()
	// Output:
	// true [xds:///a.example xds:///b.example]
	// [xds:///b.example]
}
