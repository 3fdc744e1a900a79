package engine_test

import (
	"fmt"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// updateWatcher wants to know where each greeting came from.
type updateWatcher struct{ updates chan engine.Update }

func (w updateWatcher) OnResourceChanged(r registry.Resource, err error, done func()) {
	w.OnUpdate(engine.Update{Resource: r, Err: err}, done)
}
func (w updateWatcher) OnAmbientError(_ error, done func()) { done() }
func (w updateWatcher) OnUpdate(u engine.Update, done func()) {
	w.updates <- u
	done()
}

func ExampleUpdateWatcher() {
	e, stop := greetingEngine("a")
	defer stop()
	w := updateWatcher{updates: make(chan engine.Update, 1)}
	defer e.Watch(greetingTypeURL, "a", w)()
	u := <-w.updates
	fmt.Println(u.Resource.(*Greeting).Text, "| version", u.Version != "", "| from the bootstrap's server:", u.Server.URI != "")
	// Output: hi from a | version true | from the bootstrap's server: true
}

func ExampleEngine_ResourceStatus() {
	e, stop := greetingEngine("a")
	defer stop()
	w := updateWatcher{updates: make(chan engine.Update, 1)}
	defer e.Watch(greetingTypeURL, "a", w)()
	<-w.updates
	st := e.ResourceStatus(greetingTypeURL, "a")
	fmt.Println(st.GetName(), st.GetClientStatus())
	fmt.Println(e.ResourceStatus(greetingTypeURL, "not-watched") == nil)
	// Output:
	// a ACKED
	// true
}

func ExampleEngine_Authorities() {
	e, stop := greetingEngine("a")
	defer stop()
	w := updateWatcher{updates: make(chan engine.Update, 1)}
	defer e.Watch(greetingTypeURL, "a", w)()
	u := <-w.updates
	for _, a := range e.Authorities() {
		fmt.Println("old-style:", a.OldStyle, "| active is the first server:", a.Active == a.Servers[0] && a.Active == u.Server.URI, "| connected:", a.Connected)
	}
	// Output: old-style: true | active is the first server: true | connected: true
}

func ExampleDefaultBackoff() {
	cfg := engine.Config{
		// The default, spelled out: the delay before each retry, waited
		// on Config.Clock.
		Backoff: engine.DefaultBackoff,
	}
	d := cfg.Backoff(0)
	fmt.Println(d >= 800e6 && d <= 1200e6)
	// Output: true
}
