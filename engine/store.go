package engine

import (
	"math"
	"slices"
	"time"

	"github.com/xdsengine/xdsengine/engine/internal/storewriter"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/engine/storage"
)

// DefaultStoreMaxAge is Config.StoreMaxAge's default: a day. What the
// servers keep sending is written again every quarter of it, so the age
// of what is served is about how long they have not answered.
const DefaultStoreMaxAge = 24 * time.Hour

// storeWriteInterval is the least time between two change sets: a burst
// of responses costs the store one write.
const storeWriteInterval = 100 * time.Millisecond

// storeLoadWait bounds how long a slow Load holds back the report of a
// failing server.
const storeLoadWait = time.Second

// DefaultStoreWait is Config.StoreWait's default: about the time a
// healthy server takes to answer a new stream, well under the 20 s a
// connection to an address that drops every packet takes to fail.
const DefaultStoreWait = 3 * time.Second

// storeSide is the engine's side of Config.Store: this file serves what
// the store holds, storeload.go reads it back, storewrite.go writes what
// the engine accepts.
type storeSide struct {
	store  storage.Store
	digest []byte
	maxAge time.Duration
	writer *storewriter.Writer
	marks  storeMarks // what the writer gathers (gatherStore)
	// loaded is, by authority, what Load returned, decoded and valid,
	// until a server of the authority answers: from then on, what the
	// servers say is all there is. Nil until Load has returned.
	loaded map[*authority]map[storedName]*storedResource
	// holding: Load has not returned, so a failing server is not yet
	// reported; the store may hold what the watchers need, and a watcher
	// told UNAVAILABLE before its resource comes from disk would fail its
	// first RPCs for nothing. Held at most storeLoadWait.
	holding  bool
	stopHold func() bool
}

// storeMaxAge is how old a stored resource may be served, from
// Config.StoreMaxAge: zero means DefaultStoreMaxAge, negative no limit.
func storeMaxAge(configured time.Duration) time.Duration {
	switch {
	case configured < 0:
		return math.MaxInt64
	case configured == 0:
		return DefaultStoreMaxAge
	}
	return configured
}

// startStore writes what the engine accepts from now on, and loads what
// the store holds in the background: New does not wait for the disk.
func (e *Engine) startStore() {
	lg := &storeSide{store: e.cfg.Store, digest: storeDigest(e.node, e.cfg.Bootstrap), maxAge: storeMaxAge(e.cfg.StoreMaxAge)}
	loadDone := make(chan struct{})
	lg.writer = storewriter.NewWriter(func() []storage.Change { return e.gatherStore(lg) }, func(changes []storage.Change) error {
		<-loadDone // one call at a time, and nothing replaced before it is read
		err := lg.store.Apply(lg.digest, changes)
		if err == nil {
			e.metrics.add(countWrites, 1, "", "")
		}
		return err
	}, func(err error) {
		e.metrics.add(countStoreFailures, 1, "", "")
		e.log.Warn("xDS last-known-good store: write failed; the changes are kept for the next", "error", err)
	}, storeWriteInterval, lg.maxAge/4)
	lg.marks.Wake = lg.writer.Wake
	e.storeSide = lg
	lg.holding = true
	lg.stopHold = e.clock.AfterFunc(storeLoadWait, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if !e.closed.Load() {
			e.endHoldLocked()
		}
	})
	e.streamsRun.Add(1)
	go func() {
		defer e.streamsRun.Done()
		loaded, expired := e.loadStore(lg)
		close(loadDone)
		lg.writer.Forget(expired)
		lg.stopHold()
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.closed.Load() {
			return
		}
		for a := range loaded {
			if a.answered {
				delete(loaded, a)
			}
		}
		lg.loaded = loaded
		if lg.holding {
			e.endHoldLocked()
			return
		}
		for _, a := range e.allAuthoritiesLocked() {
			e.useStoreLocked(a, true)
		}
	}()
}

// endHoldLocked reports the servers that failed while the store was
// loading, as onServerFailureLocked would have, the store's resources
// first.
func (e *Engine) endHoldLocked() {
	if !e.storeSide.holding {
		return
	}
	e.storeSide.holding = false
	for _, a := range e.allAuthoritiesLocked() {
		if act := a.active(); act != nil && act.status != nil {
			e.useStoreLocked(a, false)
			e.notifyChannelErrorLocked(a, act)
			e.notifyWildcardsLocked(a, act.status)
		}
	}
}

// storeHoldsLocked reports whether a failing server is not yet reported
// because the store is loading.
func (e *Engine) storeHoldsLocked() bool { return e.storeSide != nil && e.storeSide.holding }

