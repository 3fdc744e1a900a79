package engine

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine/internal/metrics"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/features"
)

// This file is the second stage of the response path: the parts of a
// response the wire package decoded are applied to the cache, one part
// per critical section. The watcher notifications it schedules hold the
// response's gate; they run, as the third stage, outside the lock.

// applyLocked applies one part of a response.
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
	}
	if p.First {
		c.beginApplyLocked()
	}
	keys := c.e.keyLookup(r.TypeURL)
	last := c.order[r.TypeURL]
	for i := range p.Resources {
		res := &p.Resources[i]
		// A SotW server sends its resources in one order, response after
		// response: the entry at this place last time is most likely
		// this one's, found without a lookup.
		var en *entry
		if n := len(c.nextOrder); n < len(last) && last[n] != nil && !last[n].removed && last[n].name == res.Key {
			en = last[n]
		} else {
			_, en = keys.entry(res.Key)
		}
		c.nextOrder = append(c.nextOrder, en)
		c.applyResourceLocked(r, res, en)
	}
	if p.Last {
		c.finishLocked(r)
	}
}

// applyResourceLocked applies one resource: a valid one updates the
// cache, an invalid one is a data error. One sent again unchanged, the
// bytes the entry holds, only takes the new version.
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
		e.onDataErrorLocked(en, nack, features.ReasonNACK, version, c, r.Gate)
		return
	}
	if c.holdsLocked(en, res.Raw) {
		en.version, en.updated = version, r.Received
		return
	}
	e.onValidLocked(en, res.Value, res.Raw, version, r.Received, c, r.Gate)
}

// holdsLocked reports whether en holds exactly the bytes raw (the same
// array, which the decode memo hands again for equal bytes) as an
// accepted value from c, with no error or ambient error.
func (c *channel) holdsLocked(en *entry, raw []byte) bool {
	return en.value != nil && en.source == c && en.state == StateACKed && en.fail == nil &&
		len(raw) > 0 && len(en.raw) == len(raw) && &en.raw[0] == &raw[0]
}

// beginApplyLocked starts the count and the mark of the entries a
// response names.
func (c *channel) beginApplyLocked() {
	c.nextOrder = c.nextOrder[:0]
	c.e.coverMarks++
	c.applyingShape, c.applyingCovered, c.applyingMark = c.e.shapeGen, 0, c.e.coverMarks
	c.applyingActive = c.e.activeGen
}

// coverLocked counts and marks en as named by the response being applied,
// if it belongs to an authority this channel serves.
func (c *channel) coverLocked(en *entry) {
	if a := en.auth; a.active() == c {
		c.applyingCovered++
		en.coveredBy = c.applyingMark
		en.order.moveToFront(en)
	}
}

// namedAllLocked reports whether the response just applied named every
// entry of its type in the authorities this channel serves, so that it
// deletes nothing. It is sure only if no entry came or went and no
// authority changed servers since it began: each counted name is one
// entry, and names are not repeated in a response.
func (c *channel) namedAllLocked(typeURL string) bool {
	if c.applyingShape != c.e.shapeGen {
		return false
	}
	total := 0
	for a := range c.auths {
		if a.active() == c {
			total += len(a.resources[typeURL])
		}
	}
	return c.applyingCovered == total
}

// finishLocked completes a response once its resources are applied: TP3
// errors move their entries to RECEIVED_ERROR; for types whose SotW
// responses carry every resource, what is missing from a response that
// named everything has been deleted; an incremental response's removals
// are deletions.
func (c *channel) finishLocked(r *wire.Response) {
	for _, re := range r.Errors {
		c.applyResourceErrorLocked(r, re)
	}
	if r.Type.AllResourcesRequiredInSotW && r.Complete && !c.namedAllLocked(r.TypeURL) {
		c.applyDeletionsLocked(r)
	}
	for _, key := range r.Removed {
		c.applyRemovalLocked(r, key)
	}
	if r.Accepted {
		c.versions[r.TypeURL] = r.Version
	}
	c.order[r.TypeURL], c.nextOrder = c.nextOrder, c.order[r.TypeURL]
	if c.reconnected {
		c.clearConnectivityErrorsLocked(r.Gate)
	}
	if len(c.globsTouched) > 0 {
		c.deliverGlobsLocked(r.Version, r.Received, r.Gate)
	}
	c.e.metrics.Add(metrics.Valid, r.Valid, c.server.URI, r.TypeURL)
	c.e.metrics.Add(metrics.Invalid, r.Invalid, c.server.URI, r.TypeURL)
	// The response's notices are all made: let the gate, and the notices
	// already run, go.
	c.e.noticeGate, c.e.notices = nil, nil
}

