package engine

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/features"
)

// The response path's second stage: wire's decoded parts are applied, one
// per critical section; the notifications of a response hold its gate
// (Engine.gate) and run outside the lock.

func (c *channel) applyLocked(p wire.Part) {
	if p.First {
		c.receivedLocked()
	}
	r := p.Response
	switch {
	case r.Unreadable != nil:
		c.unreadableLocked(r)
		return
	case r.Type == nil:
		return
	case r.Repeat:
		c.e.metrics.add(countRepeated, 1, c.server.URI, r.TypeURL)
		return
	}
	if p.First {
		c.beginApplyLocked()
	}
	keys := c.e.keysLocked(r.TypeURL)
	for i := range p.Resources {
		res := &p.Resources[i]
		// The entry the stream's memo kept for the key, if it is still
		// the key's: a SotW push of 10,000 clusters then looks up none
		// (SotWClusters/one/1k/xdstp: 1.3 x the CPU with a lookup each).
		en, _ := res.Entry().(*entry)
		if en == nil || en.removed || en.name != res.Key {
			var a *authority
			// A wildcard hears of an invalid resource too (A88: a NACK
			// is per resource), unless its name could not be read.
			if a, en = keys.entry(res.Key); en == nil && a != nil && res.Key != "" {
				en = c.e.wildcardEntryLocked(a, r.Type, res.Key)
			}
			if en != nil {
				res.Keep(en)
			}
		}
		c.applyResourceLocked(r, res, en)
	}
	if p.Last {
		c.finishLocked(r)
	}
}

// applyResourceLocked applies one resource: a valid one updates the cache,
// an invalid one is a data error, one re-sent unchanged takes the version.
func (c *channel) applyResourceLocked(r *wire.Response, res *wire.Resource, en *entry) {
	e := c.e
	if en == nil {
		c.applyMemberLocked(r.TypeURL, res.Key, res.Value, res.Version, res.Err)
		return
	}
	c.coverLocked(en)
	version := r.Version
	if res.Version != "" {
		version = res.Version // incremental: the resource's own, valid or not
	}
	if res.Err != nil {
		nack := e.newError(KindNACK, codes.InvalidArgument, en, c, fmt.Errorf("invalid resource: %w", res.Err))
		e.onDataErrorLocked(en, nack, features.ReasonNACK, version, c)
		return
	}
	if c.holdsLocked(en, res.Raw) {
		en.version = version
		en.setUpdated(r.Received)
		e.keepLocked(en, res.TTL)
		return
	}
	e.onValidLocked(en, res.Value, res.Raw, version, r.Received, c)
	e.keepLocked(en, res.TTL)
}

// beginApplyLocked starts a response: its mark, which the entries it
// names take (coverLocked).
func (c *channel) beginApplyLocked() {
	c.e.responseMarks++
	c.applyMark, c.applyCovered = c.e.responseMarks, 0
}

// coverLocked marks en as named by the response, and counts it, if this
// channel serves it.
func (c *channel) coverLocked(en *entry) {
	if en.auth.active() == c && en.coveredBy != c.applyMark {
		en.coveredBy = c.applyMark
		c.applyCovered++
	}
}

// finishLocked completes a response once its resources are applied: TP3
// errors, then deletions (in SotW, of all-resources-required types, what
// the response did not name; in incremental xDS, its removals).
func (c *channel) finishLocked(r *wire.Response) {
	for _, re := range r.Errors {
		c.applyResourceErrorLocked(r, re)
	}
	if r.Type.AllResourcesRequiredInSotW && r.Complete {
		c.applyDeletionsLocked(r)
	}
	for _, key := range r.Removed {
		c.applyRemovalLocked(r, key)
	}
	if r.Accepted {
		c.versions[r.TypeURL] = r.Version
	}
	if c.reconnected {
		c.clearConnectivityErrorsLocked()
	}
	c.storeConfirmLocked(r)
	if len(c.globsTouched) > 0 {
		c.deliverGlobsLocked(r.Version, r.Received)
	}
	if a := c.e.auths.oldStyle; a.active() == c {
		for _, ww := range a.wildcards[r.TypeURL] {
			c.e.scheduleLocked(&notice{h: &watch{w: wildcardEntry{ww, ""}}, isAmbient: true})
		}
	}
	c.e.metrics.add(countValid, r.Valid, c.server.URI, r.TypeURL)
	c.e.metrics.add(countInvalid, r.Invalid, c.server.URI, r.TypeURL)
	c.e.endNoticesLocked()
}

