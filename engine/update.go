package engine

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/registry"
)

// Update is one delivery to a watcher, with where it came from.
type Update struct {
	// Resource and Err are what OnResourceChanged receives: exactly one is
	// non-nil.
	Resource registry.Resource
	Err      error
	// Version is the version_info of the response that carried Resource,
	// or, with Err, of the response that caused it ("" when no response
	// did, as for a does-not-exist timer or a lost server).
	Version string
	// Server is the bootstrap's entry of the server that sent Resource or
	// caused Err (zero when no server did, as for an invalid resource
	// name): the server a "self" config source in the resource means,
	// such as a Cluster's lrs_server (package lrs). Two entries may share
	// a URI and differ in credentials or features; this is the one the
	// engine used.
	Server bootstrap.ServerConfig
	// Received is when the engine received Resource, or learned of Err,
	// on Config.Clock.
	Received time.Time
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
	Resource T
	Err      error
	Version  string
	Server   bootstrap.ServerConfig
	Received time.Time
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

// origin is where an update came from: its version, server and time,
// the Update's fields besides the resource and the error. The
// notifications of one response share one, so that each of them holds
// its watcher, its value and its hold on the response, and not two more
// strings and a time.
type origin struct {
	version  string
	server   *bootstrap.ServerConfig // nil when no server
	received time.Time
}

// originLocked returns the origin of a change of en for its watchers: the
// cached resource's, or the error's (err non-nil).
func (e *Engine) originLocked(en *entry, err error) *origin {
	if err == nil {
		var server *bootstrap.ServerConfig
		if en.source != nil {
			server = &en.source.server
		}
		return e.sharedOriginLocked(origin{version: en.version, server: server, received: en.updated})
	}
	var o origin
	if xe, ok := err.(*Error); ok {
		o.server = xe.server
		if f := en.fail; f != nil && xe == f.err {
			o.version, o.received = f.failedVersion, f.failedAt
		}
	}
	if o.received.IsZero() {
		o.received = e.clock.Now()
	}
	return e.sharedOriginLocked(o)
}

// sharedOriginLocked returns the last origin if it is o, else a new one,
// which becomes the last.
func (e *Engine) sharedOriginLocked(o origin) *origin {
	if last := e.lastOrigin; last != nil && *last == o {
		return last
	}
	made := o // allocated here only: o itself does not escape
	e.lastOrigin = &made
	return &made
}

// OnUpdate converts the update to T and hands it to a TypedUpdateWatcher,
// or to OnResourceChanged.
func (t typedWatcher[T]) OnUpdate(u Update, done func()) {
	tu := TypedUpdate[T]{Err: u.Err, Version: u.Version, Server: u.Server, Received: u.Received}
	if u.Err == nil {
		v, ok := u.Resource.(T)
		if !ok {
			tu.Err = &Error{
				Kind: KindUnknownType, Code: codes.FailedPrecondition, TypeURL: t.typeURL, Name: t.name,
				Err: fmt.Errorf("decoded resource is %T, watcher wants %T", u.Resource, tu.Resource),
			}
		} else {
			tu.Resource = v
		}
	}
	if uw, ok := t.w.(TypedUpdateWatcher[T]); ok {
		uw.OnUpdate(tu, done)
		return
	}
	t.w.OnResourceChanged(tu.Resource, tu.Err, done)
}
