package engine

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/registry"
)

// Source is anything resources can be watched from: an *Engine, a *Mux,
// a *Pool's engine or a user's own composition.
type Source interface {
	// Watch starts watching a resource. cancel stops it; it is idempotent
	// and may be called from a callback. No callback of w starts after
	// cancel returns.
	Watch(typeURL, name string, w ResourceWatcher) (cancel func())
	// Registry returns the resource types the source serves, whose
	// dependencies a consumer such as the dependency-graph watch follows.
	Registry() *registry.Registry
}

// NewSource makes a Source of a registry and a watch function: for
// sources other than an Engine, such as a composition's or a test's.
func NewSource(reg *registry.Registry, watch func(typeURL, name string, w ResourceWatcher) (cancel func())) Source {
	return funcSource{reg: reg, watch: watch}
}

type funcSource struct {
	reg   *registry.Registry
	watch func(typeURL, name string, w ResourceWatcher) (cancel func())
}

func (s funcSource) Watch(typeURL, name string, w ResourceWatcher) (cancel func()) {
	return s.watch(typeURL, name, w)
}

func (s funcSource) Registry() *registry.Registry { return s.reg }

// Mux routes each watch to one of several sources, so that one Source can
// front engines on different management servers. Route returning nil
// fails the watch with a KindUnroutable error.
type Mux struct {
	// Types are the resource types the sources serve together (Registry).
	Types *registry.Registry
	Route func(typeURL, name string) Source
}

// Registry returns m.Types.
func (m *Mux) Registry() *registry.Registry { return m.Types }

// Watch routes the watch.
func (m *Mux) Watch(typeURL, name string, w ResourceWatcher) (cancel func()) {
	var src Source
	if m.Route != nil {
		src = m.Route(typeURL, name)
	}
	if src == nil {
		deliverChange(w, Update{Err: &Error{
			Kind: KindUnroutable, Code: codes.FailedPrecondition, TypeURL: typeURL, Name: name,
			Err: fmt.Errorf("no source routes this resource"),
		}, Received: time.Now()}, func() {})
		return func() {}
	}
	return src.Watch(typeURL, name, w)
}

// Interface guards.
var (
	_ Source          = (*Mux)(nil)
	_ Source          = funcSource{}
	_ Source          = (*Engine)(nil)
	_ ResourceWatcher = WatcherFuncs{}
)