// applyResourceErrorLocked applies an xRFC TP3 entry. NOT_FOUND and
// PERMISSION_DENIED are data errors, subject to the server's error
// policy; other codes are transient and never drop the cache (A88).
func (c *channel) applyResourceErrorLocked(r *wire.Response, re wire.ResourceError) {
	e := c.e
	_, en := e.lookupEntryLocked(r.TypeURL, re.Key)
	if en == nil {
		return
	}
	c.coverLocked(en)
	code := codes.Code(re.Code)
	err := e.newError(KindServerReported, code, en, c, fmt.Errorf("xDS server reported %s: %s", code, re.Message))
	e.onDataErrorLocked(en, err, features.ReasonServerReported, r.Version, c, r.Gate)
}

// applyDeletionsLocked handles SotW deletion for all-resources-required
// types (LDS, CDS): a cached resource missing from a response of the
// authority's active server has been deleted. The entries the response
// marked as named (coverLocked) were moved to the front of their
// authority's marked order, so while no authority changed servers the
// others are behind them, and only those are looked at: a walk of every
// entry of a large cache would be the longest hold of the lock once a
// response named fewer entries than were watched.
func (c *channel) applyDeletionsLocked(r *wire.Response) {
	ordered := c.applyingActive == c.e.activeGen
	for _, a := range c.authsSortedLocked() {
		if a.active() != c {
			continue
		}
		if !ordered {
			for _, en := range a.resources[r.TypeURL] {
				c.maybeDeletedLocked(r, en)
			}
			continue
		}
		o := a.marked[r.TypeURL]
		if o == nil {
			continue
		}
		for en := o.back; en != nil && en.coveredBy != c.applyingMark; {
			prev := en.prevMarked
			c.maybeDeletedLocked(r, en)
			en = prev
		}
	}
}

// maybeDeletedLocked reports en deleted unless r marked it, it holds no
// value, or r named it after all: its authority moved to this server
// while r was applied (A71), or the entry is newer than its part.
func (c *channel) maybeDeletedLocked(r *wire.Response, en *entry) {
	if en.coveredBy == c.applyingMark || en.value == nil || en.state == StateDoesNotExist || r.Named(en.name) {
		return
	}
	e := c.e
	err := e.newError(KindDeleted, codes.NotFound, en, c, errors.New("resource deleted by the xDS server"))
	e.onDataErrorLocked(en, err, features.ReasonDeletion, r.Version, c, r.Gate)
}

// applyRemovalLocked handles a name an incremental response removed: a
// deletion, for any type, by A88's rules (kept and reported as ambient
// unless the server's features drop it); for a resource never received,
// the server's word that it does not exist.
func (c *channel) applyRemovalLocked(r *wire.Response, key string) {
	e := c.e
	a, en := e.lookupEntryLocked(r.TypeURL, key)
	if en == nil {
		c.applyMemberLocked(r.TypeURL, key, nil, "", nil)
		return
	}
	if a.active() != c || en.state == StateDoesNotExist {
		return
	}
	err := e.newError(KindDeleted, codes.NotFound, en, c, errors.New("resource deleted by the xDS server"))
	e.onDataErrorLocked(en, err, features.ReasonDeletion, r.Version, c, r.Gate)
}

// unreadableLocked tells the watchers of a NACKed, unreadable response's
// type why their server's updates are not arriving. Nothing is dropped.
func (c *channel) unreadableLocked(r *wire.Response) {
	e := c.e
	e.metrics.Add(metrics.Unreadable, 1, c.server.URI, r.TypeURL)
	if r.Type == nil {
		return
	}
	e.metrics.Add(metrics.Invalid, 1, c.server.URI, r.TypeURL)
	for _, a := range c.authsSortedLocked() {
		if a.active() != c {
			continue
		}
		for _, en := range a.resources[r.TypeURL] {
			if en.orphaned {
				continue
			}
			err := e.newError(KindNACK, codes.InvalidArgument, en, c, r.Unreadable)
			e.onUnattributedNACKLocked(en, err, r.Gate)
		}
	}
}
