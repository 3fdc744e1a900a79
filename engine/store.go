package engine

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/internal/keep"
	"github.com/xdsengine/xdsengine/engine/internal/metrics"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

// Store keeps what the engine accepted, so that a process that starts
// (or watches something) while every server of an authority is
// unreachable starts from the last good configuration instead of none
// (Config.Store; package lastgood has a file-backed one). The engine
// calls it off the response path and never two calls at once;
// Engine.Close waits for a call under way, so a Load or Apply must
// return in bounded time (lastgood's wait for its lock has a timeout).
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

// lastGood is the engine's side of Config.Store.
type lastGood struct {
	store  Store
	digest []byte
	maxAge time.Duration
	writer *keep.Writer
	// loaded is, by authority, what Load returned, decoded and valid,
	// until a server of the authority answers: from then on, what the
	// servers say is all there is. Nil until Load has returned.
	loaded map[*authority]map[storedKey]*storedValue
	// holding: Load has not returned, so a failing server is not yet
	// reported; the store may hold what the watchers need, and a watcher
	// told UNAVAILABLE before its resource comes from disk would fail its
	// first RPCs for nothing. Held at most storeLoadWait.
	holding  bool
	stopHold func() bool
}

type storedKey struct{ typeURL, name string }

type storedValue struct {
	value             registry.Resource
	raw               []byte
	version           string
	server            *bootstrap.ServerConfig
	received, expires time.Time
}

