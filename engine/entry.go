package engine

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

// CacheState is the state of a cache entry (gRFC A88), as CSDS reports it.
type CacheState int8

const (
	// StateRequested: subscribed, nothing received yet.
	StateRequested CacheState = iota
	// StateDoesNotExist: the does-not-exist timer fired, or the server
	// deleted the resource (which may still be cached).
	StateDoesNotExist
	// StateACKed: the resource is valid and cached.
	StateACKed
	// StateNACKed: the last version received was invalid; an older one
	// may still be cached.
	StateNACKed
	// StateReceivedError: the server sent an xRFC TP3 error; the resource
	// may still be cached.
	StateReceivedError
	// StateTimeout: the does-not-exist timer fired on a server with
	// resource_timer_is_transient_error.
	StateTimeout
)

// String returns the state's A88 name, as CSDS spells it.
func (s CacheState) String() string {
	if st := s.ClientStatus(); st != adminpb.ClientResourceStatus_UNKNOWN {
		return st.String()
	}
	return fmt.Sprintf("CacheState(%d)", int(s))
}

// cacheStates is A88's table, in CacheState's order: what CSDS calls each
// state, and its grpc.xds.cache_state metric labels (A78 as A88 extends
// it) for a resource not cached and one cached.
var cacheStates = [...]struct {
	csds               adminpb.ClientResourceStatus
	label, cachedLabel string
}{
	StateRequested:     {adminpb.ClientResourceStatus_REQUESTED, "requested", "requested"},
	StateDoesNotExist:  {adminpb.ClientResourceStatus_DOES_NOT_EXIST, "does_not_exist", "does_not_exist_but_cached"},
	StateACKed:         {adminpb.ClientResourceStatus_ACKED, "acked", "acked"},
	StateNACKed:        {adminpb.ClientResourceStatus_NACKED, "nacked", "nacked_but_cached"},
	StateReceivedError: {adminpb.ClientResourceStatus_RECEIVED_ERROR, "received_error", "received_error_but_cached"},
	StateTimeout:       {adminpb.ClientResourceStatus_TIMEOUT, "timeout", "timeout"},
}

func (s CacheState) known() bool { return s >= 0 && int(s) < len(cacheStates) }

// ClientStatus maps the state to CSDS's ClientResourceStatus.
func (s CacheState) ClientStatus() adminpb.ClientResourceStatus {
	if !s.known() {
		return adminpb.ClientResourceStatus_UNKNOWN
	}
	return cacheStates[s].csds
}

// MetricLabel is the grpc.xds.cache_state label of gRFC A78 as extended by
// A88: a state, and whether a resource is cached in it.
func (s CacheState) MetricLabel(cached bool) string {
	switch {
	case !s.known():
		return "unknown"
	case cached:
		return cacheStates[s].cachedLabel
	}
	return cacheStates[s].label
}

// stateAfter is the state a data error of reason leaves an entry in:
// NACKED, DOES_NOT_EXIST after a deletion, RECEIVED_ERROR after an xRFC
// TP3 error.
func stateAfter(reason features.Reason) CacheState {
	switch reason {
	case features.ReasonDeletion:
		return StateDoesNotExist
	case features.ReasonServerReported:
		return StateReceivedError
	}
	return StateNACKed
}

// entry is the cache entry of one (type, name): the resource in use and
// the last error, held independently (A88), and the watchers.
type entry struct {
	typ      *registry.ResourceType // shared by every entry of the type
	name     string                 // cache key: the name, canonical for xdstp
	auth     *authority
	watchers []*watch // in the order they came: usually one or two, so a slice beats a map
	orphaned bool     // no watcher, waiting for a request without it
	removed  bool     // out of the cache for good
	state    CacheState

	value   registry.Resource // nil when nothing usable is cached
	raw     []byte            // serialized form of value
	source  *channel          // the server value came from
	version string
	// updatedAt is when value was received (time.Time.UnixNano; 0: never):
	// 16 bytes less than a time.Time in each of 100,000 entries.
	updatedAt int64
	// notes (the last error, the ambient error, where a resource served
	// from the store came from) and glob (a glob collection's members) are
	// nil in most entries, which need not carry their fields.
	notes *entryNotes
	glob  *globMembers
	// coveredBy is the mark of the last response that named the entry
	// (channel.applyMark): see applyDeletionsLocked.
	coveredBy uint64
}

