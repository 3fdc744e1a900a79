package engine

import (
	"bytes"
	"fmt"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine/internal/cachestate"
	"github.com/xdsengine/xdsengine/engine/internal/failure"
	"github.com/xdsengine/xdsengine/engine/internal/glob"
	"github.com/xdsengine/xdsengine/engine/internal/keep"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

// CacheState is the state of a cache entry (gRFC A88), as CSDS reports it.
type CacheState int

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

// ClientStatus maps the state to CSDS's ClientResourceStatus.
func (s CacheState) ClientStatus() adminpb.ClientResourceStatus { return cachestate.Status(int(s)) }

// MetricLabel is the grpc.xds.cache_state label of gRFC A78 as extended by
// A88: a state, and whether a resource is cached in it.
func (s CacheState) MetricLabel(cached bool) string { return cachestate.Label(int(s), cached) }

// entry is the cache entry of one (type, name): the resource in use and
// the last error, held independently (A88), and the watchers.
type entry struct {
	typ      *registry.ResourceType // shared by every entry of the type
	name     string                 // cache key: the name, canonical for xdstp
	auth     *authority
	watchers []*watch // in the order they came: usually one or two, so a slice beats a map
	orphaned bool     // no watcher, waiting for a request without it
	removed  bool     // out of the cache for good

	value   registry.Resource // nil when nothing usable is cached
	raw     []byte            // serialized form of value
	source  *channel          // the server value came from
	version string
	updated time.Time

	state CacheState
	// fail (the last error and ambient error) and glob (a glob collection's
	// members) are nil in most entries, which need not carry their fields.
	fail *failure.Record[*Error]
	glob *glob.Members
	// coveredBy is the mark of the last response that named the entry
	// (channel.applyMark): see applyDeletionsLocked.
	coveredBy uint64
}

// EntryKey is en's cache key (wire.Entry): the stream's decode memo keeps
// en for the key.
func (en *entry) EntryKey() string { return en.name }

// storedOrigin returns where en's resource came from if Config.Store
// served it, else nil.
func (en *entry) storedOrigin() *keep.Stored {
	if en.value == nil || en.source != nil {
		return nil
	}
	return en.fail.FromStore()
}

// onValidLocked stores a valid resource and tells the watchers: the new
// resource when it changed, or a cleared ambient error when it did not.
func (e *Engine) onValidLocked(en *entry, value registry.Resource, raw []byte, version string, received time.Time, c *channel) {
	identical := en.value != nil && (bytes.Equal(en.raw, raw) || resourcesEqual(en.value, value))
	hadAmbient := en.fail.AmbientError() != nil
	en.version = version
	en.updated = received
	en.state = StateACKed
	en.fail = nil
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
	en.state = CacheState(cachestate.AfterDataError(reason))
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
	en.fail = en.fail.WithError(err, version, e.clock.Now())
	e.notifyErrorLocked(en, err)
}

// onUnattributedNACKLocked records a NACK of an unreadable response of the
// entry's type: NACKED, watchers told, but a cached resource is kept
// whatever the server's features say: the response may not have held it.
func (e *Engine) onUnattributedNACKLocked(en *entry, err *Error) {
	en.state = StateNACKed
	en.fail = en.fail.WithError(err, "", e.clock.Now())
	e.notifyErrorLocked(en, err)
}

// notifyErrorLocked tells the watchers of an error the A88 way: an
// ambient error while a resource is cached, a changed error otherwise.
func (e *Engine) notifyErrorLocked(en *entry, err *Error) {
	if en.value != nil {
		en.fail = en.fail.WithAmbient(err)
		e.notifyAmbientLocked(en, err)
		return
	}
	en.fail = en.fail.WithAmbient(nil)
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
	en.fail = en.fail.WithError(err, "", time.Time{})
	e.log.Info("xDS resource not received in time", "type", en.typ.ShortName(), "name", en.name, "server", c.server.URI, "state", en.state.String())
	e.notifyChangedLocked(en, nil, err)
}

func (e *Engine) newError(kind Kind, code codes.Code, en *entry, c *channel, cause error) *Error {
	err := &Error{Kind: kind, Code: code, NodeID: e.nodeID, Err: cause}
	if en != nil {
		err.TypeURL, err.Name = en.typ.TypeURL, en.name
	}
	if c != nil {
		err.ServerURI, err.server = c.server.URI, &c.server
	}
	return err
}