// startStore writes what the engine accepts from now on, and loads what
// the store holds in the background: New does not wait for the disk.
func (e *Engine) startStore() {
	lg := &lastGood{store: e.cfg.Store, digest: keep.Digest(e.node, e.cfg.Bootstrap), maxAge: cmp.Or(e.cfg.StoreMaxAge, DefaultStoreMaxAge)}
	if lg.maxAge < 0 {
		lg.maxAge = math.MaxInt64
	}
	loadDone := make(chan struct{})
	lg.writer = keep.NewWriter(func(cs []keep.Change) error {
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
		loaded := e.loadStore(lg)
		close(loadDone)
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
// longer lists.
func (e *Engine) loadStore(lg *lastGood) map[*authority]map[storedKey]*storedValue {
	got, err := lg.store.Load(lg.digest)
	if err != nil {
		e.metrics.Add(metrics.StoreFailures, 1, "", "")
		e.log.Warn("xDS last-known-good store: load failed; starting without it", "error", err)
		return nil
	}
	e.metrics.Add(metrics.Loads, 1, "", "")
	if got.Corrupt > 0 {
		e.metrics.Add(metrics.Dropped, got.Corrupt, "", "")
		e.log.Warn("xDS last-known-good store: corrupt resources dropped", "count", got.Corrupt)
	}
	out := map[*authority]map[storedKey]*storedValue{}
	for _, r := range got.Resources {
		sv, a, key, err := e.decodeStored(r)
		if err != nil {
			e.metrics.Add(metrics.Dropped, 1, r.Server, r.TypeURL)
			e.log.Warn("xDS last-known-good store: resource dropped", "type", r.TypeURL, "name", r.Name, "error", err)
			continue
		}
		if out[a] == nil {
			out[a] = map[storedKey]*storedValue{}
		}
		out[a][key] = sv
	}
	return out
}

func (e *Engine) decodeStored(r StoredResource) (*storedValue, *authority, storedKey, error) {
	typ := e.types[r.TypeURL]
	if typ == nil || typ.NotStored {
		return nil, nil, storedKey{}, fmt.Errorf("type is not registered, switched off or not stored")
	}
	a, name, nerr := e.resolveName(r.TypeURL, r.Name)
	if nerr != nil {
		return nil, nil, storedKey{}, nerr
	}
	i := slices.IndexFunc(a.servers, func(s bootstrap.ServerConfig) bool { return s.URI == r.Server })
	if i < 0 {
		return nil, nil, storedKey{}, fmt.Errorf("server %s is not one of its authority's", r.Server)
	}
	s := &a.servers[i]
	fs := features.Resolve(s.ServerFeatures, e.known...)
	dr, err := typ.Decode(r.Raw, registry.DecodeOptions{WrapperName: r.Name, Switches: e.switches, OwnsRaw: true,
		Server:               registry.ServerInfo{URI: s.URI, Features: fs, Delta: s.Delta || fs.Has(features.NameDeltaXDS)},
		CertificateProviders: e.certificateProviders})
	if err == nil {
		if _, decoded, _ := e.resolveName(r.TypeURL, dr.Name); decoded != name {
			err = fmt.Errorf("the bytes are of resource %q", dr.Name)
		}
	}
	if err != nil {
		return nil, nil, storedKey{}, err
	}
	return &storedValue{value: dr.Resource, raw: r.Raw, version: r.Version, server: s, received: r.Received, expires: r.Expires},
		a, storedKey{r.TypeURL, name}, nil
}

// storeServesLocked reports whether the store serves a's resources: it
// holds some, no server of a has answered, and the active one fails.
func (e *Engine) storeServesLocked(a *authority) bool {
	act := a.active()
	return e.lastGood != nil && e.lastGood.loaded[a] != nil && !a.answered && act != nil && act.status != nil
}

// serveStoredLocked gives an entry with no resource the stored one, if
// the store serves its authority and the resource is not too old, with the ambient error that says
// where it comes from; its watchers are not told.
func (e *Engine) serveStoredLocked(en *entry) bool {
	if en.value != nil || !e.storeServesLocked(en.auth) {
		return false
	}
	lg := e.lastGood
	sv := lg.loaded[en.auth][storedKey{en.typ.TypeURL, en.name}]
	now := e.clock.Now()
	if sv == nil || now.Sub(sv.received) > lg.maxAge || !sv.expires.IsZero() && now.After(sv.expires) {
		return false
	}
	en.value, en.raw, en.version, en.updated, en.state, en.source = sv.value, sv.raw, sv.version, sv.received, StateACKed, nil
	if en.fail == nil {
		en.fail = &entryFailure{}
	}
	en.fail.stored, en.fail.servedSince = sv, e.clock.Now()
	en.setAmbient(e.channelErrorFor(en.auth.active(), en))
	e.metrics.Add(metrics.Served, 1, sv.server.URI, en.typ.TypeURL)
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
		if a.resources[k.typeURL][k.name] == nil {
			e.wildcardEntryLocked(a, e.types[k.typeURL], k.name)
		}
	}
	for _, byName := range a.resources {
		for _, en := range byName {
			if len(en.watchers) == 0 || !e.serveStoredLocked(en) {
				continue
			}
			e.notifyChangedLocked(en, en.value, nil, nil)
			if ambient {
				e.notifyAmbientLocked(en, en.ambientError(), nil)
			}
		}
	}
}

// keepLocked has the store keep en's resource, just accepted from a
// server with ttl (0: none).
func (e *Engine) keepLocked(en *entry, ttl time.Duration) {
	if lg := e.lastGood; lg != nil && !en.typ.NotStored {
		c := keep.Change{Key: keep.Key{Authority: en.auth.name, TypeURL: en.typ.TypeURL, Name: en.name},
			Server: en.source.server.URI, Version: en.version, Raw: en.raw, Received: en.updated}
		if ttl > 0 {
			c.Expires = en.updated.Add(ttl)
		}
		lg.writer.Put(c)
	}
}

// forgetLocked has the store forget en's resource: deleted by its
// server, dropped, or no longer watched.
func (e *Engine) forgetLocked(en *entry) {
	if lg := e.lastGood; lg != nil && !en.typ.NotStored {
		lg.writer.Put(keep.Change{Key: keep.Key{Authority: en.auth.name, TypeURL: en.typ.TypeURL, Name: en.name}, Delete: true})
	}
}
