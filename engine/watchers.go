package engine

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/registry"
)

// The watchers' side of the engine: what a watcher implements, typed
// watchers, and what an update carries.

// ResourceWatcher receives the updates of one watched resource (gRFC A88).
//
// The engine calls watchers one at a time, on one goroutine per engine,
// with no lock held, so a callback may call Watch and cancel functions.
// Each call passes done, to be called exactly once, possibly after
// returning: the server's next response is read once every watcher
// notified of the last has called done (flow control).
type ResourceWatcher interface {
	// OnResourceChanged delivers a new resource or an error. Exactly one
	// of r and err is non-nil. An error after a valid resource means:
	// stop using the resource.
	OnResourceChanged(r registry.Resource, err error, done func())
	// OnAmbientError reports an error that leaves the last resource in
	// use: the server is unreachable, an update was NACKed, and so on. A
	// nil err clears the condition.
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
	TypedWatcherFuncs[registry.Resource](w).OnResourceChanged(r, err, done)
}

// OnAmbientError calls AmbientError.
func (w WatcherFuncs) OnAmbientError(err error, done func()) {
	TypedWatcherFuncs[registry.Resource](w).OnAmbientError(err, done)
}

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

// Update is one delivery to a watcher, with where it came from.
type Update struct {
	// Resource and Err are what OnResourceChanged receives: exactly one
	// is non-nil.
	Resource registry.Resource
	Err      error
	// Version is the version_info of the response that carried Resource
	// or caused Err ("" when none did: a does-not-exist timer, a lost
	// server).
	Version string
	// Server is the bootstrap entry (of those sharing a URI, the one
	// used) of the server that sent Resource or caused Err, zero when none
	// did: the server a "self" config source in the resource means, such
	// as a Cluster's lrs_server (package lrs).
	Server bootstrap.ServerConfig
	// Received is when the engine received Resource, or learned of Err,
	// on Config.Clock.
	Received time.Time
	// FromStore says that Resource comes from the last-known-good store
	// (Config.Store), kept from an earlier run, because no server of its
	// authority has answered; Version, Server and Received are then the
	// kept ones. An ambient error follows it, until a server answers.
	FromStore bool
}

// UpdateWatcher is an optional interface of a [ResourceWatcher]: the
// engine calls OnUpdate, with the update's version, server and time, in
// place of OnResourceChanged. Ambient errors still go to OnAmbientError.
type UpdateWatcher interface {
	ResourceWatcher
	OnUpdate(u Update, done func())
}

// TypedUpdate is an [Update] whose resource is of Go type T.
type TypedUpdate[T any] struct {
	Resource  T
	Err       error
	Version   string
	Server    bootstrap.ServerConfig
	Received  time.Time
	FromStore bool
}

// TypedUpdateWatcher is the optional interface of a [TypedWatcher] that
// wants each update's version, server and time: [Watch] calls OnUpdate in
// place of OnResourceChanged.
type TypedUpdateWatcher[T any] interface {
	TypedWatcher[T]
	OnUpdate(u TypedUpdate[T], done func())
}

// deliverChange calls the watcher's OnUpdate if it has one, else
// OnResourceChanged.
func deliverChange(w ResourceWatcher, u Update, done func()) {
	if uw, ok := w.(UpdateWatcher); ok {
		uw.OnUpdate(u, done)
		return
	}
	w.OnResourceChanged(u.Resource, u.Err, done)
}

// OnUpdate converts the update to T for the TypedWatcher.
func (t typedWatcher[T]) OnUpdate(u Update, done func()) {
	tu := TypedUpdate[T]{Err: u.Err, Version: u.Version, Server: u.Server, Received: u.Received, FromStore: u.FromStore}
	if u.Err == nil {
		if v, ok := u.Resource.(T); ok {
			tu.Resource = v
		} else {
			tu.Err = &Error{Kind: KindUnknownType, Code: codes.FailedPrecondition, TypeURL: t.typeURL, Name: t.name,
				Err: fmt.Errorf("decoded resource is %T, watcher wants %T", u.Resource, tu.Resource)}
		}
	}
	if uw, ok := t.w.(TypedUpdateWatcher[T]); ok {
		uw.OnUpdate(tu, done)
		return
	}
	t.w.OnResourceChanged(tu.Resource, tu.Err, done)
}