// updated returns when en's resource was received, zero if never.
func (en *entry) updated() time.Time {
	if en.updatedAt == 0 {
		return time.Time{}
	}
	return time.Unix(0, en.updatedAt)
}

// setUpdated records when en's resource was received.
func (en *entry) setUpdated(t time.Time) {
	en.updatedAt = 0
	if !t.IsZero() {
		en.updatedAt = t.UnixNano()
	}
}

// EntryKey is en's cache key (wire.Entry): the stream's decode memo keeps
// en for the key.
func (en *entry) EntryKey() string { return en.name }

// storedOrigin returns where en's resource came from if Config.Store
// served it, else nil.
func (en *entry) storedOrigin() *storedResource {
	if en.value == nil || en.source != nil {
		return nil
	}
	return en.notes.fromStore()
}

// onValidLocked stores a valid resource and tells the watchers: the new
// resource when it changed, or a cleared ambient error when it did not.
func (e *Engine) onValidLocked(en *entry, value registry.Resource, raw []byte, version string, received time.Time, c *channel) {
	identical := en.value != nil && (bytes.Equal(en.raw, raw) || resourcesEqual(en.value, value))
	hadAmbient := en.notes.ambientError() != nil
	en.version = version
	en.setUpdated(received)
	en.state = StateACKed
	en.notes = nil
	en.source = c
	en.raw = raw
	if identical {
		if hadAmbient {
			e.notifyAmbientLocked(en, nil)
		}
		return
	}
	en.value = value
	e.notifyChangedLocked(en, value, nil)
}

func resourcesEqual(a, b registry.Resource) bool {
	eq, ok := a.(registry.Equaler)
	return ok && eq.Equal(b)
}

// onDataErrorLocked applies a NACK, a deletion or a TP3 error (A88's
// table): the state and error are recorded; on a data error the server's
// features keep or drop a cached resource (a transient TP3 error keeps
// it); watchers are told (notifyErrorLocked).
func (e *Engine) onDataErrorLocked(en *entry, err *Error, reason features.Reason, version string, c *channel) {
	en.state = stateAfter(reason)
	if en.value != nil {
		action := features.Keep
		legacyDeletion := e.switches.DisableDataErrorHandling && reason == features.ReasonDeletion
		if legacyDeletion {
			action = features.Drop // before A88 a deletion dropped the resource (A53)
		}
		if err.Class() == features.DataError {
			action = c.info.Features.ErrorAction(features.ErrorEvent{Class: features.DataError, Reason: reason, Code: err.Code,
				TypeURL: en.typ.TypeURL, Name: en.name, Err: err}, action)
		}
		if action == features.Drop || reason == features.ReasonDeletion {
			e.forgetLocked(en) // the store keeps what a server stands by
		}
		if action == features.Drop {
			en.value, en.raw, en.source = nil, nil, nil
		} else if legacyDeletion {
			// ignore_resource_deletion before A88: only a log line.
			en.state = StateACKed
			e.log.Warn("xDS resource deletion ignored (ignore_resource_deletion)",
				"type", en.typ.ShortName(), "name", en.name, "server", c.server.URI)
			return
		}
	}
	en.notes = en.notes.withError(err, version, e.clock.Now())
	e.notifyErrorLocked(en, err)
}

// onUnattributedNACKLocked records a NACK of an unreadable response of the
// entry's type: NACKED, watchers told, but a cached resource is kept
// whatever the server's features say: the response may not have held it.
func (e *Engine) onUnattributedNACKLocked(en *entry, err *Error) {
	en.state = StateNACKed
	en.notes = en.notes.withError(err, "", e.clock.Now())
	e.notifyErrorLocked(en, err)
}

// notifyErrorLocked tells the watchers of an error the A88 way: an
// ambient error while a resource is cached, a changed error otherwise.
func (e *Engine) notifyErrorLocked(en *entry, err *Error) {
	if en.value != nil {
		en.notes = en.notes.withAmbient(err)
		e.notifyAmbientLocked(en, err)
		return
	}
	en.notes = en.notes.withAmbient(nil)
	e.notifyChangedLocked(en, nil, err)
}

