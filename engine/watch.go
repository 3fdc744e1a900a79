package engine

import (
	"fmt"
	"slices"
	"sync/atomic"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/registry"
)

// watch is one Watch call's registration.
type watch struct {
	w        ResourceWatcher
	entry    *entry
	canceled atomic.Bool
	wild     bool // a wildcard's (WatchAll), not subscribed by name
}

// watchedEntry is a watch and the entry it makes if none exists: one
// allocation, not two, since watches make most entries.
type watchedEntry struct {
	first watch
	entry entry
}

// op is a Watch or cancel call, handed to the engine's lock (Engine.mu).
type op struct {
	h      *watch
	typ    *registry.ResourceType
	a      *authority
	key    string
	made   *entry    // the entry to use if the resource is not watched yet
	all    *wildcard // a WatchAll call's, instead of h
	cancel bool
}

// Watch starts watching the resource of type typeURL called name and
// returns the function that stops it (see [ResourceWatcher]). An unknown
// type, an unparsable name or an authority missing from the bootstrap
// reach the watcher as an error at once, and open no stream. Watch never
// waits for a response to be applied. After Close, it does nothing.
func (e *Engine) Watch(typeURL, name string, w ResourceWatcher) (cancel func()) {
	if w == nil {
		panic("engine: Watch with a nil watcher")
	}
	if e.closed.Load() {
		return func() {}
	}
	typ, terr := e.typeOf(typeURL, name)
	if terr != nil {
		e.failWatch(w, terr)
		return func() {}
	}
	a, key, werr := e.resolveName(typeURL, name)
	if werr != nil {
		e.failWatch(w, werr)
		return func() {}
	}
	we := &watchedEntry{first: watch{w: w}}
	h := &we.first
	e.mu.Do(op{h: h, typ: typ, a: a, key: key, made: &we.entry})
	return func() {
		if h.canceled.CompareAndSwap(false, true) {
			e.mu.Do(op{h: h, cancel: true})
		}
	}
}

// typeOf returns the type of typeURL, or the error a watch of it gets.
func (e *Engine) typeOf(typeURL, name string) (*registry.ResourceType, *Error) {
	if typ := e.types[typeURL]; typ != nil {
		return typ, nil
	}
	cause := fmt.Errorf("resource type %q is not registered", typeURL)
	if _, registered := e.reg.Lookup(typeURL); registered {
		cause = fmt.Errorf("resource type %q is switched off by the engine's switches (Config.Switches, or gRPC's GRPC_EXPERIMENTAL_XDS_* environment variables)", typeURL)
	}
	return nil, &Error{Kind: KindUnknownType, Code: codes.FailedPrecondition, TypeURL: typeURL, Name: name, NodeID: e.nodeID, Err: cause}
}

func (e *Engine) failWatch(w ResourceWatcher, err *Error) {
	e.log.Warn("xDS watch rejected", "type", err.TypeURL, "name", err.Name, "error", err)
	u := Update{Err: err, Received: e.clock.Now()}
	e.ser.Schedule(func() { deliverChange(w, u, func() {}) })
}

func (e *Engine) applyOpLocked(o op) {
	if e.closed.Load() {
		return
	}
	switch {
	case o.all != nil && o.cancel:
		e.cancelAllLocked(o.all, o.typ)
	case o.all != nil:
		if !o.all.canceled.Load() {
			e.watchAllLocked(o.all, o.typ)
		}
	case o.cancel:
		e.cancelLocked(o.h)
	case !o.h.canceled.Load():
		e.watchLocked(o.h, o.typ, o.a, o.key, o.made)
	}
}

func (e *Engine) watchLocked(h *watch, typ *registry.ResourceType, a *authority, key string, made *entry) {
	en := a.resources[typ.TypeURL][key]
	created := en == nil
	if created {
		en = made
		e.addEntryLocked(en, a, typ, key)
	}
	h.entry = en
	wasOrphan := en.orphaned
	en.orphaned = false
	en.watchers = append(en.watchers, h)
	if created || wasOrphan {
		e.subscribeLocked(a, typ.TypeURL, key, created)
		e.serveStoredLocked(en)
	}
	e.deliverCurrentLocked(h)
}

// addEntryLocked makes en the entry of key, held by the authority's
// wildcards of its type.
func (e *Engine) addEntryLocked(en *entry, a *authority, typ *registry.ResourceType, key string) {
	byName := a.entriesLocked(typ.TypeURL)
	*en = entry{typ: typ, name: key, auth: a}
	byName[key] = en
	e.servedGen++
	for _, ww := range a.wildcards[typ.TypeURL] {
		holdForWildcard(ww, en)
	}
}

