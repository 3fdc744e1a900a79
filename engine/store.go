package engine

import (
	"slices"
	"time"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/internal/keep"
	"github.com/xdsengine/xdsengine/engine/internal/metrics"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/registry"
)

// Store keeps what the engine accepted, so that a process that starts
// (or watches something) while every server of an authority is
// unreachable starts from the last good configuration instead of none
// (Config.Store; package lastgood has a file-backed one). The engine
// calls it off the response path and never two calls at once;
// Engine.Close waits for a call under way, so a Load or Apply must
// return in bounded time (lastgood's wait for its lock has a timeout).
//
// A resource is kept until its server deletes it or says it does not
// exist, it ages out (StoreMaxAge; the engine forgets it at the next
// Load), or the digest changes: a cancelled watch, as in every clean
// shutdown, forgets nothing. The store serves an authority while no
// server of it has answered: at once when the server fails, after
// Config.StoreWait when it neither fails nor answers. See the package
// doc's "The last-known-good store".
type Store interface {
	// Load returns what the store holds for digest: a store written for
	// another digest (another node, another bootstrap) returns nothing,
	// and is replaced as the engine writes. Resources that cannot be read
	// back whole are left out and counted in Corrupt.
	Load(digest []byte) (Loaded, error)
	// Apply writes a change set atomically: the resources to keep, and
	// those to forget (Delete). A crash during Apply leaves the store as
	// it was before it, or as after it.
	Apply(digest []byte, changes []StoreChange) error
	// Close releases the store.
	Close() error
}

// Loaded is what a Store held.
type Loaded struct {
	Resources []StoredResource
	// Corrupt counts the resources left out because their bytes did not
	// check out.
	Corrupt int
}

// StoredResource is one resource the engine accepted, as a Store keeps
// it: the bytes, never a decoded value, which the registry of the day
// decodes and validates again when the resource is served.
type StoredResource struct {
	// Authority is the resource's authority (A47); "" for names that are
	// not xdstp:// URIs.
	Authority string
	// Server is the URI of the server that sent it.
	Server        string
	TypeURL, Name string
	Version       string
	Raw           []byte
	// Received is when the engine accepted these bytes (or, at most a
	// quarter of StoreMaxAge ago, the server sent them again).
	Received time.Time
	// Expires is when the ttl the server sent the resource with runs
	// out; zero when it sent none. It is not served after.
	Expires time.Time
}

// StoreChange is one change of a change set: a resource to keep, or with
// Delete, one to forget (only its key, Authority, TypeURL and Name, is
// read).
type StoreChange struct {
	StoredResource
	Delete bool
}

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

// lastGood is the engine's side of Config.Store.
type lastGood struct {
	store  Store
	digest []byte
	maxAge time.Duration
	writer *keep.Writer
	marks  keep.Marks[*entry] // what the writer gathers (gatherStore)
	// loaded is, by authority, what Load returned, decoded and valid,
	// until a server of the authority answers: from then on, what the
	// servers say is all there is. Nil until Load has returned.
	loaded map[*authority]map[keep.Name]*keep.Stored
	// holding: Load has not returned, so a failing server is not yet
	// reported; the store may hold what the watchers need, and a watcher
	// told UNAVAILABLE before its resource comes from disk would fail its
	// first RPCs for nothing. Held at most storeLoadWait.
	holding  bool
	stopHold func() bool
}