// applyResourceErrorLocked applies an xRFC TP3 entry (A88: NOT_FOUND and
// PERMISSION_DENIED are data errors, other codes transient).
func (c *channel) applyResourceErrorLocked(r *wire.Response, re wire.ResourceError) {
	e := c.e
	_, en := e.lookupEntryLocked(r.TypeURL, re.Key)
	if en == nil {
		return
	}
	c.coverLocked(en)
	code := codes.Code(re.Code)
	err := e.newError(KindServerReported, code, en, c, fmt.Errorf("xDS server reported %s: %s", code, re.Message))
	e.onDataErrorLocked(en, err, features.ReasonServerReported, r.Version, c)
}

// applyDeletionsLocked deletes, for all-resources-required types (LDS,
// CDS), the cached resources a complete SotW response of their active
// server left out. This is the one algorithm: each entry the response
// named took its mark, and was counted (coverLocked); when it named as
// many as this channel serves, it left out none; else those without the
// mark are deleted, unless the response named them after all (r.Named:
// an entry made after its part was applied, or whose authority moved to
// this server meanwhile, A71). The walk, of every entry of the type, is
// made only by a response that left something out: a deletion, or a
// resource watched since the response began.
func (c *channel) applyDeletionsLocked(r *wire.Response) {
	serving := 0
	for a := range c.auths {
		if a.active() == c {
			serving += len(a.resources[r.TypeURL])
		}
	}
	if c.applyCovered == serving {
		return
	}
	for _, a := range c.authsLocked(true) {
		for _, en := range a.resources[r.TypeURL] {
			// What the store served is not deleted by absence: like an
			// uncached resource, it waits for its does-not-exist timer.
			if en.coveredBy == c.applyMark || en.value == nil || en.storedOrigin() != nil ||
				en.state == StateDoesNotExist || r.Named(en.name) {
				continue
			}
			c.deletedLocked(r, en)
		}
	}
}

// applyRemovalLocked handles a name an incremental response removed: a
// deletion by A88's rules, for any type; for a resource never received,
// the server's word that it does not exist.
func (c *channel) applyRemovalLocked(r *wire.Response, key string) {
	a, en := c.e.lookupEntryLocked(r.TypeURL, key)
	if en == nil {
		c.applyMemberLocked(r.TypeURL, key, nil, "", nil)
		return
	}
	if a.active() == c && en.state != StateDoesNotExist {
		c.deletedLocked(r, en)
	}
}

func (c *channel) deletedLocked(r *wire.Response, en *entry) {
	if en.storedOrigin() != nil {
		c.e.dropStoredLocked(en) // never received from this server: it does not exist
	}
	err := c.e.newError(KindDeleted, codes.NotFound, en, c, errors.New("resource deleted by the xDS server"))
	c.e.onDataErrorLocked(en, err, features.ReasonDeletion, r.Version, c)
}

// unreadableLocked tells the watchers of an unreadable (NACKed)
// response's type why updates are not arriving. Nothing is dropped.
func (c *channel) unreadableLocked(r *wire.Response) {
	e := c.e
	e.metrics.add(countUnreadable, 1, c.server.URI, r.TypeURL)
	if r.Type == nil {
		return
	}
	e.metrics.add(countInvalid, 1, c.server.URI, r.TypeURL)
	for _, a := range c.authsLocked(true) {
		for _, en := range a.resources[r.TypeURL] {
			if en.orphaned {
				continue
			}
			err := e.newError(KindNACK, codes.InvalidArgument, en, c, r.Unreadable)
			e.onUnattributedNACKLocked(en, err)
		}
	}
}
