package engine_test

import (
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// timerLog is the wall clock, recording the length of every timer set on
// it.
type timerLog struct {
	engine.Clock
	mu  sync.Mutex
	set []time.Duration
}

func (c *timerLog) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	c.set = append(c.set, d)
	c.mu.Unlock()
	return c.Clock.AfterFunc(d, f)
}

func (c *timerLog) has(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.set, d)
}

// ExampleRealClock wraps the wall clock, the engine's default, to see the
// timers the engine sets: here the does-not-exist timer of a watch that a
// silent server never answers. The engine runs every wait on its Clock.
func ExampleRealClock() {
	addr, stop := serveADS(cache.NewLinearCache(greetingTypeURL)) // serves no greeting
	defer stop()
	clock := &timerLog{Clock: engine.RealClock()}
	e, err := engine.New(engine.Config{
		Bootstrap:       &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: "example-node"}},
		Registry:        registry.MustNew(greetingType),
		Clock:           clock,
		ResourceTimeout: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	fmt.Println(greet(e, "missing"))
	fmt.Println("50ms timer set on the clock:", clock.has(50*time.Millisecond))
	// Output:
	// no greeting (does not exist, resource does not exist (not received within 50ms))
	// 50ms timer set on the clock: true
}