// subscribeLocked puts a new or re-watched key on the wire on every
// channel of its authority, connecting the first server if needed.
func (e *Engine) subscribeLocked(a *authority, typeURL, key string, isNew bool) {
	if len(a.channels) == 0 {
		e.addChannelLocked(a)
	}
	for _, c := range a.channels {
		c.nameChangedLocked(typeURL, key)
	}
	// A71: a new resource while the active server fails is a reason to
	// try the next server.
	if isNew && a.active().status != nil {
		e.maybeFallbackLocked(a)
	}
}

// addChannelLocked connects the authority's next server, now its active.
func (e *Engine) addChannelLocked(a *authority) *channel {
	c := e.channelLocked(a.servers[len(a.channels)])
	c.auths[a] = struct{}{}
	a.channels = append(a.channels, c)
	e.servedGen++
	e.startStoreWaitLocked(a)
	return c
}

// deliverCurrentLocked tells a new watcher what the others know: the
// cached resource, then the ambient error (A88), or why there is none.
func (e *Engine) deliverCurrentLocked(h *watch) {
	en := h.entry
	if en.value != nil {
		e.scheduleLocked(&notice{h: h, resource: en.value, origin: e.originLocked(en, nil)})
		if amb := en.notes.ambientError(); amb != nil {
			e.scheduleLocked(&notice{h: h, err: amb, isAmbient: true})
		}
		return
	}
	err := en.notes.lastError()
	if act := en.auth.active(); err == nil && act != nil && act.status != nil && !e.storeHoldsLocked() {
		err = e.channelErrorFor(act, en)
	}
	if err != nil {
		e.scheduleLocked(&notice{h: h, err: err, origin: e.originLocked(en, err)})
	}
}

// cancelLocked removes a watch. An entry left without watchers stays,
// orphaned, until a request without it is written: a new watch before then
// keeps the resource, which the server would not send again. One no
// stream was handed goes at once.
func (e *Engine) cancelLocked(h *watch) {
	en := h.entry
	if en == nil {
		return // cancelled before its Watch was applied
	}
	named := en.named()
	if i := slices.Index(en.watchers, h); i >= 0 {
		en.watchers = slices.Delete(en.watchers, i, i+1)
	}
	if named && !en.named() { // it leaves the names subscribed
		for _, c := range en.auth.channels {
			c.nameChangedLocked(en.typ.TypeURL, en.name)
		}
	}
	if len(en.watchers) > 0 {
		return
	}
	en.orphaned = true
	written := named && slices.ContainsFunc(en.auth.channels, func(c *channel) bool {
		sn := c.subscribed[en.typ.TypeURL]
		return c.stream != nil && sn != nil && sn.wasHanded()
	})
	if !written {
		e.removeEntryLocked(en)
	}
}

// removeEntryLocked deletes an orphaned entry; an empty authority lets go
// of its channels.
func (e *Engine) removeEntryLocked(en *entry) {
	a := en.auth
	byName := a.resources[en.typ.TypeURL]
	if byName[en.name] != en {
		return
	}
	// The store keeps what it holds of en: a clean shutdown cancels every
	// watch, and the next start may need it (see Store).
	delete(byName, en.name)
	en.removed = true
	e.servedGen++
	if len(byName) == 0 {
		delete(a.resources, en.typ.TypeURL)
	}
	e.releaseIfIdleLocked(a)
}

// releaseIfIdleLocked lets go of the channels of an authority nothing is
// watched under any more.
func (e *Engine) releaseIfIdleLocked(a *authority) {
	if len(a.resources) > 0 || len(a.wildcards) > 0 {
		return
	}
	chans := a.channels
	a.channels = nil
	e.servedGen++
	for _, c := range chans {
		c.releaseLocked(a)
	}
}

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
	typ, err := e.typeOf(typeURL, "")
	if err != nil {
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
	a := e.auths.oldStyle
	a.wildcards[typ.TypeURL] = append(a.wildcards[typ.TypeURL], ww)
	for _, en := range a.resources[typ.TypeURL] {
		e.deliverCurrentLocked(holdForWildcard(ww, en))
	}
	e.subscribeLocked(a, typ.TypeURL, wildcardName, false)
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
	if len(a.wildcards[typ.TypeURL]) == 0 {
		return nil
	}
	en := new(entry)
	e.addEntryLocked(en, a, typ, key)
	return en
}

func (e *Engine) cancelAllLocked(ww *wildcard, typ *registry.ResourceType) {
	a := e.auths.oldStyle
	wws := slices.DeleteFunc(slices.Clone(a.wildcards[typ.TypeURL]), func(x *wildcard) bool { return x == ww })
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

// notifyWildcardsLocked tells an authority's wildcard watchers of their
// server's state: unreachable (err), or answering again (nil).
func (e *Engine) notifyWildcardsLocked(a *authority, err error) {
	for _, wws := range a.wildcards {
		for _, ww := range wws {
			e.scheduleLocked(&notice{h: &watch{w: wildcardEntry{ww, ""}}, err: err, isAmbient: true})
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