// onTimerLocked handles the does-not-exist timer's expiry for an uncached
// resource: a change (A88), NOT_FOUND, or UNAVAILABLE on a server with
// resource_timer_is_transient_error.
func (e *Engine) onTimerLocked(en *entry, c *channel) {
	if en.value != nil {
		if en.storedOrigin() == nil || !en.auth.answered {
			return
		}
		e.dropStoredLocked(en) // its server answers, and did not send it
	}
	t := c.timer
	var err *Error
	if t.Transient {
		en.state = StateTimeout
		err = e.newError(KindTimeout, codes.Unavailable, en, c, fmt.Errorf("timeout obtaining resource from xDS server after %v", t.Timeout))
	} else {
		en.state = StateDoesNotExist
		err = e.newError(KindDoesNotExist, codes.NotFound, en, c, fmt.Errorf("resource does not exist (not received within %v)", t.Timeout))
	}
	en.notes = en.notes.withError(err, "", time.Time{})
	e.log.Info("xDS resource not received in time", "type", en.typ.ShortName(), "name", en.name, "server", c.server.URI, "state", en.state.String())
	e.notifyChangedLocked(en, nil, err)
}

// dropStoredLocked takes what the store served out of en, whose server
// now answers and says that the resource does not exist: it is forgotten,
// and en is left as if nothing had been cached.
func (e *Engine) dropStoredLocked(en *entry) {
	e.forgetLocked(en)
	en.value, en.raw, en.version, en.notes = nil, nil, "", nil
}

// awaited reports whether en waits for its server to send it: nothing is
// cached, or only what the last-known-good store served before a server
// of its authority answered (see storeAnsweredLocked).
func (en *entry) awaited() bool {
	return en.value == nil || en.storedOrigin() != nil && en.auth.answered
}

// named reports whether en is watched by name, not only through
// wildcards: only such an entry is subscribed by its name.
func (en *entry) named() bool {
	return slices.ContainsFunc(en.watchers, func(h *watch) bool { return !h.wild })
}

// holdsLocked reports whether en holds raw's very array (the decode memo
// hands it again for equal bytes) as an accepted value from c, with no
// error or ambient error.
func (c *channel) holdsLocked(en *entry, raw []byte) bool {
	return en.value != nil && en.source == c && en.state == StateACKed && en.notes == nil &&
		len(raw) > 0 && len(en.raw) == len(raw) && &en.raw[0] == &raw[0]
}

// entryNotes is what an entry has to say when it is not plainly ACKED
// (gRFC A88 holds the resource in use and the last error independently):
// its last error, with the failed update's version and time; the last
// ambient error its watchers were given (a new watcher sees it after the
// resource); and, for a resource the last-known-good store served, where
// it came from and since when. Most entries have nothing to say: a nil
// *entryNotes, which every method takes.
type entryNotes struct {
	err           *Error
	failedVersion string
	failedAt      time.Time
	ambient       error
	stored        *storedResource
	servedSince   time.Time
}

// lastError returns why the entry is not ACKED, or nil.
func (n *entryNotes) lastError() *Error {
	if n == nil {
		return nil
	}
	return n.err
}

// ambientError returns the last ambient error the watchers were given,
// or nil.
func (n *entryNotes) ambientError() error {
	if n == nil {
		return nil
	}
	return n.ambient
}

// fromStore returns where a resource served from the store came from, or
// nil.
func (n *entryNotes) fromStore() *storedResource {
	if n == nil {
		return nil
	}
	return n.stored
}

// withError returns n, made if nil, with the error of an update of
// version at a time.
func (n *entryNotes) withError(err *Error, version string, at time.Time) *entryNotes {
	if n == nil {
		n = &entryNotes{}
	}
	n.err, n.failedVersion, n.failedAt = err, version, at
	return n
}

// withStored returns n, made if nil, with the store's resource it serves
// since a time.
func (n *entryNotes) withStored(s *storedResource, since time.Time) *entryNotes {
	if n == nil {
		n = &entryNotes{}
	}
	n.stored, n.servedSince = s, since
	return n
}

// withAmbient returns n with the ambient error the watchers were given;
// nil clears it, and notes left with nothing to say are dropped (nil).
func (n *entryNotes) withAmbient(err error) *entryNotes {
	switch {
	case err != nil:
		if n == nil {
			n = &entryNotes{}
		}
		n.ambient = err
	case n != nil:
		n.ambient = nil
		if *n == (entryNotes{}) {
			return nil
		}
	}
	return n
}
