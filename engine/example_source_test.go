package engine_test

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// greet is code that consumes greetings from any Source: an engine in
// production, something else in its tests.
func greet(src engine.Source, name string) string {
	got := make(chan string, 1)
	cancel := engine.Watch(src, greetingTypeURL, name, engine.TypedWatcherFuncs[*Greeting]{
		ResourceChanged: func(g *Greeting, err error, done func()) {
			defer done()
			if err != nil {
				got <- fmt.Sprintf("no greeting (%v, %v)", engine.KindOf(err), errors.Unwrap(err))
				return
			}
			got <- g.Text
		},
	})
	defer cancel()
	return <-got
}

// ExampleNewSource makes a Source of fixed resources, so that code which
// watches a Source runs without a management server: in its tests, or
// where the configuration comes from a file. The watch function answers
// at once, as an engine answers a watch of a cached resource.
func ExampleNewSource() {
	fixed := map[string]*Greeting{"a": {Name: "a", Text: "hi from a file"}}
	src := engine.NewSource(registry.MustNew(greetingType), func(typeURL, name string, w engine.ResourceWatcher) (cancel func()) {
		if g, ok := fixed[name]; ok {
			w.OnResourceChanged(g, nil, func() {})
		} else {
			w.OnResourceChanged(nil, &engine.Error{
				Kind: engine.KindDoesNotExist, Code: codes.NotFound, TypeURL: typeURL, Name: name,
				Err: errors.New("not in the file"),
			}, func() {})
		}
		return func() {}
	})
	fmt.Println(greet(src, "a"))
	fmt.Println(greet(src, "b"))
	fmt.Println(src.Registry().TypeURLs())
	// Output:
	// hi from a file
	// no greeting (does not exist, not in the file)
	// [type.googleapis.com/example.greeter.v1.Greeting]
}
