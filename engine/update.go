package engine

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

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
	// ServerURI is the server that sent Resource or caused Err ("" when no
	// server did, as for an invalid resource name).
	ServerURI string
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
	Resource  T
	Err       error
	Version   string
	ServerURI string
	Received  time.Time
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

// updateLocked describes a change of en for its watchers: the cached
// resource's origin, or the error's.
func (e *Engine) updateLocked(en *entry, r registry.Resource, err error) Update {
	if err == nil {
		u := Update{Resource: r, Version: en.version, Received: en.updated}
		if en.source != nil {
			u.ServerURI = en.source.server.URI
		}
		return u
	}
	u := Update{Err: err, Received: e.clock.Now()}
	if xe, ok := err.(*Error); ok {
		u.ServerURI = xe.ServerURI
		if f := en.fail; f != nil && xe == f.err {
			u.Version, u.Received = f.failedVersion, f.failedAt
		}
	}
	if u.Received.IsZero() {
		u.Received = e.clock.Now()
	}
	return u
}

// OnUpdate converts the update to T and hands it to a TypedUpdateWatcher,
// or to OnResourceChanged.
func (t typedWatcher[T]) OnUpdate(u Update, done func()) {
	tu := TypedUpdate[T]{Err: u.Err, Version: u.Version, ServerURI: u.ServerURI, Received: u.Received}
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