// storeServesLocked reports whether the store serves a's resources: it
// holds some, no server of a has answered, and the active one fails or
// has not answered within Config.StoreWait.
func (e *Engine) storeServesLocked(a *authority) bool {
	act := a.active()
	return e.storeSide != nil && e.storeSide.loaded[a] != nil && !a.answered && act != nil && (act.status != nil || a.storeWaitedOut)
}

// startStoreWaitLocked starts the wait after which, if no server of a has
// answered, the store serves a's resources: a server whose address drops
// every packet, or that accepts connections and never answers, fails no
// stream for a long while (gRPC's connection attempt lasts 20 s), or ever.
func (e *Engine) startStoreWaitLocked(a *authority) {
	if e.storeSide == nil || a.answered || a.storeWaitedOut || a.stopStoreWait != nil {
		return
	}
	a.stopStoreWait = e.clock.AfterFunc(e.storeWait, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		a.stopStoreWait = nil
		if e.closed.Load() || a.answered || len(a.channels) == 0 {
			return
		}
		a.storeWaitedOut = true
		if e.storeServesLocked(a) {
			e.log.Warn("xDS server has not answered within the store wait; serving the last-known-good store",
				"authority", a.displayName(), "server", a.active().server.URI, "wait", e.storeWait)
			e.useStoreLocked(a, true)
		}
	})
}

// storeAnsweredLocked: a server of a has answered for the first time, on
// c. What the store served stays in use until the server sends it, or
// until its does-not-exist timer, which starts now, runs out: then it
// goes as an uncached resource does (A88). The ambient error that said
// the server was unreachable goes once a response of the type leaves it
// unsent (storeConfirmLocked).
func (e *Engine) storeAnsweredLocked(a *authority, c *channel) {
	if a.stopStoreWait != nil {
		a.stopStoreWait()
		a.stopStoreWait = nil
	}
	var byType map[string][]string
	for en := range a.entries() {
		if en.storedOrigin() == nil {
			continue
		}
		a.unconfirmed = append(a.unconfirmed, en)
		if byType == nil {
			byType = make(map[string][]string)
		}
		byType[en.typ.TypeURL] = append(byType[en.typ.TypeURL], en.name)
	}
	if c.stream == nil {
		return // a new stream hands them as awaited (entry.awaited)
	}
	for typeURL, names := range byType {
		c.stream.Await(typeURL, names, c.timer.Timeout)
	}
}

// storeConfirmLocked runs after each response of c: what the store still
// serves, of the response's type, was not in it; its watchers learn that
// the server is reachable all the same.
func (c *channel) storeConfirmLocked(r *wire.Response) {
	for a := range c.auths { // most often none to look at: no sort
		if len(a.unconfirmed) == 0 || a.active() != c {
			continue
		}
		a.unconfirmed = slices.DeleteFunc(a.unconfirmed, func(en *entry) bool {
			switch {
			case en.storedOrigin() == nil || en.removed:
				return true
			case en.typ.TypeURL != r.TypeURL:
				return false
			}
			if en.notes.ambientError() != nil {
				en.notes = en.notes.withAmbient(nil)
				c.e.notifyAmbientLocked(en, nil)
			}
			return true
		})
	}
}

// serveStoredLocked gives an entry with no resource the stored one, if
// the store serves its authority and the resource is not too old, with the ambient error that says
// where it comes from; its watchers are not told.
func (e *Engine) serveStoredLocked(en *entry) bool {
	if en.value != nil || !e.storeServesLocked(en.auth) {
		return false
	}
	lg := e.storeSide
	sv := lg.loaded[en.auth][storedName{en.typ.TypeURL, en.name}]
	if sv == nil || sv.expired(e.clock.Now(), lg.maxAge) {
		return false
	}
	en.value, en.raw, en.version = sv.value, sv.raw, sv.version
	en.setUpdated(sv.received)
	en.state, en.source = StateACKed, nil
	en.notes = en.notes.withStored(sv, e.clock.Now())
	en.notes = en.notes.withAmbient(e.channelErrorFor(en.auth.active(), en))
	e.metrics.add(countServed, 1, sv.server.URI, en.typ.TypeURL)
	return true
}

// useStoreLocked serves the store to the authority's watched resources
// that have none, and to its wildcards, and tells the watchers; the
// ambient error too, unless the failure being reported will.
func (e *Engine) useStoreLocked(a *authority, ambient bool) {
	if !e.storeServesLocked(a) {
		return
	}
	for k := range e.storeSide.loaded[a] {
		if a.resources[k.typeURL][k.key] == nil {
			e.wildcardEntryLocked(a, e.types[k.typeURL], k.key)
		}
	}
	for en := range a.entries() {
		if len(en.watchers) == 0 || !e.serveStoredLocked(en) {
			continue
		}
		e.notifyChangedLocked(en, en.value, nil)
		if ambient {
			e.notifyAmbientLocked(en, en.notes.ambientError())
		}
	}
}
