package engine

import (
	"fmt"
	"slices"
	"sync/atomic"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine/internal/wire"
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
	typ := e.types[typeURL]
	if typ == nil {
		cause := fmt.Errorf("resource type %q is not registered", typeURL)
		if _, registered := e.reg.Lookup(typeURL); registered {
			cause = fmt.Errorf("resource type %q is switched off by the engine's switches (Config.Switches, or gRPC's GRPC_EXPERIMENTAL_XDS_* environment variables)", typeURL)
		}
		e.failWatch(w, &Error{Kind: KindUnknownType, Code: codes.FailedPrecondition, TypeURL: typeURL, Name: name,
			NodeID: e.nodeID, Err: cause})
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

func (e *Engine) lookupType(typeURL string) (*registry.ResourceType, bool) {
	t := e.types[typeURL]
	return t, t != nil
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
	typeURL := typ.TypeURL
	byName := a.entriesLocked(typeURL)
	en := byName[key]
	created := en == nil
	if created {
		en = made
		*en = entry{typ: typ, name: key, auth: a, order: a.marked[typeURL]}
		byName[key] = en
		en.order.pushBack(en)
		e.shapeGen++
		for _, ww := range a.wildcards[typeURL] {
			holdForWildcard(ww, en)
		}
	}
	h.entry = en
	wasOrphan := en.orphaned
	en.orphaned = false
	en.watchers = append(en.watchers, h)
	if created || wasOrphan {
		e.subscribeLocked(en, created)
		e.serveStoredLocked(en)
	}
	e.deliverCurrentLocked(h)
}

// subscribeLocked puts a new or re-watched entry on the wire on every
// channel of its authority, connecting the first server if needed.
func (e *Engine) subscribeLocked(en *entry, isNew bool) {
	a := en.auth
	if len(a.channels) == 0 {
		e.addChannelLocked(a)
	}
	for _, c := range a.channels {
		c.nameChangedLocked(en.typ.TypeURL, en.name)
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
	e.shapeGen++
	e.activeGen++
	return c
}

// deliverCurrentLocked tells a new watcher what the others know: the
// cached resource, then the ambient error (A88), or why there is none.
func (e *Engine) deliverCurrentLocked(h *watch) {
	en := h.entry
	if en.value != nil {
		e.scheduleLocked(&notice{h: h, resource: en.value, origin: e.originLocked(en, nil)}, nil)
		if amb := en.ambientError(); amb != nil {
			e.scheduleLocked(&notice{h: h, err: amb, isAmbient: true}, nil)
		}
		return
	}
	err := en.lastError()
	if act := en.auth.active(); err == nil && act != nil && act.status != nil && !e.storeHoldsLocked() {
		err = e.channelErrorFor(act, en)
	}
	if err != nil {
		e.scheduleLocked(&notice{h: h, err: err, origin: e.originLocked(en, err)}, nil)
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
	written := false
	for _, c := range en.auth.channels {
		if sn := c.subscribed[en.typ.TypeURL]; named && c.stream != nil && sn != nil && sn.Handed() {
			written = true
		}
	}
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
	delete(byName, en.name)
	e.forgetLocked(en)
	en.removed = true
	en.order.remove(en)
	e.shapeGen++
	if len(byName) == 0 {
		delete(a.resources, en.typ.TypeURL)
		delete(a.marked, en.typ.TypeURL)
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
	e.activeGen++
	for _, c := range chans {
		c.releaseLocked(a)
	}
}

// notice is one watcher callback, run on the serializer: a change
// (resource or err, with its origin) or an ambient error. One object holds
// all it needs, its gate hold too: a large response makes one per resource.
type notice struct {
	h         *watch
	resource  registry.Resource
	err       error
	origin    *origin // nil for an ambient error
	isAmbient bool
	hold      wire.Hold
	done      func()
}

func (n *notice) update() Update {
	u := Update{Resource: n.resource, Err: n.err}
	if o := n.origin; o != nil {
		u.Version, u.Received, u.FromStore = o.version, o.received, o.stored
		if o.server != nil {
			u.Server = *o.server
		}
	}
	return u
}

// About names the notice's resource in a report of slow watchers.
func (n *notice) About() wire.Pending {
	return wire.Pending{TypeURL: n.h.entry.typ.TypeURL, Name: n.h.entry.name}
}

func noDone() {}

func (n *notice) Run() {
	switch {
	case n.h.canceled.Load():
		n.done()
	case n.isAmbient:
		n.h.w.OnAmbientError(n.err, n.done)
	default:
		// deliverChange, without an Update for a watcher that takes only
		// the resource and error: an Update built and passed is read back
		// wide from the narrow stores that just wrote it, a stall each.
		if uw, ok := n.h.w.(UpdateWatcher); ok {
			uw.OnUpdate(n.update(), n.done)
		} else {
			n.h.w.OnResourceChanged(n.resource, n.err, n.done)
		}
	}
}

// scheduleLocked schedules n. A non-nil gate holds the stream's next read
// until the callback calls done.
func (e *Engine) scheduleLocked(n *notice, gate *wire.Gate) {
	n.done = noDone
	if gate != nil {
		gate.Hold(&n.hold, n)
		n.done = n.hold.Release
	}
	if !e.ser.ScheduleJob(n) {
		n.done()
	}
}

func (e *Engine) notifyChangedLocked(en *entry, r registry.Resource, err error, gate *wire.Gate) {
	if len(en.watchers) == 0 {
		return
	}
	o := e.originLocked(en, err)
	for _, h := range en.watchers {
		n := e.newNoticeLocked(gate)
		n.h, n.resource, n.err, n.origin = h, r, err, o
		e.scheduleLocked(n, gate)
	}
}

func (e *Engine) notifyAmbientLocked(en *entry, err error, gate *wire.Gate) {
	for _, h := range en.watchers {
		n := e.newNoticeLocked(gate)
		n.h, n.err, n.isAmbient = h, err, true
		e.scheduleLocked(n, gate)
	}
}

const maxNoticeChunk = 64

// newNoticeLocked returns a zero notice. Those of one response (gate) come
// from chunks doubling from 1 to maxNoticeChunk: one allocation per chunk,
// one for a one-resource response. A chunk lives until its last notice ran.
func (e *Engine) newNoticeLocked(gate *wire.Gate) *notice {
	if gate == nil {
		return new(notice)
	}
	if e.noticeGate != gate {
		e.noticeGate, e.notices, e.noticeChunk = gate, nil, 0
	}
	if len(e.notices) == 0 {
		e.noticeChunk = min(max(2*e.noticeChunk, 1), maxNoticeChunk)
		e.notices = make([]notice, e.noticeChunk)
	}
	n := &e.notices[0]
	e.notices = e.notices[1:]
	return n
}