// startStore writes what the engine accepts from now on, and loads what
// the store holds in the background: New does not wait for the disk.
func (e *Engine) startStore() {
	lg := &lastGood{store: e.cfg.Store, digest: keep.Digest(e.node, e.cfg.Bootstrap),
		maxAge: keep.MaxAge(e.cfg.StoreMaxAge, DefaultStoreMaxAge)}
	loadDone := make(chan struct{})
	lg.writer = keep.NewWriter(func() []keep.Change { return e.gatherStore(lg) }, func(cs []keep.Change) error {
		<-loadDone // one call at a time, and nothing replaced before it is read
		changes := make([]StoreChange, len(cs))
		for i, c := range cs {
			changes[i] = StoreChange{StoredResource{c.Authority, c.Server, c.TypeURL, c.Name, c.Version, c.Raw, c.Received, c.Expires}, c.Delete}
		}
		err := lg.store.Apply(lg.digest, changes)
		if err == nil {
			e.metrics.Add(metrics.Writes, 1, "", "")
		}
		return err
	}, func(err error) {
		e.metrics.Add(metrics.StoreFailures, 1, "", "")
		e.log.Warn("xDS last-known-good store: write failed; the changes are kept for the next", "error", err)
	}, storeWriteInterval, lg.maxAge/4)
	lg.marks.Wake = lg.writer.Wake
	e.lastGood = lg
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
	if !e.lastGood.holding {
		return
	}
	e.lastGood.holding = false
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
func (e *Engine) storeHoldsLocked() bool { return e.lastGood != nil && e.lastGood.holding }

// loadStore reads and decodes the store, dropping what does not validate
// under the registry of the day, or is from a server the authority no
// longer lists. What is past serving (older than StoreMaxAge, or past its
// ttl) is not decoded: expired names it, for the store to forget.
func (e *Engine) loadStore(lg *lastGood) (loaded map[*authority]map[keep.Name]*keep.Stored, expired []keep.Key) {
	got, err := lg.store.Load(lg.digest)
	now := e.clock.Now()
	rs := make([]keep.Change, 0, len(got.Resources))
	for _, r := range got.Resources {
		k := keep.Key{Authority: r.Authority, TypeURL: r.TypeURL, Name: r.Name}
		if keep.Expired(r.Received, r.Expires, now, lg.maxAge) {
			expired = append(expired, k)
			continue
		}
		rs = append(rs, keep.Change{Key: k, Server: r.Server, Version: r.Version, Raw: r.Raw, Received: r.Received, Expires: r.Expires})
	}
	d := keep.Decoder[*authority]{Types: e.types, Known: e.known, Resolve: e.resolveStored, Metrics: e.metrics, Log: e.log,
		Options: registry.DecodeOptions{Switches: e.switches, CertificateProviders: e.certificateProviders}}
	return d.Load(rs, got.Corrupt, err), expired
}

// resolveStored resolves a stored resource's name for keep.Decoder.
func (e *Engine) resolveStored(typeURL, name string) (*authority, []bootstrap.ServerConfig, string, error) {
	a, key, err := e.resolveName(typeURL, name)
	if err != nil {
		return nil, nil, "", err
	}
	return a, a.servers, key, nil
}

// storeServesLocked reports whether the store serves a's resources: it
// holds some, no server of a has answered, and the active one fails or
// has not answered within Config.StoreWait.
func (e *Engine) storeServesLocked(a *authority) bool {
	act := a.active()
	return e.lastGood != nil && e.lastGood.loaded[a] != nil && !a.answered && act != nil && (act.status != nil || a.storeWaitedOut)
}

// startStoreWaitLocked starts the wait after which, if no server of a has
// answered, the store serves a's resources: a server whose address drops
// every packet, or that accepts connections and never answers, fails no
// stream for a long while (gRPC's connection attempt lasts 20 s), or ever.
func (e *Engine) startStoreWaitLocked(a *authority) {
	if e.lastGood == nil || a.answered || a.storeWaitedOut || a.stopStoreWait != nil {
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
	lg := e.lastGood
	sv := lg.loaded[en.auth][keep.Name{TypeURL: en.typ.TypeURL, Key: en.name}]
	if sv == nil || !sv.Servable(e.clock.Now(), lg.maxAge) {
		return false
	}
	en.value, en.raw, en.version, en.updated = sv.Value, sv.Raw, sv.Version, sv.Received
	en.state, en.source = StateACKed, nil
	en.notes = en.notes.withStored(sv, e.clock.Now())
	en.notes = en.notes.withAmbient(e.channelErrorFor(en.auth.active(), en))
	e.metrics.Add(metrics.Served, 1, sv.Server.URI, en.typ.TypeURL)
	return true
}

// useStoreLocked serves the store to the authority's watched resources
// that have none, and to its wildcards, and tells the watchers; the
// ambient error too, unless the failure being reported will.
func (e *Engine) useStoreLocked(a *authority, ambient bool) {
	if !e.storeServesLocked(a) {
		return
	}
	for k := range e.lastGood.loaded[a] {
		if a.resources[k.TypeURL][k.Key] == nil {
			e.wildcardEntryLocked(a, e.types[k.TypeURL], k.Key)
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

// keepLocked has the store keep en's resource, just accepted from a
// server with ttl (0: none): the writer reads en when it writes.
func (e *Engine) keepLocked(en *entry, ttl time.Duration) {
	if lg := e.lastGood; lg != nil && !en.typ.NotStored {
		lg.marks.Keep(en, keep.Expiry(en.updated, ttl))
	}
}

// forgetLocked has the store forget en's resource: deleted by its
// server, dropped, or no longer watched.
func (e *Engine) forgetLocked(en *entry) {
	if lg := e.lastGood; lg != nil && !en.typ.NotStored {
		lg.marks.Forget(en)
	}
}

// gatherStore is the writer's gather: what was marked since its last
// call, each resource to keep as it is now.
func (e *Engine) gatherStore(lg *lastGood) []keep.Change {
	return lg.marks.Gather(&e.mu, func(en *entry, forget bool) (keep.Change, bool) {
		c := keep.Change{Key: keep.Key{Authority: en.auth.name, TypeURL: en.typ.TypeURL, Name: en.name}, Delete: forget}
		if !forget && en.source != nil {
			c.Server, c.Version, c.Raw, c.Received = en.source.server.URI, en.version, en.raw, en.updated
		}
		return c, forget || en.source != nil
	})
}
