package engine_test

import (
	"fmt"
	"io"
	"log"
	"net"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// ExampleKindOf sorts the errors a watcher gets by what can be done about
// them: a name or a type the program got wrong is not fixed by waiting,
// while a server that cannot be reached may come back, and the engine
// keeps trying. KindOf finds the engine's error through any wrapping.
func ExampleKindOf() {
	// A port nothing listens on: connections are refused.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()

	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: "n1"}},
		Registry:  registry.MustNew(greetingType),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	errs := make(chan error, 16)
	w := engine.WatcherFuncs{ResourceChanged: func(_ registry.Resource, err error, done func()) {
		defer done()
		select {
		case errs <- fmt.Errorf("loading greetings: %w", err):
		default: // more retries than this example reads
		}
	}}
	// An authority the bootstrap does not list.
	defer e.Watch(greetingTypeURL, "xdstp://unknown.example/example.greeter.v1.Greeting/a", w)()
	// A type the engine's registry does not hold.
	defer e.Watch("type.googleapis.com/example.greeter.v1.Farewell", "a", w)()
	// A good watch, but the server is down.
	defer e.Watch(greetingTypeURL, "a", w)()

	for range 3 {
		err := <-errs
		switch kind := engine.KindOf(err); kind {
		case engine.KindInvalidName, engine.KindUnknownAuthority, engine.KindUnknownType:
			fmt.Println("fix the program:", kind)
		default:
			fmt.Println("wait for the engine to retry:", kind)
		}
	}
	fmt.Println(engine.KindOf(io.EOF)) // not an engine error
	// Output:
	// fix the program: unknown authority
	// fix the program: unknown type
	// wait for the engine to retry: connectivity
	// unknown
}
