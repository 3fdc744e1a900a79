package engine

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/registry"
)

// ResourceWatcher receives the updates of one watched resource (gRFC A88).
//
// The engine calls a watcher's methods one at a time, on one goroutine
// per engine, never with a lock held, so a callback may call Watch and
// cancel functions. Each call passes done, which the watcher must call
// exactly once, possibly after returning: the engine does not read the
// next response from that server until every watcher notified of the
// previous one has called done (flow control).
type ResourceWatcher interface {
	// OnResourceChanged delivers a new resource or an error. Exactly one
	// of r and err is non-nil. An error after a valid resource means:
	// stop using the resource.
	OnResourceChanged(r registry.Resource, err error, done func())
	// OnAmbientError reports an error that does not invalidate the last
	// resource, which the watcher keeps using: the server is unreachable,
	// an update was NACKed, and so on. A nil err clears the condition.
	OnAmbientError(err error, done func())
}

// WatcherFuncs adapts functions to a ResourceWatcher. A nil field just
// calls done.
type WatcherFuncs struct {
	ResourceChanged func(r registry.Resource, err error, done func())
	AmbientError    func(err error, done func())
}

// OnResourceChanged calls ResourceChanged.
func (w WatcherFuncs) OnResourceChanged(r registry.Resource, err error, done func()) {
	if w.ResourceChanged == nil {
		done()
		return
	}
	w.ResourceChanged(r, err, done)
}

// OnAmbientError calls AmbientError.
func (w WatcherFuncs) OnAmbientError(err error, done func()) {
	if w.AmbientError == nil {
		done()
		return
	}
	w.AmbientError(err, done)
}

// Source is anything resources can be watched from: an *Engine, a *Mux,
// a *Pool's engine or a user's own composition.
type Source interface {
	// Watch starts watching a resource. The returned cancel stops it; it
	// is idempotent and may be called from inside a callback. No callback
	// of w starts after cancel returns.
	Watch(typeURL, name string, w ResourceWatcher) (cancel func())
	// Registry returns the resource types the source serves, so that a
	// consumer such as the dependency-graph watch can follow their
	// dependencies.
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

// TypedWatcher is a ResourceWatcher for resources of Go type T.
type TypedWatcher[T any] interface {
	OnResourceChanged(r T, err error, done func())
	OnAmbientError(err error, done func())
}

// TypedWatcherFuncs adapts functions to a TypedWatcher. A nil field just
// calls done.
type TypedWatcherFuncs[T any] struct {
	ResourceChanged func(r T, err error, done func())
	AmbientError    func(err error, done func())
}

// OnResourceChanged calls ResourceChanged.
func (w TypedWatcherFuncs[T]) OnResourceChanged(r T, err error, done func()) {
	if w.ResourceChanged == nil {
		done()
		return
	}
	w.ResourceChanged(r, err, done)
}

// OnAmbientError calls AmbientError.
func (w TypedWatcherFuncs[T]) OnAmbientError(err error, done func()) {
	if w.AmbientError == nil {
		done()
		return
	}
	w.AmbientError(err, done)
}

// Watch watches a resource whose decoded form is T. A resource of another
// Go type reaches w as a KindUnknownType error.
func Watch[T any](src Source, typeURL, name string, w TypedWatcher[T]) (cancel func()) {
	return src.Watch(typeURL, name, typedWatcher[T]{typeURL: typeURL, name: name, w: w})
}

type typedWatcher[T any] struct {
	typeURL, name string
	w             TypedWatcher[T]
}

func (t typedWatcher[T]) OnResourceChanged(r registry.Resource, err error, done func()) {
	t.OnUpdate(Update{Resource: r, Err: err}, done)
}

func (t typedWatcher[T]) OnAmbientError(err error, done func()) { t.w.OnAmbientError(err, done) }

// Mux routes each watch to one of several sources, so that one Source can
// front engines on different management servers. Route returning nil
// fails the watch with a KindUnroutable error.
type Mux struct {
	// Types are the resource types the sources behind the Mux serve
	// together, as Registry returns them.
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
