package engine

import (
	"fmt"
	"sync/atomic"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/registry"
)

// WildcardWatcher receives every resource of a type the servers send
// (Engine.WatchAll): each call is about the resource called name and
// means what a ResourceWatcher's would for that resource (gRFC A88); a
// deletion A88 keeps comes as an ambient error of KindDeleted. Name "" is
// the subscription as a whole: OnAmbientError("", err) when its server
// becomes unreachable; ("", nil) when it answers again, and after each
// response of the type, once every resource it changed was delivered:
// then the watcher has all the server has sent.
type WildcardWatcher interface {
	OnResourceChanged(name string, r registry.Resource, err error, done func())
	OnAmbientError(name string, err error, done func())
}

// wildcard is one WatchAll call's registration: it holds an entry of
// every resource of its type the servers send, through a watch of each.
type wildcard struct {
	w        WildcardWatcher
	canceled atomic.Bool
	watches  []*watch
}

// wildcardName is how a wildcard subscription is written on the wire.
const wildcardName = "*"

// WatchAll subscribes to every resource of a type (xDS's wildcard, as
// Envoy subscribes to Listeners and Clusters), from the servers of names
// that are not xdstp:// URIs, and returns the function that stops it.
// Resources also watched by name are delivered to both watchers; a
// wildcard sets no does-not-exist timer. gRPC's clients have no such
// watch.
func (e *Engine) WatchAll(typeURL string, w WildcardWatcher) (cancel func()) {
	if e.closed.Load() {
		return func() {}
	}
	typ := e.types[typeURL]
	if typ == nil {
		err := &Error{Kind: KindUnknownType, Code: codes.FailedPrecondition, TypeURL: typeURL, NodeID: e.nodeID,
			Err: fmt.Errorf("resource type %q is not registered, or switched off", typeURL)}
		e.ser.Schedule(func() { w.OnResourceChanged("", nil, err, func() {}) })
		return func() {}
	}
	ww := &wildcard{w: w}
	e.mu.Do(op{all: ww, typ: typ})
	return func() {
		if ww.canceled.CompareAndSwap(false, true) {
			e.mu.Do(op{all: ww, typ: typ, cancel: true})
		}
	}
}

func (e *Engine) watchAllLocked(ww *wildcard, typ *registry.ResourceType) {
	a := e.oldStyle
	a.wildcards[typ.TypeURL] = append(a.wildcards[typ.TypeURL], ww)
	for _, en := range a.resources[typ.TypeURL] {
		e.deliverCurrentLocked(holdForWildcard(ww, en))
	}
	if len(a.channels) == 0 {
		e.addChannelLocked(a)
	}
	for _, c := range a.channels {
		c.nameChangedLocked(typ.TypeURL, wildcardName)
	}
	e.useStoreLocked(a, true)
}

// holdForWildcard makes en one of the wildcard's, and returns the watch.
func holdForWildcard(ww *wildcard, en *entry) *watch {
	h := &watch{w: wildcardEntry{ww, en.name}, entry: en, wild: true}
	en.watchers = append(en.watchers, h)
	en.orphaned = false
	ww.watches = append(ww.watches, h)
	return h
}

// wildcardEntryLocked makes the entry of a resource nobody watches by
// name, for the authority's wildcards of its type, or returns nil.
func (e *Engine) wildcardEntryLocked(a *authority, typ *registry.ResourceType, key string) *entry {
	wws := a.wildcards[typ.TypeURL]
	if len(wws) == 0 {
		return nil
	}
	a.entriesLocked(typ.TypeURL)[key] = nil // the map and its order
	en := &entry{typ: typ, name: key, auth: a, order: a.marked[typ.TypeURL]}
	a.resources[typ.TypeURL][key] = en
	en.order.pushBack(en)
	e.shapeGen++
	for _, ww := range wws {
		holdForWildcard(ww, en)
	}
	return en
}

func (e *Engine) cancelAllLocked(ww *wildcard, typ *registry.ResourceType) {
	a := e.oldStyle
	wws := a.wildcards[typ.TypeURL]
	for i, x := range wws {
		if x == ww {
			wws = append(wws[:i:i], wws[i+1:]...)
		}
	}
	if a.wildcards[typ.TypeURL] = wws; len(wws) == 0 {
		delete(a.wildcards, typ.TypeURL)
		for _, c := range a.channels {
			c.nameChangedLocked(typ.TypeURL, wildcardName)
		}
	}
	for _, h := range ww.watches {
		e.cancelLocked(h)
	}
	e.releaseIfIdleLocked(a)
}

// named reports whether en is watched by name, not only through
// wildcards: only such an entry is subscribed by its name.
func (en *entry) named() bool {
	for _, h := range en.watchers {
		if !h.wild {
			return true
		}
	}
	return false
}

// notifyWildcardsLocked tells an authority's wildcard watchers of their
// server's state: unreachable (err), or answering again (nil).
func (e *Engine) notifyWildcardsLocked(a *authority, err error) {
	for _, wws := range a.wildcards {
		for _, ww := range wws {
			e.scheduleLocked(&notice{h: &watch{w: wildcardEntry{ww, ""}}, err: err, isAmbient: true}, nil)
		}
	}
}

// wildcardEntry is a wildcard's watcher of one resource.
type wildcardEntry struct {
	ww   *wildcard
	name string
}

func (x wildcardEntry) OnResourceChanged(r registry.Resource, err error, done func()) {
	if x.ww.canceled.Load() {
		done()
		return
	}
	x.ww.w.OnResourceChanged(x.name, r, err, done)
}

func (x wildcardEntry) OnAmbientError(err error, done func()) {
	if x.ww.canceled.Load() {
		done()
		return
	}
	x.ww.w.OnAmbientError(x.name, err, done)
}
