package lds

import (
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine"
)

// Watcher receives the updates of one Listener.
type Watcher = engine.TypedWatcher[*Listener]

// Watch watches the Listener called name on src, a client's or a
// server's: [Listener.IsServer] tells them apart. The calling contract,
// including done and the use of cancel from inside a callback, is
// engine.Source's.
func Watch(src engine.Source, name string, w Watcher) (cancel func()) {
	return engine.Watch[*Listener](src, TypeURL, name, w)
}

// WatchServer watches the Listener called name on src for a gRPC server,
// which names it with bootstrap.Bootstrap.ServerListenerName. It is Watch
// but for an API listener, which a server cannot use: that reaches w as
// an *engine.Error of kind KindUnknownType (FAILED_PRECONDITION), as a
// resource of the wrong Go type reaches a typed watcher. So every
// Listener w receives has Server set.
func WatchServer(src engine.Source, name string, w Watcher) (cancel func()) {
	s := serverOnly{name: name, w: w}
	// An engine's errors end with its node ID; this one should too.
	if n, ok := src.(interface{ NodeID() string }); ok {
		s.nodeID = n.NodeID()
	}
	return Watch(src, name, s)
}

type serverOnly struct {
	name, nodeID string
	w            Watcher
}

func (s serverOnly) OnResourceChanged(l *Listener, err error, done func()) {
	if err == nil && l != nil && l.Server == nil {
		l, err = nil, &engine.Error{
			Kind: engine.KindUnknownType, Code: codes.FailedPrecondition, TypeURL: TypeURL, Name: s.name, NodeID: s.nodeID,
			Err: fmt.Errorf("Listener %q is an API listener (it has api_listener), not a server's", s.name),
		}
	}
	s.w.OnResourceChanged(l, err, done)
}

func (s serverOnly) OnAmbientError(err error, done func()) { s.w.OnAmbientError(err, done) }
