package engine

import (
	"time"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/registry"
)

// The third stage of the response path, and of every other change a
// watcher hears of: notices, scheduled under the engine's lock, run on
// the serializer outside it. While a part of a response is applied,
// Engine.gate is the response's gate, which every notice made then
// holds: the stream reads the next response once each has called done.

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

// scheduleLocked schedules n. While a response is applied (e.gate), n
// holds the stream's next read until its callback calls done.
func (e *Engine) scheduleLocked(n *notice) {
	n.done = noDone
	if e.gate != nil {
		e.gate.Hold(&n.hold, n)
		n.done = n.hold.Release
	}
	if !e.ser.ScheduleJob(n) {
		n.done()
	}
}

func (e *Engine) notifyChangedLocked(en *entry, r registry.Resource, err error) {
	if len(en.watchers) == 0 {
		return
	}
	o := e.originLocked(en, err)
	for _, h := range en.watchers {
		n := e.newNoticeLocked()
		n.h, n.resource, n.err, n.origin = h, r, err, o
		e.scheduleLocked(n)
	}
}

func (e *Engine) notifyAmbientLocked(en *entry, err error) {
	for _, h := range en.watchers {
		n := e.newNoticeLocked()
		n.h, n.err, n.isAmbient = h, err, true
		e.scheduleLocked(n)
	}
}

// newNoticeLocked returns a zero notice. A response of 10,000 resources
// makes a notice for each: those of a response (e.gate) come from
// chunks doubling from 1 to maxNoticeChunk notices, one allocation per
// chunk; a chunk lives until none of its notices is reachable.
func (e *Engine) newNoticeLocked() *notice {
	if e.gate == nil {
		return new(notice)
	}
	c := &e.noticeChunk
	if c.gate != e.gate {
		c.gate, c.free, c.size = e.gate, nil, 0
	}
	if len(c.free) == 0 {
		c.size = min(max(2*c.size, 1), maxNoticeChunk)
		c.free = make([]notice, c.size)
	}
	n := &c.free[0]
	c.free = c.free[1:]
	return n
}

// maxNoticeChunk is the most notices one chunk holds.
const maxNoticeChunk = 64

// noticeChunk is the rest of the chunk the notices of the response being
// applied (gate) come from.
type noticeChunk struct {
	gate *wire.Gate
	free []notice
	size int
}

// endNoticesLocked lets go of the response's chunk, once its notices are
// all made.
func (e *Engine) endNoticesLocked() { e.noticeChunk = noticeChunk{} }

// origin is an Update's version, server and time. The notifications of
// one response share one, rather than each holding two more strings and
// a time.
type origin struct {
	version  string
	server   *bootstrap.ServerConfig // nil when no server
	received time.Time
	stored   bool
}

// originLocked returns the origin of en's cached resource, or of err.
func (e *Engine) originLocked(en *entry, err error) *origin {
	if err == nil {
		var server *bootstrap.ServerConfig
		sv := en.storedOrigin()
		if en.source != nil {
			server = &en.source.server
		} else if sv != nil {
			server = sv.server
		}
		return e.sharedOrigin(origin{version: en.version, server: server, received: en.updated(), stored: sv != nil})
	}
	var o origin
	if xe, ok := err.(*Error); ok {
		o.server = xe.server
		if f := en.notes; f != nil && xe == f.err {
			o.version, o.received = f.failedVersion, f.failedAt
		}
	}
	if o.received.IsZero() {
		o.received = e.clock.Now()
	}
	return e.sharedOrigin(o)
}

// sharedOrigin returns the last origin made if it equals o, else a new
// one, which becomes the last: the notifications of one response, and
// those of one resource's watchers, share one.
func (e *Engine) sharedOrigin(o origin) *origin {
	if e.lastOrigin != nil && *e.lastOrigin == o {
		return e.lastOrigin
	}
	made := o // allocated here only: o itself does not escape
	e.lastOrigin = &made
	return &made
}
